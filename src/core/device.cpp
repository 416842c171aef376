// device.cpp — the thread's device and the memory calls of core/device.h.
// The CUDA runtime calls are behind core/device_runtime.h.
#include "core/device.h"

#include <cstdlib>
#include <cstring>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "core/check.h"
#include "core/device_runtime.h"

namespace ss {

namespace {

struct ThreadDevice {
    bool set = false;
    Device device = Device::cpu;
    int gpu = 0;
    void* stream = nullptr;
};
thread_local ThreadDevice t_device;

ThreadDevice& this_thread() {
    // A thread that never chose takes SHARDSCOPE_DEVICE. If that cannot be honoured (a bad
    // name, no GPU) every call throws, never a quiet fall-back to the CPU: a GPU check that
    // ran on the CPU would pass without checking anything.
    if (!t_device.set) set_current_device(default_device(), 0);
    return t_device;
}

}  // namespace

Device parse_device(const std::string& name) {
    if (name == "cpu") return Device::cpu;
    if (name == "cuda" || name == "gpu") return Device::cuda;
    SS_FAIL("device '" << name << "' is not a device; use cpu or cuda");
}

const char* device_name(Device d) { return d == Device::cuda ? "cuda" : "cpu"; }

Device default_device() {
    const char* env = std::getenv("SHARDSCOPE_DEVICE");
    if (env == nullptr || *env == '\0') return Device::cpu;
    try {
        return parse_device(env);
    } catch (const Error&) {
        SS_FAIL("SHARDSCOPE_DEVICE=" << env << " is not a device; set it to cpu or cuda, or unset it");
    }
}

Device device_or_default(const std::string& name) { return name.empty() ? default_device() : parse_device(name); }

bool cuda_built() {
#ifdef SHARDSCOPE_HAVE_CUDA
    return true;
#else
    return false;
#endif
}

int cuda_device_count() { return detail::cuda_count(); }
std::string cuda_device_name(int gpu) { return detail::cuda_name(gpu); }

void require_cuda() {
    const std::string why = detail::cuda_unusable_reason();
    SS_CHECK(why.empty(), why);
}

Device current_device() { return this_thread().device; }
int current_gpu() { return this_thread().gpu; }
void* current_stream() { return this_thread().device == Device::cuda ? t_device.stream : nullptr; }

void set_current_device(Device d, int gpu) {
    if (d == Device::cuda) {  // checked first: a failure leaves the thread as it was
        require_cuda();
        const int n = detail::cuda_count();
        SS_CHECK(gpu >= 0 && gpu < n, "GPU " << gpu << " does not exist: this machine has " << n);
        t_device.stream = detail::cuda_select(gpu);
    }
    t_device.set = true;
    t_device.device = d;
    t_device.gpu = gpu;
}

void keep_host_memory() {
#if defined(__GLIBC__)
    mallopt(M_ARENA_MAX, 1);                // every thread allocates from the main (brk) heap, which trims by
    mallopt(M_TRIM_THRESHOLD, 1 << 30);     // this threshold only, unlike a thread arena's heaps;
    mallopt(M_MMAP_THRESHOLD, 32 << 20);    // and chunks below 32 MiB come from that heap, not from mmap
#endif
}

void* device_alloc(Device d, size_t bytes) {
    const size_t rounded = bytes == 0 ? 64 : (bytes + 63) / 64 * 64;
    if (d == Device::cuda) return detail::cuda_alloc(rounded);
    void* p = std::aligned_alloc(64, rounded);
    SS_CHECK(p != nullptr, "out of memory allocating " << bytes << " bytes");
    return p;
}

void device_free(Device d, void* p, size_t bytes) {
    if (p == nullptr) return;
    if (d == Device::cuda)
        detail::cuda_free(p, bytes == 0 ? 64 : (bytes + 63) / 64 * 64);
    else
        std::free(p);
}

void device_zero(Device d, void* p, size_t bytes) {
    if (d == Device::cuda && current_device() == Device::cuda)
        detail::cuda_zero(p, bytes, t_device.stream);
    else
        std::memset(p, 0, bytes);  // managed memory is host memory too
}

void device_copy(void* dst, const void* src, size_t bytes) {
    if (bytes == 0) return;
    if (current_device() == Device::cuda)
        detail::cuda_copy(dst, src, bytes, t_device.stream);
    else
        std::memcpy(dst, src, bytes);
}

void device_sync() {
    if (current_device() == Device::cuda) detail::cuda_sync(t_device.stream);
}

DeviceScope::DeviceScope(Device d, int gpu) : before_(current_device()), before_gpu_(current_gpu()) {
    set_current_device(d, gpu);
}

DeviceScope::~DeviceScope() {
    try {
        set_current_device(before_, before_gpu_);
    } catch (...) {  // restoring the device it had before cannot fail in practice; never throw from here
    }
}

}  // namespace ss
