// blas.h — how many threads OpenBLAS may use.
//
// With N rank threads in one process each rank must keep BLAS to one thread,
// or the ranks fight over the cores. One rank alone may use more.
#pragma once

namespace ss::cpu {

/// Sets the number of OpenBLAS threads for the whole process.
void set_blas_threads(int n);

}  // namespace ss::cpu
