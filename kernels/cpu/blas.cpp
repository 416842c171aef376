#include "kernels/cpu/blas.h"

#include <cblas.h>

namespace ss::cpu {

void set_blas_threads(int n) { openblas_set_num_threads(n < 1 ? 1 : n); }

}  // namespace ss::cpu
