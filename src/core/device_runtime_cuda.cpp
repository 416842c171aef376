// device_runtime_cuda.cpp — core/device_runtime.h with the CUDA runtime.
//
// Memory is managed (cudaMallocManaged), so host code may read and write it
// too (core/device.h says why). cudaFree synchronises the whole device, which
// would make every rank thread on the GPU wait for all the others at each
// freed activation; so freed blocks go to a cache keyed by their size and the
// next tensor of that size takes one (training allocates the same shapes every
// step). A block is only reused by a later call of some thread; the owner's
// kernels were waited for before its tensor was freed (dispatch.cpp waits for
// every kernel), so no kernel still reads a reused block.
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <sstream>
#include <vector>

#include "core/check.h"
#include "core/device_runtime.h"

namespace ss::detail {

namespace {

#define SS_CORE_CUDA(call)                                                                                  \
    do {                                                                                                   \
        const cudaError_t err_ = (call);                                                                   \
        SS_CHECK(err_ == cudaSuccess, "CUDA error at " << __FILE__ << ":" << __LINE__ << ": " << #call      \
                                                       << " returned " << cudaGetErrorName(err_) << " ("   \
                                                       << cudaGetErrorString(err_) << ")");                \
    } while (0)

// One thread's stream on the GPU it selected; destroyed when the thread ends.
struct ThreadStream {
    int gpu = -1;
    cudaStream_t stream = nullptr;
    ~ThreadStream() {
        if (stream) cudaStreamDestroy(stream);
    }
};
thread_local ThreadStream t_stream;

struct BlockCache {
    std::mutex mu;
    std::multimap<size_t, void*> free_blocks;  // size -> block
};
BlockCache& cache() {
    static BlockCache* c = new BlockCache;  // never destroyed: blocks may be freed during exit
    return *c;
}

}  // namespace

int cuda_count() {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();  // clear the sticky "no driver" error
        return 0;
    }
    return n;
}

std::string cuda_name(int gpu) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, gpu) != cudaSuccess) {
        cudaGetLastError();
        return "";
    }
    return prop.name;
}

std::string cuda_unusable_reason() {
    int n = 0;
    const cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess) {
        cudaGetLastError();
        return std::string("--device cuda: the CUDA runtime finds no usable GPU here (cudaGetDeviceCount: ") +
               cudaGetErrorName(err) + ", " + cudaGetErrorString(err) + "); run on a machine with an NVIDIA GPU "
               "and its driver, or use --device cpu";
    }
    if (n == 0) return "--device cuda: this machine has no CUDA GPU; use --device cpu";
    int concurrent = 0;
    if (cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, 0) == cudaSuccess && !concurrent)
        return "--device cuda: GPU 0 cannot share managed memory with the host while kernels run "
               "(cudaDevAttrConcurrentManagedAccess is 0; e.g. Windows or a pre-Pascal GPU), which ShardScope's "
               "device memory needs; use --device cpu";
    return "";
}

void* cuda_select(int gpu) {
    if (t_stream.stream && t_stream.gpu == gpu) return t_stream.stream;
    SS_CORE_CUDA(cudaSetDevice(gpu));
    if (t_stream.stream) SS_CORE_CUDA(cudaStreamDestroy(t_stream.stream));
    SS_CORE_CUDA(cudaStreamCreateWithFlags(&t_stream.stream, cudaStreamNonBlocking));
    t_stream.gpu = gpu;
    // Kernels' stream-ordered scratch (cudaMallocAsync: attention's per-head copies)
    // comes from the device's default pool, which by default hands its memory back
    // to the driver at every synchronisation, that is after every kernel here
    // (kernels/dispatch.cpp). Keep it, as the managed-block cache keeps ours.
    cudaMemPool_t pool = nullptr;
    SS_CORE_CUDA(cudaDeviceGetDefaultMemPool(&pool, gpu));
    uint64_t keep = UINT64_MAX;
    SS_CORE_CUDA(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
    return t_stream.stream;
}

void* cuda_alloc(size_t bytes) {
    {
        BlockCache& c = cache();
        std::lock_guard<std::mutex> lock(c.mu);
        auto it = c.free_blocks.find(bytes);
        if (it != c.free_blocks.end()) {
            void* p = it->second;
            c.free_blocks.erase(it);
            return p;
        }
    }
    void* p = nullptr;
    const cudaError_t err = cudaMallocManaged(&p, bytes, cudaMemAttachGlobal);
    if (err == cudaErrorMemoryAllocation) {  // give the cached blocks back and try once more
        cudaGetLastError();
        BlockCache& c = cache();
        std::lock_guard<std::mutex> lock(c.mu);
        for (auto& [size, block] : c.free_blocks) cudaFree(block);
        c.free_blocks.clear();
        SS_CORE_CUDA(cudaMallocManaged(&p, bytes, cudaMemAttachGlobal));
        return p;
    }
    SS_CORE_CUDA(err);
    return p;
}

void cuda_free(void* p, size_t bytes) {
    BlockCache& c = cache();
    std::lock_guard<std::mutex> lock(c.mu);
    c.free_blocks.emplace(bytes, p);
}

void cuda_zero(void* p, size_t bytes, void* stream) {
    auto s = static_cast<cudaStream_t>(stream);
    SS_CORE_CUDA(cudaMemsetAsync(p, 0, bytes, s));
    SS_CORE_CUDA(cudaStreamSynchronize(s));
}

void cuda_copy(void* dst, const void* src, size_t bytes, void* stream) {
    auto s = static_cast<cudaStream_t>(stream);
    SS_CORE_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s));
    SS_CORE_CUDA(cudaStreamSynchronize(s));
}

void cuda_sync(void* stream) { SS_CORE_CUDA(cudaStreamSynchronize(static_cast<cudaStream_t>(stream))); }

}  // namespace ss::detail
