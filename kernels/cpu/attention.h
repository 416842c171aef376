// attention.h — causal multi-head self-attention (Vaswani et al. 2017, section 3.2.2).
//
// B = batch, T = sequence length, NH = heads, hs = head size, C = NH * hs.
// The input is the c_attn output, one row per token laid out [q | k | v], each
// C wide, head h owning columns [h*hs, (h+1)*hs) of each part:
//
//   qkv[B,T,3C] -> per head: att = softmax(q k^T / sqrt(hs) + causal mask)   [T,T]
//                            out = att v                                     [T,hs]
//   out[B,T,C] holds the heads side by side (head h at columns h*hs).
//
// att[B,NH,T,T] (the softmax probabilities) is saved for backward. Backward
// accumulates (+=) into dqkv, or overwrites it. Under tensor parallelism NH
// and C are the local head count and width: the same kernel runs on a rank's heads.
#pragma once

namespace ss::cpu {

/// Causal attention forward; writes out[B,T,C] and att[B,NH,T,T].
void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH);
/// Accumulates into dqkv[B,T,3C], or with @p overwrite writes it (every element, the same bits
/// as accumulating into zeros: a fresh buffer needs no zero-fill). scratch: B*NH*T*T floats of
/// workspace, overwritten, its contents afterwards unspecified (this CPU kernel reuses its first
/// T*T for every head; the reference and the CUDA kernel keep each head's dS there).
void attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv, const float* att, int B,
                        int T, int C, int NH, bool overwrite = false);

/// Plain-loop twin of attention_forward, for tests.
void attention_forward_reference(float* out, float* att, const float* qkv, int B, int T, int C, int NH);
/// Plain-loop twin of attention_backward, for tests.
void attention_backward_reference(float* dqkv, float* scratch, const float* dout, const float* qkv, const float* att,
                                  int B, int T, int C, int NH);

}  // namespace ss::cpu
