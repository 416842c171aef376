// residual.cu — elementwise adds on the GPU (twin of kernels/cpu/residual.cpp):
// one thread per element, nothing to reduce.
#include "kernels/cuda/residual.h"

#include "kernels/cuda/check.h"
#include "kernels/cuda/reduce.cuh"

namespace ss::cuda {

namespace {

__global__ void residual_forward_kernel(float* out, const float* a, const float* b, long n) {
    const long i = blockIdx.x * long(blockDim.x) + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}

__global__ void residual_backward_kernel(float* da, float* db, const float* dout, long n) {
    const long i = blockIdx.x * long(blockDim.x) + threadIdx.x;
    if (i < n) {
        da[i] += dout[i];
        db[i] += dout[i];
    }
}

__global__ void add_inplace_kernel(float* y, const float* x, long n) {
    const long i = blockIdx.x * long(blockDim.x) + threadIdx.x;
    if (i < n) y[i] += x[i];
}

__global__ void add_bias_kernel(float* out, const float* bias, int N, int C) {
    const long i = blockIdx.x * long(blockDim.x) + threadIdx.x;
    if (i < long(N) * C) out[i] += bias[i % C];
}

}  // namespace

void residual_forward(float* out, const float* a, const float* b, long n, cudaStream_t stream) {
    if (n == 0) return;
    residual_forward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(out, a, b, n);
    SS_CUDA_CHECK_LAUNCH("residual_forward_kernel");
}

void residual_backward(float* da, float* db, const float* dout, long n, cudaStream_t stream) {
    if (n == 0) return;
    residual_backward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(da, db, dout, n);
    SS_CUDA_CHECK_LAUNCH("residual_backward_kernel");
}

void add_inplace(float* y, const float* x, long n, cudaStream_t stream) {
    if (n == 0) return;
    add_inplace_kernel<<<blocks_for(n), kThreads, 0, stream>>>(y, x, n);
    SS_CUDA_CHECK_LAUNCH("add_inplace_kernel");
}

void add_bias(float* out, const float* bias, int N, int C, cudaStream_t stream) {
    const long n = long(N) * C;
    if (n == 0) return;
    add_bias_kernel<<<blocks_for(n), kThreads, 0, stream>>>(out, bias, N, C);
    SS_CUDA_CHECK_LAUNCH("add_bias_kernel");
}

}  // namespace ss::cuda
