// model_parallel.h — the places inside a layer where model-parallel ranks
// meet: the seam between the model (model/layers.cpp) and the strategies that
// split a layer over ranks (parallel/).
//
//   TensorParallel    Megatron's f and g around each split layer, their
//                     sequence-parallel forms, the vocabulary-parallel loss
//   SequenceParallel  Ulysses' two all-to-alls, or ring attention
//   ModelParallel     the pair one pass calls
//
// The base classes are one rank, where every operator is the identity (or a
// copy), so the plain model runs the same code with no parallelism at all.
// parallel/tensor_parallel.h, parallel/sequence_parallel.h and
// parallel/ring_attention.h implement them with collectives. The model calls
// them at fixed places (layers.cpp; attention.cpp picks how attention runs),
// so a reader sees exactly where the ranks communicate.
#pragma once

namespace ss {

/// Where the ranks of a tensor-parallel group combine their partial results:
/// Megatron-LM's conjugate operators (Shoeybi et al. 2019, section 3, figure 3)
///
///     f: in front of a column-parallel layer:  forward identity,    backward all-reduce
///     g: behind a row-parallel layer:          forward all-reduce,  backward identity
///
/// plus the two reductions of the vocabulary-parallel loss. This base class is
/// one rank, where every operator is the identity; parallel/tensor_parallel.h
/// implements them with collectives over the tp axis.
class TensorParallel {
public:
    virtual ~TensorParallel() = default;
    /// TP degree t.
    virtual int size() const { return 1; }
    /// This rank's index in its TP group.
    virtual int rank() const { return 0; }
    /// g, forward: @p x (n partial sums) becomes their sum over the TP ranks.
    virtual void g_forward(float* x, long n, int layer) { (void)x, (void)n, (void)layer; }
    /// f, backward: @p dx (n partial input gradients) becomes their sum over the TP ranks.
    virtual void f_backward(float* dx, long n, int layer) { (void)dx, (void)n, (void)layer; }
    /// Vocabulary-parallel loss: @p x (n values) becomes the elementwise max over the TP ranks.
    virtual void max_over_ranks(float* x, long n) { (void)x, (void)n; }
    /// Vocabulary-parallel loss: @p x (n values) becomes the elementwise sum over the TP ranks.
    virtual void sum_over_ranks(float* x, long n) { (void)x, (void)n; }

    /// Megatron sequence parallelism (Korthikanti et al. 2022, section 4.2.2) is on:
    /// the residual stream holds T/t tokens of each sequence, and the two
    /// operators below replace f and g (forward all-gather / backward reduce-scatter,
    /// and forward reduce-scatter / backward all-gather).
    virtual bool sequence_parallel() const { return false; }
    /// All-gather along the sequence: my [B, Tl, C] -> [B, Tl*t, C] (rank r's tokens at r*Tl).
    virtual void gather_seq(const float* mine, float* all, int B, int Tl, int C, int layer, bool backward);
    /// Reduce-scatter along the sequence: partial sums [B, Tl*t, C] -> the sum of my [B, Tl, C].
    virtual void scatter_seq(const float* all, float* mine, int B, int Tl, int C, int layer, bool backward);
};

/// Ulysses sequence parallelism (DeepSpeed-Ulysses, Jacobs et al. 2023,
/// arXiv:2309.14509): the sp ranks each hold T/sp tokens of every sequence,
/// and around attention they trade a token split for a head split with two
/// all-to-alls:
///
///     seq_to_heads:  [B, T/sp, P*C]  (my tokens, all heads)  ->  [B, T, P*C/sp]  (all tokens, my heads)
///     heads_to_seq:  the inverse
///
/// (P = 3 for q|k|v, 1 for the attention output). This base class is one rank
/// (a copy); parallel/sequence_parallel.h implements it with all_to_all.
class SequenceParallel {
public:
    virtual ~SequenceParallel() = default;
    /// SP degree.
    virtual int size() const { return 1; }
    /// This rank's index in its SP group: it holds tokens [rank * T/sp, (rank + 1) * T/sp), or the
    /// zig-zag pieces when zigzag() (model/sequence_split.h).
    virtual int rank() const { return 0; }
    /// The micro-batch and step that collectives are labelled with from now on.
    virtual void set_position(int microbatch, int step) { (void)microbatch, (void)step; }
    /// [B, Tl, P*C] -> [B, Tl*size(), P*C/size()] (see above). @p backward labels the traffic act_grad.
    virtual void seq_to_heads(const float* src, float* dst, int B, int Tl, int C, int parts, int layer, bool backward);
    /// [B, Tl*size(), P*C/size()] -> [B, Tl, P*C], the inverse of seq_to_heads.
    virtual void heads_to_seq(const float* src, float* dst, int B, int Tl, int C, int parts, int layer, bool backward);

    /// Ring attention (context parallelism; Liu et al. 2023) instead of Ulysses: attention
    /// is computed by ring_forward / ring_backward on this rank's Tl queries while the
    /// keys and values travel round the sp ranks.
    virtual bool ring() const { return false; }
    /// Whether this rank's tokens are split zig-zag (two chunks, model/sequence_split.h) rather than
    /// one contiguous run: ring attention's default. The position embedding follows it.
    virtual bool zigzag() const { return false; }
    /// Causal attention of my Tl queries over the whole sequence: out [B,Tl,C], lse [B,NH,Tl],
    /// from my tokens' q [B,Tl,C] and k|v [B,Tl,2C] (c_attn's planar output, model/attention.h).
    /// (The base class is one rank: one block, the whole sequence.)
    virtual void ring_forward(float* out, float* lse, const float* q, const float* kv, int B, int Tl, int C, int NH,
                              int layer);
    /// Its backward: writes dqkv [B,Tl,3C] (every element; nothing need be zeroed first).
    virtual void ring_backward(float* dqkv, const float* dout, const float* q, const float* kv, const float* out,
                               const float* lse, int B, int Tl, int C, int NH, int layer);
};

/// The model-parallel operators one pass uses: tensor and sequence parallelism.
struct ModelParallel {
    TensorParallel& tp;  ///< f, g and the vocabulary-parallel loss
    SequenceParallel& sp;  ///< Ulysses all-to-alls, or ring attention
    /// One rank: every operator is the identity.
    static ModelParallel none();
};

}  // namespace ss
