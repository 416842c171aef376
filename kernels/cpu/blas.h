// blas.h — how many threads OpenBLAS may use, and which of its kernels it runs.
//
// With N rank threads in one process each rank must keep BLAS to one thread,
// or the ranks fight over the cores. One rank alone may use more.
//
// OpenBLAS picks its kernels (its "core") for the CPU when the library loads.
// A CPU newer than the library falls back to the generic Prescott (SSE3)
// kernels: OpenBLAS 0.3.21 (Debian 12) does not know Intel's AVX-512 + AMX
// Xeons (Sapphire Rapids), and there sgemm runs about 2x slower than with
// OPENBLAS_CORETYPE=SkylakeX. The variable is read at load time only, so it
// must be set before the program starts (docs/performance.md).
#pragma once

#include <string>

namespace ss::cpu {

/// Sets the number of OpenBLAS threads for the whole process.
void set_blas_threads(int n);

/// The OpenBLAS kernel set in use: openblas_get_corename() ("Prescott", "SkylakeX", "Haswell", "Zen", ...).
std::string blas_core_name();

/// One line of advice when OpenBLAS runs its generic Prescott kernels on a CPU
/// that has AVX-512 (set OPENBLAS_CORETYPE=SkylakeX) or AVX2 (Haswell); empty otherwise.
std::string blas_core_advice();

}  // namespace ss::cpu
