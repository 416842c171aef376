#!/bin/sh
# blas_core.sh CORE TEST [ARGS...] — run a test with OpenBLAS's kernels for CORE.
#
# Debian's OpenBLAS picks its sgemm kernels at run time by CPU (DYNAMIC_ARCH):
# an AVX2-only Zen 3 runs sgemm_kernel_ZEN, an AVX-512 Xeon SkylakeX's, and a
# CPU it does not know (this project's CI machine, a recent Xeon, among them)
# the SSE3 Prescott kernels. Each blocks and sums sgemm in its own order, so
# every equivalence suite must hold with each. OPENBLAS_CORETYPE forces one:
# this runs TEST with CORE's kernels where the CPU can run them (Haswell and
# Zen need AVX2 + FMA, SkylakeX AVX-512), and is skipped (exit 77) elsewhere.
core=$1; shift
need=avx2
[ "$core" = SkylakeX ] && need=avx512f
if ! grep -qw "$need" /proc/cpuinfo || ! grep -qw fma /proc/cpuinfo; then
  echo "blas_core.sh: this CPU has no $need + fma: OpenBLAS's $core kernels cannot run here (skipped)"
  exit 77
fi
OPENBLAS_CORETYPE=$core exec "$@"
