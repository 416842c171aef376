// convert.cu — fp32 <-> bf16 on the GPU (twins of core/dtype.h). The rounding
// is written out as the host's is, on the bits, rather than through
// __float2bfloat16_rn, so that the two agree bit for bit by construction
// (NaN: quieted with the same payload bit).
#include "kernels/cuda/convert.h"

#include "kernels/cuda/check.h"
#include "kernels/cuda/reduce.cuh"

namespace ss::cuda {

namespace {

__global__ void f32_to_bf16_kernel(uint16_t* dst, const float* src, long n) {
    const long i = blockIdx.x * long(blockDim.x) + threadIdx.x;
    if (i >= n) return;
    uint32_t u = __float_as_uint(src[i]);
    if ((u & 0x7fffffffu) > 0x7f800000u) {  // NaN stays a (quiet) NaN
        dst[i] = uint16_t((u >> 16) | 0x40);
        return;
    }
    u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even
    dst[i] = uint16_t(u >> 16);
}

__global__ void bf16_to_f32_kernel(float* dst, const uint16_t* src, long n) {
    const long i = blockIdx.x * long(blockDim.x) + threadIdx.x;
    if (i < n) dst[i] = __uint_as_float(uint32_t(src[i]) << 16);
}

}  // namespace

void f32_to_bf16(uint16_t* dst, const float* src, long n, cudaStream_t stream) {
    if (n == 0) return;
    f32_to_bf16_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dst, src, n);
    SS_CUDA_CHECK_LAUNCH("f32_to_bf16_kernel");
}

void bf16_to_f32(float* dst, const uint16_t* src, long n, cudaStream_t stream) {
    if (n == 0) return;
    bf16_to_f32_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dst, src, n);
    SS_CUDA_CHECK_LAUNCH("bf16_to_f32_kernel");
}

}  // namespace ss::cuda
