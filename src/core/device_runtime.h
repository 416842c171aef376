// device_runtime.h — the CUDA side of core/device.h, internal to src/core.
//
// device.cpp keeps the thread's device and calls these for Device::cuda.
// device_runtime_cuda.cpp implements them with the CUDA runtime in a build
// with CUDA; device_runtime_nocuda.cpp stands in without it (nothing reaches
// them there: require_cuda() says why first).
#pragma once

#include <cstddef>
#include <string>

namespace ss::detail {

/// GPUs the CUDA runtime sees (0 on any error).
int cuda_count();
/// The name of GPU @p gpu ("" on any error).
std::string cuda_name(int gpu);
/// Why --device cuda cannot run in this process ("" when it can).
std::string cuda_unusable_reason();
/// cudaSetDevice(@p gpu) on this thread; returns this thread's stream on it (created on first use).
void* cuda_select(int gpu);
/// Managed memory (cudaMallocManaged), reused from a cache of freed blocks of the same size.
void* cuda_alloc(size_t bytes);
/// Back to the cache.
void cuda_free(void* p, size_t bytes);
/// cudaMemsetAsync on @p stream, then waits for it.
void cuda_zero(void* p, size_t bytes, void* stream);
/// cudaMemcpyAsync (cudaMemcpyDefault) on @p stream, then waits for it.
void cuda_copy(void* dst, const void* src, size_t bytes, void* stream);
/// cudaStreamSynchronize(@p stream).
void cuda_sync(void* stream);

}  // namespace ss::detail
