// convert.h — fp32 <-> bf16 on the GPU, the twins of core/dtype.h's
// f32_to_bf16 / bf16_to_f32 (round to nearest even, NaN stays NaN; bit for
// bit the host's result). Mixed precision runs them once per step over all
// parameters and gradients, so on the GPU they must not go through the host.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace ss::cuda {

/// dst[i] = bf16(src[i]) (raw bf16 bits) for n elements, on @p stream.
void f32_to_bf16(uint16_t* dst, const float* src, long n, cudaStream_t stream);
/// dst[i] = float(src[i]) for n elements, on @p stream.
void bf16_to_f32(float* dst, const uint16_t* src, long n, cudaStream_t stream);

}  // namespace ss::cuda
