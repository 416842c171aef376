// matmul.h — the linear layer y = x W + b on the GPU through cuBLAS, forward and backward.
// The twin of kernels/cpu/matmul.h: same arguments, same row-major layouts,
// device pointers, plus the cuBLAS handle and the stream.
//
// Dimensions: N = rows (B*T tokens), C = input features, OC = output features.
// W is [C, OC] (in, out) as HF GPT-2's Conv1D stores it, row-major.
//
//   forward:   out[N,OC]  = inp[N,C] @ W[C,OC] + b[OC]
//   backward:  dinp[N,C]  += dout[N,OC] @ W^T
//              dW[C,OC]   += inp^T @ dout
//              db[OC]     += sum over rows of dout
//
// Two precisions, both accumulating in fp32 (CUBLAS_COMPUTE_32F):
//   fp32   fp32 in and out, TF32 off: the products are exact fp32 products,
//          as the CPU's sgemm (see gemm() for how that is enforced);
//   bf16   bf16 activations and weights in, bf16 out and dinp (tensor cores),
//          while dW and db accumulate in fp32, as mixed-precision training
//          keeps its gradients (Micikevicius et al. 2018, section 3).
// bf16 buffers are raw bf16 bits (uint16_t), as core/dtype.h stores them.
//
// A cublasHandle_t is not thread-safe: each rank thread creates its own
// (blas_create) and uses it for every call.
#pragma once

#include <cstdint>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "core/dtype.h"

namespace ss::cuda {

/// Creates a cuBLAS handle for these kernels (default math mode: no TF32 unless a call asks for it).
cublasHandle_t blas_create();
/// Destroys a handle made by blas_create (null is ignored).
void blas_destroy(cublasHandle_t blas);

/// Lets this thread's fp32 GEMMs take bf16 tensor-core products with fp32 sums
/// (CUBLAS_COMPUTE_32F_FAST_16BF) instead of exact fp32 products: the matmuls
/// of `--dtype bf16 --device cuda`. Off by default.
void set_fp32_gemm_bf16_products(bool on);
/// Whether this thread asked for bf16 products (set_fp32_gemm_bf16_products); attention.cu's GEMMs follow it too.
bool fp32_gemm_bf16_products();

/// Row-major GEMM with cblas_sgemm's arguments, through cublasGemmEx on @p stream:
/// Cm[M,N] = alpha op(A) op(B) + beta Cm, op = transpose when trans_a / trans_b.
/// A and B are @p ab_type (f32 or bf16), Cm is @p c_type; the sum is fp32 in both cases
/// (fp32 inputs: exact fp32 products unless set_fp32_gemm_bf16_products(true)).
void gemm(cublasHandle_t blas, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const void* A, long lda,
          const void* B, long ldb, float beta, void* Cm, long ldc, DType ab_type, DType c_type, cudaStream_t stream);

/// out = inp @ weight + bias (bias may be null), fp32; on @p stream.
void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int C, int OC,
                    cublasHandle_t blas, cudaStream_t stream);
/// Accumulates (+=) into dinp, dweight, dbias, fp32; any of them may be null to skip it; on @p stream.
void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int N, int C, int OC, cublasHandle_t blas, cudaStream_t stream);

/// out = inp @ weight + bias in bf16 (bias may be null), fp32 accumulation; on @p stream.
void matmul_forward_bf16(uint16_t* out, const uint16_t* inp, const uint16_t* weight, const uint16_t* bias, int N,
                         int C, int OC, cublasHandle_t blas, cudaStream_t stream);
/// Accumulates into dinp (bf16) and dweight, dbias (fp32) from bf16 dout, inp, weight; any output may be null.
void matmul_backward_bf16(uint16_t* dinp, float* dweight, float* dbias, const uint16_t* dout, const uint16_t* inp,
                          const uint16_t* weight, int N, int C, int OC, cublasHandle_t blas, cudaStream_t stream);

}  // namespace ss::cuda
