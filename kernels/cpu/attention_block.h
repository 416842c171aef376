// attention_block.h — causal attention one key block at a time, with the
// online softmax (Milakov & Gimelshein 2018; FlashAttention, Dao et al. 2022,
// algorithm 1), as ring attention needs it (Liu et al. 2023, arXiv:2310.01889):
// a rank holds its queries and sees the keys and values of the sequence one
// block at a time, as they come round the ring.
//
// Layout: q rows are read with a row stride of q_stride floats (3C in the
// [q | k | v] rows of attention.h, C in a plane of q alone); keys and values
// from k_rows and v_rows with a row stride of kv_stride floats (3C in
// [q | k | v] rows, 2C in a [k | v] block, as ring attention holds and sends
// them); dq rows are the q part of [q | k | v] rows of width 3C (c_attn's
// gradient), dk and dv rows have a row stride of dkv_stride; head h owns
// columns [h*hs, (h+1)*hs) of each.
// Each sequence has Tq query rows and Tk key rows.
//
// The mask. Query row i sees keys [0, visible[i]) of the block: a prefix,
// visible nondecreasing in i (the kernels check it). Causal attention gives
// exactly that whenever queries and keys are each in position order, however
// they are cut: for queries at positions q_pos + i and keys at k_pos + k,
// causal_visible() gives visible[i] = clamp(q_pos + i - k_pos + 1, 0, Tk); a
// zig-zag rank's rows (chunks i and 2 SP-1-i) against a held block's (two
// chunks too) give a staircase that ring_attention.cpp counts, so one call
// covers a whole ring step, every piece packed once.
//
// Forward, per (b, h, i), over the blocks in any order:
//   s_k = q_i . k_k / sqrt(hs)            (allowed k only)
//   m'  = max(m, max_k s_k)
//   acc = acc e^(m - m') + sum_k e^(s_k - m') v_k,   l = l e^(m - m') + sum_k e^(s_k - m')
// then out_i = acc / l and lse_i = m + log l (block_finish).
//
// Backward, with D_i = dout_i . out_i and p_ik = e^(s_ik - lse_i):
//   dv_k += p_ik dout_i;  ds = p_ik (dout_i . v_k - D_i)
//   dq_i += ds k_k / sqrt(hs);  dk_k += ds q_i / sqrt(hs)
//
// As kernels/cpu/attention.cpp does for one rank, per (b, h) the products
//   S = Q K^T / sqrt(hs),  acc += P V                      (forward)
//   dP = dO V^T,  dQ += dS K,  dV += P^T dO,  dK += dS^T Q  (backward, dS scaled)
// are register tiles (tile.h), 6 query (or key) rows at a time, each stopping
// at the last key its last row may see; the block's keys and values (and in
// backward Q and dO) are first copied into panels padded to the tile width,
// only the rows a product reads: keys some query sees, queries that see a key.
// Only the online softmax, its rescale and the softmax backward are loops
// (simd.h: lane reductions and exp_fast). Backward recomputes P and dS of one
// (b, h) at a time, Tq x Tk floats that live only inside the call: nothing of
// size T x T is saved between forward and backward. While a row tile computes,
// the next head's rows of q, k, v (and dO) are prefetched (tile.h), as
// attention.cpp does. The *_reference functions
// are the same math in plain loops, one query at a time (what ring attention
// ran first), kept for the tests and for reading.
#pragma once

#include <vector>

namespace ss::cpu {

/// The mask of queries at positions q_pos + i (i < Tq) against keys at k_pos + k (k < Tk):
/// visible[i] = how many of the block's keys query i sees, clamp(q_pos + i - k_pos + 1, 0, Tk).
std::vector<int> causal_visible(int Tq, int Tk, int q_pos, int k_pos);

/// Starts the online softmax: m = -inf, l = 0, acc = 0. m, l: [B,NH,Tq]; acc: [B,Tq,C].
void attention_block_init(float* m, float* l, float* acc, int B, int Tq, int C, int NH);
/// Folds one key block into the running state (see the file comment).
/// @p visible: Tq counts, query i sees keys [0, visible[i]) (nondecreasing; see the file comment).
void attention_block_forward(float* m, float* l, float* acc, const float* q_rows, int q_stride, const float* k_rows,
                             const float* v_rows, int kv_stride, int B, int Tq, int Tk, const int* visible, int C,
                             int NH);
/// out = acc / l, lse = m + log l (out may alias acc).
void attention_block_finish(float* out, float* lse, const float* m, const float* l, const float* acc, int B, int Tq,
                            int C, int NH);
/// D[b,h,i] = dout_i . out_i over head h's columns: [B,NH,Tq].
void attention_block_delta(float* D, const float* dout, const float* out, int B, int Tq, int C, int NH);
/// One key block's share of the backward: adds into dq_rows ([B,Tq,3C], the q part) and
/// dk_rows / dv_rows (row stride dkv_stride); with @p overwrite, writes
/// them instead (a ring's first block: nothing need be zeroed first). Overwrite needs every
/// query to see a key (visible[0] >= 1) and every key to be seen (visible[Tq-1] == Tk), so
/// that every row it owns is written; each element is then one tile's sum started from 0,
/// the bits a zeroed buffer added into gives.
void attention_block_backward(float* dq_rows, float* dk_rows, float* dv_rows, int dkv_stride, const float* dout,
                              const float* q_rows, int q_stride, const float* k_rows, const float* v_rows,
                              int kv_stride, const float* lse, const float* D, int B, int Tq, int Tk,
                              const int* visible, int C, int NH, bool overwrite);

/// attention_block_forward in plain loops, one query and one key at a time (for the tests).
void attention_block_forward_reference(float* m, float* l, float* acc, const float* q_rows, int q_stride,
                                       const float* k_rows, const float* v_rows, int kv_stride, int B, int Tq, int Tk,
                                       const int* visible, int C, int NH);
/// attention_block_backward in plain loops, one query and one key at a time (for the tests).
void attention_block_backward_reference(float* dq_rows, float* dk_rows, float* dv_rows, int dkv_stride,
                                        const float* dout, const float* q_rows, int q_stride, const float* k_rows,
                                        const float* v_rows, int kv_stride, const float* lse, const float* D, int B,
                                        int Tq, int Tk, const int* visible, int C, int NH);

}  // namespace ss::cpu
