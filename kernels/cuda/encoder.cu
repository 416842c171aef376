// encoder.cu — token + position embedding on the GPU (twin of kernels/cpu/encoder.cpp).
//
// Forward: one thread per output element (b, t, c); consecutive threads read
// consecutive c of the same wte and wpe rows, so the loads coalesce.
//
// Backward, the two gradients differ in who may collide:
//   dwpe[t, c] = sum over b of dout[b, t, c]: one thread per (t, c) loops over
//     b — no two threads write the same element, and the sum's order is fixed.
//   dwte[v, c] += dout[b, t, c] for every (b, t) whose token is v: a token may
//     appear many times in a batch, and which (b, t) hold it is data, so the
//     threads of (b, t, c) add with atomicAdd. The order of those adds is not
//     fixed, so dwte may differ by rounding from run to run (as PyTorch's
//     embedding backward on the GPU; llm.c sorts by token to avoid it).
#include "kernels/cuda/encoder.h"

#include "kernels/cuda/check.h"
#include "kernels/cuda/reduce.cuh"

namespace ss::cuda {

namespace {

__global__ void encoder_forward_kernel(float* out, const int* tokens, const float* wte, const float* wpe, int B,
                                       int T, int C) {
    const long i = blockIdx.x * long(blockDim.x) + threadIdx.x;
    if (i >= long(B) * T * C) return;
    const int c = int(i % C);
    const long bt = i / C;  // the token's row, b*T + t
    const int t = int(bt % T);
    out[i] = wte[long(tokens[bt]) * C + c] + wpe[long(t) * C + c];
}

__global__ void encoder_backward_wte_kernel(float* dwte, const float* dout, const int* tokens, int B, int T, int C) {
    const long i = blockIdx.x * long(blockDim.x) + threadIdx.x;
    if (i >= long(B) * T * C) return;
    const int c = int(i % C);
    const long bt = i / C;
    atomicAdd(&dwte[long(tokens[bt]) * C + c], dout[i]);
}

__global__ void encoder_backward_wpe_kernel(float* dwpe, const float* dout, int B, int T, int C) {
    const long i = blockIdx.x * long(blockDim.x) + threadIdx.x;  // i = t*C + c
    if (i >= long(T) * C) return;
    float acc = dwpe[i];
    for (int b = 0; b < B; b++) acc += dout[long(b) * T * C + i];
    dwpe[i] = acc;
}

}  // namespace

void encoder_forward(float* out, const int* tokens, const float* wte, const float* wpe, int B, int T, int C,
                     cudaStream_t stream) {
    const long n = long(B) * T * C;
    if (n == 0) return;
    encoder_forward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(out, tokens, wte, wpe, B, T, C);
    SS_CUDA_CHECK_LAUNCH("encoder_forward_kernel");
}

void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* tokens, int B, int T, int C,
                      cudaStream_t stream) {
    const long n = long(B) * T * C;
    if (n == 0) return;
    if (dwte != nullptr) {
        encoder_backward_wte_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dwte, dout, tokens, B, T, C);
        SS_CUDA_CHECK_LAUNCH("encoder_backward_wte_kernel");
    }
    if (dwpe != nullptr) {
        encoder_backward_wpe_kernel<<<blocks_for(long(T) * C), kThreads, 0, stream>>>(dwpe, dout, B, T, C);
        SS_CUDA_CHECK_LAUNCH("encoder_backward_wpe_kernel");
    }
}

}  // namespace ss::cuda
