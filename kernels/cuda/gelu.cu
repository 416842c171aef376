// gelu.cu — GELU, tanh form, on the GPU (twin of kernels/cpu/gelu.cpp).
//
// The same sigmoid form as the CPU's fast path (gelu.cpp explains it):
//
//   gelu(x) = x s,   s = 1 / (1 + e^(-2u)),   u = sqrt(2/pi) (x + 0.044715 x^3)
//   gelu'(x) = s + x 2 u' s (1 - s),          u' = sqrt(2/pi) (1 + 3 0.044715 x^2)
//
// with 1 - s = e^(-2u) s (no cancellation for x << 0). expf here is CUDA's
// full-precision expf (2 ulp, CUDA C Programming Guide, "Mathematical
// Functions"; we do not build with --use_fast_math), the CPU's exp_fast is
// within 1 ulp: the two agree to a few ulp.
#include "kernels/cuda/gelu.h"

#include "kernels/cuda/check.h"
#include "kernels/cuda/reduce.cuh"

namespace ss::cuda {

namespace {

constexpr float kSqrt2OverPi = 0.7978845608028654f;  // sqrt(2/pi)
constexpr float kCubic = 0.044715f;

__global__ void gelu_forward_kernel(float* out, const float* inp, long n) {
    const long i = blockIdx.x * long(blockDim.x) + threadIdx.x;
    if (i >= n) return;
    const float x = inp[i];
    const float u = kSqrt2OverPi * (x + kCubic * x * x * x);
    out[i] = x / (1.0f + expf(-2.0f * u));
}

__global__ void gelu_backward_kernel(float* dinp, const float* inp, const float* dout, long n) {
    const long i = blockIdx.x * long(blockDim.x) + threadIdx.x;
    if (i >= n) return;
    const float x = inp[i];
    const float u = kSqrt2OverPi * (x + kCubic * x * x * x);
    const float du = kSqrt2OverPi * (1.0f + 3.0f * kCubic * x * x);
    const float e = expf(-2.0f * u);
    const float s = 1.0f / (1.0f + e);  // sigmoid(2u)
    const float one_minus_s = e * s;
    dinp[i] += (s + x * 2.0f * du * s * one_minus_s) * dout[i];
}

}  // namespace

void gelu_forward(float* out, const float* inp, long n, cudaStream_t stream) {
    if (n == 0) return;
    gelu_forward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(out, inp, n);
    SS_CUDA_CHECK_LAUNCH("gelu_forward_kernel");
}

void gelu_backward(float* dinp, const float* inp, const float* dout, long n, cudaStream_t stream) {
    if (n == 0) return;
    gelu_backward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dinp, inp, dout, n);
    SS_CUDA_CHECK_LAUNCH("gelu_backward_kernel");
}

}  // namespace ss::cuda
