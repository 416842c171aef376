// attention.h — causal multi-head self-attention on the GPU (Vaswani et al. 2017, section 3.2.2).
// The twin of kernels/cpu/attention.h: same arguments, same layouts, device
// pointers, plus the cuBLAS handle and the stream (as matmul.h).
//
// B = batch, T = sequence length, NH = heads, hs = head size, C = NH * hs.
// qkv[B,T,3C] holds each token's [q | k | v], head h at columns [h*hs, (h+1)*hs)
// of each part; out[B,T,C] holds the heads side by side. att[B,NH,T,T] (the
// softmax probabilities, 0 above the diagonal) is saved for backward, which
// accumulates (+=) into dqkv.
//
// The products go to cuBLAS (attention.cu): fp32 in and out, exact fp32
// products unless this thread asked for bf16 ones (set_fp32_gemm_bf16_products
// in matmul.h), as the matmuls. Each call also takes 4*B*T*C (forward) or
// 7*B*T*C (backward) floats of temporary device memory, stream-ordered
// (cudaMallocAsync), on top of att and scratch.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace ss::cuda {

/// Causal attention forward; writes out[B,T,C] and att[B,NH,T,T]; on @p stream.
void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH, cublasHandle_t blas,
                       cudaStream_t stream);
/// Accumulates into dqkv[B,T,3C]. scratch must hold B*NH*T*T floats (overwritten); on @p stream.
void attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv, const float* att, int B,
                        int T, int C, int NH, cublasHandle_t blas, cudaStream_t stream);

}  // namespace ss::cuda
