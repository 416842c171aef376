// matmul.h — the linear layer, y = x W + b, forward and backward.
//
// Dimensions: N = rows (B*T tokens), C = input features, OC = output features.
// W is stored as HF GPT-2's Conv1D stores it: [C, OC] (in, out), row-major.
//
//   forward:   out[N,OC]  = inp[N,C] @ W[C,OC] + b[OC]
//   backward:  dinp[N,C]  += dout[N,OC] @ W^T
//              dW[C,OC]   += inp^T @ dout
//              db[OC]     += sum over rows of dout
//
// The fast versions multiply on the register tiles of gemm.h (lm_head.cpp's
// too) where the build has AVX2, else on OpenBLAS sgemm (kMatmulOnTiles); the
// *_reference versions are plain loops kept for the tests and for reading.
#pragma once

namespace ss::cpu {

/// True where the build has AVX2 (Release builds: -march=native or x86-64-v3):
/// matmul and lm_head multiply on gemm.h's register tiles. False in a build for
/// the x86-64 baseline (the sanitizer builds, RelWithDebInfo without -march),
/// where a tile's vector is two SSE halves and OpenBLAS, which picks its
/// kernels at run time, is several times faster: there they call sgemm (and a
/// sanitized tile GEMM made the AddressSanitizer suite 3x slower, past its timeouts).
#if defined(__AVX2__)
constexpr bool kMatmulOnTiles = true;
#else
constexpr bool kMatmulOnTiles = false;
#endif

/// out = inp @ weight + bias (bias may be null).
void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int C, int OC);
/// matmul_forward with OC = 3 Cq written as two planes: out[N,Cq] = inp @ weight[:, :Cq] + bias[:Cq],
/// then out + N Cq [N,2Cq] = inp @ weight[:, Cq:] + bias[Cq:] (c_attn's q, then k|v: model/attention.h).
/// Each element is the same dot product as matmul_forward's, started the same way: the same bits.
void matmul_forward_planar(float* out, const float* inp, const float* weight, const float* bias, int N, int C,
                           int Cq);
/// Rows of [q | k | v] (3Cq wide, N of them) as the two planes of matmul_forward_planar.
void qkv_to_planes(float* planes, const float* qkv, int N, int Cq);
/// Accumulates (+=) into dinp, dweight, dbias; any of them may be null to skip it. With
/// @p dinp_overwrite, dinp = dout W^T instead, the bits += gives on a zero-filled dinp
/// (the tiles start from +0 where they would have read it; sgemm takes beta = 0).
void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int N, int C, int OC, bool dinp_overwrite = false);

/// Plain-loop twin of matmul_forward, for tests.
void matmul_forward_reference(float* out, const float* inp, const float* weight, const float* bias, int N, int C,
                              int OC);
/// Plain-loop twin of matmul_backward, for tests.
void matmul_backward_reference(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                               const float* weight, int N, int C, int OC);

}  // namespace ss::cpu
