// lm_head.cu — the tied output layer on the GPU: three GEMMs, each the same
// product as one of kernels/cpu/lm_head.cpp's (which were cblas_sgemm calls
// with these row-major arguments until 2026-12-02; matmul.cu's gemm() explains
// how they map onto column-major cuBLAS).
#include "kernels/cuda/lm_head.h"

#include "kernels/cuda/matmul.h"

namespace ss::cuda {

void lm_head_forward(float* logits, const float* x, const float* wte, int N, int C, int V, cublasHandle_t blas,
                     cudaStream_t stream) {
    // logits[N,V] = x[N,C] * wte[V,C]^T
    gemm(blas, false, true, N, V, C, 1.0f, x, C, wte, C, 0.0f, logits, V, DType::f32, DType::f32, stream);
}

void lm_head_backward(float* dx, float* dwte, const float* dlogits, const float* x, const float* wte, int N, int C,
                      int V, cublasHandle_t blas, cudaStream_t stream) {
    // dx[N,C] += dlogits[N,V] * wte[V,C]
    if (dx) gemm(blas, false, false, N, C, V, 1.0f, dlogits, V, wte, C, 1.0f, dx, C, DType::f32, DType::f32, stream);
    // dwte[V,C] += dlogits[N,V]^T * x[N,C]
    if (dwte)
        gemm(blas, true, false, V, C, N, 1.0f, dlogits, V, x, C, 1.0f, dwte, C, DType::f32, DType::f32, stream);
}

}  // namespace ss::cuda
