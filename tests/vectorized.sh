#!/bin/sh
# tests/vectorized.sh LIB — the elementwise kernels of LIB (libss_kernels.a) run in vector registers.
#
# The kernels are plain loops that the compiler vectorizes (kernels/cpu/simd.h);
# whether it did depends on the target: until -fno-trapping-math, GCC vectorized
# GELU on AVX-512 and left it scalar on AVX2 (simd.h, 4.). This reads the object
# code of the build it is given (the -march=native build, and the x86-64-v3 one
# of ./scripts/test --portable) and fails for each kernel below that has no
# packed single-precision instruction on a 256- or 512-bit register (v...ps
# %ymm / %zmm). It says nothing of speed: `shardscope bench kernels` measures that.
set -eu
lib="$1"
command -v objdump >/dev/null || { echo "objdump not found (binutils): nothing checked"; exit 77; }
counts=$(objdump -d --no-show-raw-insn -C "$lib" | awk '
  /^[0-9a-f]+ <.*>:$/ { name = $0; sub(/^[0-9a-f]+ </, "", name); sub(/\(.*/, "", name) }
  /v[a-z0-9]+ps[ \t].*%[yz]mm/ { c[name]++ }
  END { for (n in c) print n, c[n] }')
fail=0
for k in gelu_forward gelu_backward layernorm_forward layernorm_backward residual_forward residual_backward \
         add_inplace add_bias add_bias_residual encoder_forward crossentropy_forward crossentropy_backward \
         attention_forward attention_backward adamw_update; do
  n=$(printf '%s\n' "$counts" | awk -v k="ss::cpu::$k" '$1 == k { print $2 }')
  if [ -z "$n" ]; then
    echo "NOT VECTORIZED: ss::cpu::$k has no packed float instruction on ymm/zmm in $lib"
    fail=1
  else
    echo "vectorized: ss::cpu::$k ($n packed instructions)"
  fi
done
exit $fail
