#include "kernels/cpu/blas.h"

#include <cblas.h>

#include <cctype>

namespace ss::cpu {

void set_blas_threads(int n) { openblas_set_num_threads(n < 1 ? 1 : n); }

std::string blas_core_name() {
    const char* name = openblas_get_corename();
    return name ? name : "?";
}

std::string blas_core_advice() {
    std::string core = blas_core_name();
    for (char& c : core) c = char(std::tolower(static_cast<unsigned char>(c)));
    if (core != "prescott") return "";
    const char* better = nullptr;
#if defined(__x86_64__) || defined(__i386__)
    if (__builtin_cpu_supports("avx512f")) better = "SkylakeX";
    else if (__builtin_cpu_supports("avx2")) better = "Haswell";
#endif
    if (!better) return "";
    return std::string("OpenBLAS runs its generic Prescott (SSE3) kernels on a CPU with ") +
           (std::string(better) == "SkylakeX" ? "AVX-512" : "AVX2") +
           " (the library does not know this CPU); start the program with OPENBLAS_CORETYPE=" + better +
           " for its faster kernels (chosen when OpenBLAS loads; docs/performance.md)";
}

}  // namespace ss::cpu
