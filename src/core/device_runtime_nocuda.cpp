// device_runtime_nocuda.cpp — core/device_runtime.h in a build without CUDA.
#include "core/check.h"
#include "core/device_runtime.h"

namespace ss::detail {

namespace {
[[noreturn]] void no_cuda() { SS_FAIL(cuda_unusable_reason()); }
}  // namespace

int cuda_count() { return 0; }
std::string cuda_name(int) { return ""; }
std::string cuda_unusable_reason() {
    return "--device cuda: this build has no CUDA (CMake did not find nvcc, or SHARDSCOPE_CUDA=OFF, or a "
           "sanitizer build): install the CUDA toolkit and rebuild with -DSHARDSCOPE_CUDA=ON, or use --device cpu";
}
void* cuda_select(int) { no_cuda(); }
void* cuda_alloc(size_t) { no_cuda(); }
void cuda_free(void*, size_t) { no_cuda(); }
void cuda_zero(void*, size_t, void*) { no_cuda(); }
void cuda_copy(void*, const void*, size_t, void*) { no_cuda(); }
void cuda_sync(void*) { no_cuda(); }

}  // namespace ss::detail
