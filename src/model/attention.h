// attention.h — a block's causal self-attention over the heads this rank
// holds, three ways, and the one place that picks between them:
//
//   plain    my sequences' tokens are all here: att = softmax(q k^T / sqrt(hs)), y = att v
//            (kernels/cpu/attention.h, as llm.c's attention_forward)
//   Ulysses  the sp ranks hold T/sp tokens each: an all-to-all trades that for all T tokens
//            of H/sp heads, attention runs there, a second all-to-all trades back
//            (parallel/sequence_parallel.h)
//   ring     the sp ranks keep their T/sp queries while the keys and values travel round
//            the ring (parallel/ring_attention.h)
//   blockwise one rank under --recompute selective: the ring's kernels on the whole sequence
//            as one block, FlashAttention's online softmax (kernels/cpu/attention_block.h):
//            the T x T probabilities are never stored, backward recomputes them tile by tile
//            from the saved log-sum-exp (Dao et al. 2022, arXiv:2205.14135, section 3.1)
//
// Each is a forward and a backward over the block's saved activations. The
// block writes c_attn's output (q|k|v of its tokens, my heads) into ba.qkv and
// calls forward, which leaves the attention output in ba.atty; backward turns
// d(atty) into d(qkv). Ring and blockwise attention take c_attn's output in two
// planes (Attention::planar): q [B,T,C], then k|v [B,T,2C], so that the block
// ring attention sends round is contiguous where c_attn wrote it (no copy to
// pack it); d(qkv) keeps the [q | k | v] rows, since c_attn's backward reads it
// as one operand. attention() returns the pair the layout runs, with the
// sizes its kernel sees, so block_forward and block_backward never ask which.
#pragma once

#include "core/ledger.h"
#include "core/tensor.h"
#include "model/gpt2.h"
#include "model/model_parallel.h"
#include "model/recompute.h"

namespace ss {

/// How this rank computes a block's attention: the block's sizes, the sizes
/// the attention kernel sees, and the two functions that run it (a small
/// struct of function pointers, no class hierarchy). Made by attention().
struct Attention {
    int B = 0;   ///< sequences
    int T = 0;   ///< the block's tokens of each sequence (all of them under TP, T/sp under SP)
    int C = 0;   ///< the block's attention channels: those of my heads (C/t under TP)
    int H = 0;   ///< the block's heads: mine (H/t under TP)
    int Ta = 0;  ///< tokens the kernel sees: T, or all T*sp under Ulysses (ring: my queries)
    int Ca = 0;  ///< channels the kernel sees: C, or C/sp under Ulysses
    int Ha = 0;  ///< heads the kernel sees: H, or H/sp under Ulysses
    bool probs = true;  ///< saves the softmax probabilities [B,Ha,Ta,Ta]; ring and blockwise keep a log-sum-exp [B,Ha,Ta]

    /// ba.atty [B,T,C] from ba.qkv [B,T,3C] (c_attn's output); saves ba.att (and
    /// under Ulysses leaves ba.qkv holding the head split, for backward).
    void (*forward)(const Attention& a, BlockActs& ba, SequenceParallel& sp, int layer, Ledger& ledger);
    /// dqkv [B,T,3C] from datty [B,T,C], every element written (its contents on entry
    /// are not read: the block does not zero it). @p datt is the block's
    /// scratch of att_shape() for the softmax's backward (unused by ring and blockwise).
    void (*backward)(const Attention& a, float* dqkv, float* datt, const float* datty, const BlockActs& ba,
                     SequenceParallel& sp, int layer, Ledger& ledger);
    /// ba.qkv holds q [B,T,C] then k|v [B,T,2C] (ring and blockwise), not [B,T,3C] rows of [q | k | v]
    bool planar = false;

    /// What ba.qkv holds: [B, Ta, 3Ca] (the same elements as c_attn's [B, T, 3C]; planar: q's
    /// B Ta Ca, then k|v's B Ta 2Ca).
    Shape qkv_shape() const { return {B, Ta, 3 * Ca}; }
    /// What ba.att holds: the probabilities [B, Ha, Ta, Ta], or the log-sum-exp [B, Ha, Ta] (ring, blockwise).
    Shape att_shape() const { return probs ? Shape{B, Ha, Ta, Ta} : Shape{B, Ha, Ta}; }
};

/// The one place that picks how attention runs: ring attention if sp.ring(),
/// Ulysses if sp.size() > 1, blockwise on one rank with selective recompute,
/// else plain. @p B, @p T, @p C, @p H are the block's (Attention::B .. H).
/// (Ulysses with selective recompute stays Ulysses: backward runs the plain
/// kernel's forward again for the probabilities, model/attention.cpp.)
Attention attention(SequenceParallel& sp, int B, int T, int C, int H, Recompute recompute);

/// Whether attention() runs the blockwise kernels: ring attention, or one SP rank with
/// selective recompute. Then ba.att is the log-sum-exp, and there are no probabilities
/// for selective recompute to drop.
bool blockwise_attention(const SequenceParallel& sp, Recompute recompute);

/// Plain attention, forward (one rank holds every token of its sequences).
void plain_attention_forward(const Attention& a, BlockActs& ba, SequenceParallel& sp, int layer, Ledger& ledger);
/// Plain attention, backward.
void plain_attention_backward(const Attention& a, float* dqkv, float* datt, const float* datty, const BlockActs& ba,
                              SequenceParallel& sp, int layer, Ledger& ledger);
/// Ulysses attention, forward: all-to-all to my heads of all tokens, attention, all-to-all back.
void ulysses_attention_forward(const Attention& a, BlockActs& ba, SequenceParallel& sp, int layer, Ledger& ledger);
/// Ulysses attention, backward: the two all-to-alls in reverse around attention's backward.
void ulysses_attention_backward(const Attention& a, float* dqkv, float* datt, const float* datty,
                                const BlockActs& ba, SequenceParallel& sp, int layer, Ledger& ledger);
/// Ring attention, forward: my queries against the key/value blocks as they come round
/// (sp.ring_forward); on one rank (blockwise) the whole sequence is the one block.
void blockwise_attention_forward(const Attention& a, BlockActs& ba, SequenceParallel& sp, int layer, Ledger& ledger);
/// Ring attention, backward: the blocks and their gradients go round again (one block on one rank).
void blockwise_attention_backward(const Attention& a, float* dqkv, float* datt, const float* datty,
                                  const BlockActs& ba, SequenceParallel& sp, int layer, Ledger& ledger);

}  // namespace ss
