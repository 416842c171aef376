// lm_head.h — GPT-2's output layer on the GPU, tied to the token embedding (Press & Wolf 2017).
// The twin of kernels/cpu/lm_head.h: same arguments, device pointers, the
// cuBLAS handle and the stream. fp32 (TF32 off, as matmul.h's fp32 path).
//
//   forward:   logits[N,V] = x[N,C] @ wte^T
//   backward:  dx[N,C]   += dlogits @ wte
//              dwte[V,C] += dlogits^T @ x
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace ss::cuda {

/// logits[N,V] = x[N,C] @ wte[V,C]^T; on @p stream.
void lm_head_forward(float* logits, const float* x, const float* wte, int N, int C, int V, cublasHandle_t blas,
                     cudaStream_t stream);
/// Accumulates dx += dlogits @ wte and dwte += dlogits^T @ x (either may be null); on @p stream.
void lm_head_backward(float* dx, float* dwte, const float* dlogits, const float* x, const float* wte, int N, int C,
                      int V, cublasHandle_t blas, cudaStream_t stream);

}  // namespace ss::cuda
