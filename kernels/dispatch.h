// dispatch.h — each kernel on the calling rank's device (core/device.h): the
// CPU kernel of kernels/cpu, or its CUDA twin in kernels/cuda.
//
// Same names and arguments as kernels/cpu, so the model reads the same on
// both devices (model/layers.cpp calls kern::layernorm_forward(...)). On the
// GPU every call runs on the rank thread's stream, with a cuBLAS handle of
// that thread's own, and returns once the kernel is done: host code may then
// read the result (managed memory, core/device.h). Token ids and targets are
// copied to GPU memory first, so callers may pass ordinary host arrays.
//
// The kernels that have no CUDA twin yet (the vocabulary-parallel loss of
// tensor parallelism, ring attention's blocks, the position embedding of a
// sequence shard) stay in kernels/cpu: the model calls them as cpu::..., and
// on the GPU they run on the host over managed memory, correct but slow.
//
// Precision on the GPU: fp32 GEMMs are exact fp32 products (TF32 off; see
// kernels/cuda/matmul.cu) unless set_bf16_matmuls(true) (`--dtype bf16 --device
// cuda`): then cuBLAS rounds the GEMM inputs to bf16 for the tensor cores and
// sums in fp32 (CUBLAS_COMPUTE_32F_FAST_16BF), the mixed-precision speed-up.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/adamw.h"

namespace ss::kern {

/// Lets this thread's fp32 GEMMs on the GPU take bf16 tensor-core products (fp32 sums); no effect on the CPU.
void set_bf16_matmuls(bool on);
/// What set_bf16_matmuls set on this thread (false by default).
bool bf16_matmuls();

/// x[b,t] = wte[tokens[b,t]] + wpe[t]  (kernels/cpu/encoder.h).
void encoder_forward(float* out, const int* tokens, const float* wte, const float* wpe, int B, int T, int C);
/// dwte[tokens[b,t]] += dout[b,t]; dwpe[t] += dout[b,t].
void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* tokens, int B, int T, int C);
/// out = layernorm(inp) * weight + bias; writes mean[N], rstd[N] (kernels/cpu/layernorm.h).
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int N, int C);
/// Accumulates into dinp, dweight, dbias.
void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int N, int C);
/// out[N,OC] = inp[N,C] @ weight[C,OC] + bias (kernels/cpu/matmul.h).
void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int C, int OC);
/// matmul_forward with OC = 3 Cq, written as the q and k|v planes (kernels/cpu/matmul.h:
/// matmul_forward_planar; model/attention.h, Attention::planar).
void matmul_forward_planar(float* out, const float* inp, const float* weight, const float* bias, int N, int C,
                           int Cq);
/// How a backward kernel writes its input gradient dinp.
enum class Grad {
    accumulate,  ///< dinp += the gradient (the buffer holds earlier contributions, or zeros)
    overwrite,   ///< dinp = the gradient: a fresh scratch buffer needs no zero-fill first
};
/// Accumulates into dweight, dbias and (Grad::accumulate) dinp, or writes dinp (Grad::overwrite,
/// the same bits as accumulating into zeros); any pointer may be null.
void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int N, int C, int OC, Grad dinp_mode = Grad::accumulate);
/// Causal self-attention over qkv[B,T,3C]: out[B,T,C], att[B,NH,T,T] (kernels/cpu/attention.h).
void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH);
/// Accumulates into dqkv, or writes it (Grad::overwrite, the same bits as accumulating into zeros);
/// scratch holds B*NH*T*T floats.
void attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv, const float* att, int B,
                        int T, int C, int NH, Grad mode = Grad::accumulate);
/// out = gelu(inp), tanh approximation (kernels/cpu/gelu.h).
void gelu_forward(float* out, const float* inp, long n);
/// dinp += gelu'(inp) * dout, or dinp = 0 + gelu'(inp) * dout with Grad::overwrite (the same bits).
void gelu_backward(float* dinp, const float* inp, const float* dout, long n, Grad mode = Grad::accumulate);
/// y += x (kernels/cpu/residual.h).
void add_inplace(float* y, const float* x, long n);
/// out[n, c] += bias[c] for N rows of C.
void add_bias(float* out, const float* bias, int N, int C);
/// out[n, c] = (out[n, c] + bias[c]) + x[n, c]: add_bias then add_inplace(out, x), one pass on the CPU.
void add_bias_residual(float* out, const float* bias, const float* x, int N, int C);
/// logits[N,V] = x[N,C] @ wte[V,C]^T (kernels/cpu/lm_head.h).
void lm_head_forward(float* logits, const float* x, const float* wte, int N, int C, int V);
/// Accumulates dx += dlogits @ wte and dwte += dlogits^T @ x (either may be null).
void lm_head_backward(float* dx, float* dwte, const float* dlogits, const float* x, const float* wte, int N, int C,
                      int V);
/// Softmax cross-entropy of N rows of Vp logits over their first V (the words; the rest is
/// vocabulary padding): losses[N], probs[N,Vp]; returns the mean loss.
float crossentropy_forward(float* losses, float* probs, const float* logits, const int* targets, int N, int V,
                           int Vp);
/// Accumulates into dlogits' V word columns with d(objective)/d(loss of each row) = dloss.
void crossentropy_backward(float* dlogits, const float* probs, const int* targets, float dloss, int N, int V,
                           int Vp, Grad mode = Grad::accumulate);
/// dst[i] = bf16(src[i]) for n elements (core/dtype.h; on the GPU bit for bit the same).
void f32_to_bf16(uint16_t* dst, const float* src, size_t n);
/// dst[i] = float(src[i]) for n elements.
void bf16_to_f32(float* dst, const uint16_t* src, size_t n);
/// One AdamW step over n elements (kernels/cpu/adamw.h).
void adamw_update(float* params, const float* grads, float* m, float* v, long n, int t, const cpu::AdamWParams& hp);

}  // namespace ss::kern
