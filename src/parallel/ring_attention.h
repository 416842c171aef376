// ring_attention.h — ring attention / context parallelism (Liu, Zaharia &
// Abbeel 2023, "Ring Attention with Blockwise Transformers", arXiv:2310.01889;
// Megatron's context parallelism): the sp ranks each hold T/sp tokens of
// every sequence (as Ulysses), but attention keeps the token split: every
// rank keeps its queries, and the keys and values travel round the ring.
// With the contiguous split (rank r holds the r-th T/sp tokens):
//
//     step 0: rank r attends to its own block           (causal within it)
//     step k: rank r attends to the block of rank r-k   (whole, if r-k < r; skipped if it lies ahead)
//             while passing what it holds to rank r+1 and taking rank r-1's
//
//     rank:      0       1       2       3
//     step 0:   K0V0    K1V1    K2V2    K3V3     -> send right, recv left
//     step 1:  (K3V3)   K0V0    K1V1    K2V2     (rank 0 skips: the future)
//     step 2:  (K2V2)  (K3V3)   K0V0    K1V1
//     step 3:  (K1V1)  (K2V2)  (K3V3)   K0V0
//
// Each rank folds the blocks into an online softmax (kernels/cpu/attention_block.h)
// and keeps the log-sum-exp of each query for backward. Backward sends the
// blocks round again; the owner keeps its own queries' part of its block's
// key/value gradient, and the others' part is summed on the way round, from
// the rank after the owner to the one before it, whose send lands home:
// s - 1 hops of gradients, as many as of the blocks (a sum that travels
// with its block from the owner on, as this engine's did until 2026-12-06,
// takes s: one more hop to bring it home).
//
// The causal mask makes the work uneven when each rank holds one contiguous
// run of T/sp tokens (--ring-split contiguous): rank r computes r+1 blocks
// (its diagonal one half), rank 0 one, and every step waits for the slowest.
// The zig-zag split (--ring-split zigzag, the default; model/sequence_split.h)
// cuts the sequence into 2 sp chunks of Tc = T/(2 sp) and gives rank r chunk r
// (its head h_r) and chunk 2sp-1-r (its tail t_r). Every head lies before
// every tail, and h_o < h_r, t_o > t_r when o < r, so at the step where rank r
// holds the keys of rank o (in Tc x Tc products, a diagonal one is half):
//
//     owner      products                          work (Tc x Tc blocks)
//     o = r      h_r|h_r diagonal, t_r|h_r full,    1/2 + 1 + 1/2 = 2
//                t_r|t_r diagonal
//     o < r      h_r|h_o full, t_r|h_o full         2   (both my chunks see o's head)
//     o > r      t_r|h_o full, t_r|t_o full         2   (my tail sees both of o's chunks)
//
// (q|k: my query chunk against a key chunk; the other pairs lie in the future.)
// Every rank does 2 Tc^2 per step, sp of them: sp/2 (T/sp)^2 in all, the mean
// of the contiguous split's 1/2 .. sp - 1/2, with no rank waiting on another.
// ring_step lists the products of each step (RingStep::pairs); the trace has
// one "ring block" compute span per rank and step, with its work. A step's
// products are one kernel call: each of my rows sees a prefix of the held
// block (attention_block.h's mask), so the pairs need no call each, and each
// chunk is packed into the kernel's panels once a step, not once a pair.
//
// The block reaches it through model/attention.cpp (blockwise_attention_forward),
// which attention() picks when the layout asks for ring.
//
// Sends are `act` (keys and values) forward, and `act` + `act_grad` (their
// gradients) backward, on the sp axis.
#pragma once

#include <vector>

#include "comm/comm.h"
#include "core/tensor.h"
#include "mesh/layout_names.h"
#include "model/model_parallel.h"
#include "model/sequence_split.h"

namespace ss {

/// What attention does with a block of keys against a block of queries.
enum class RingBlock {
    diagonal,  ///< the same tokens: causal within the block
    full,      ///< earlier keys: every query sees every key
    skipped,   ///< later keys: all masked, nothing computed
};

/// One product of a ring step: my query piece against one piece of the keys I hold
/// (indices into sequence_pieces of me and of the owner).
struct RingPair {
    int q_piece;      ///< which of my pieces (0: the head; 1: the tail, zig-zag only)
    int k_piece;      ///< which of the owner's pieces
    RingBlock block;  ///< diagonal or full (skipped pairs are not listed)
};

/// One rank's step of the ring, in sp ranks (indices into the sp group).
struct RingStep {
    int owner;                    ///< whose keys and values it holds at this step
    RingBlock block;              ///< in all: diagonal (its own), full (some pair computed) or skipped (none)
    std::vector<RingPair> pairs;  ///< the products it computes, in order
    double work;                  ///< their work in (T/sp) x (T/sp) blocks (a diagonal one is half)
    int send_to;                  ///< the neighbour it passes them to (the right one)
    int recv_from;                ///< the neighbour it takes the next block from (the left one)
};

/// Step @p step (0..sp-1) of sp rank @p sp_rank in a ring of @p sp ranks under @p split: rank r
/// holds the keys of rank (r - step) mod sp, computes the pairs of its pieces and theirs that the
/// causal mask lets through (the table above), and passes the keys right. RingAttention runs
/// exactly this, and `shardscope diagram ring` draws it.
RingStep ring_step(int sp_rank, int step, int sp, RingSplit split);

/// Ring attention over an sp group.
class RingAttention final : public SequenceParallel {
public:
    /// @p sp_group: this rank's sequence-parallel group (axis "sp"), in ring order; @p split:
    /// which tokens each rank holds (model/sequence_split.h); @p overlap (--overlap): each
    /// hop's keys and values are sent and received (started calls) while the block held
    /// now is computed, instead of after it, and the backward's gradient hop has its
    /// receive posted before the compute, so the neighbour's send lands in place. The
    /// same bits either way. The blocks in flight are booked in @p ledger, Mem::comm.
    RingAttention(Comm& comm, Group sp_group, RingSplit split, Ledger& ledger, bool overlap = false);

    int size() const override { return group_.size(); }
    int rank() const override { return rank_; }
    bool ring() const override { return true; }
    bool zigzag() const override { return zigzag_split(SpMode::ring, split_, size()); }
    /// Attention of my queries over the blocks as they come round (see the file comment).
    void ring_forward(float* out, float* lse, const float* q, const float* kv, int B, int Tl, int C, int NH,
                      int layer) override;
    /// Its backward: the blocks and their key/value gradients go round again; writes dqkv.
    void ring_backward(float* dqkv, const float* dout, const float* q, const float* kv, const float* out,
                       const float* lse, int B, int Tl, int C, int NH, int layer) override;

    /// Labels use this micro-batch and step from now on.
    void set_position(int microbatch, int step) override {
        microbatch_ = microbatch;
        step_ = step;
    }

private:
    /// One hop of the ring: the @p block floats I hold at @p held go right, the left
    /// neighbour's block comes into @p into. start_pass starts both calls (overlap on;
    /// nothing when off); finish_pass waits for them, or (overlap off) makes them now, blocking.
    void start_pass(const float* held, Tensor& into, int64_t block, int right, int left, const Label& l,
                    CommHandle& sent, CommHandle& got);
    void finish_pass(const float* held, Tensor& into, int64_t block, int right, int left, const Label& l,
                     CommHandle& sent, CommHandle& got);
    /// @p t as a buffer of @p n floats in Mem::comm: kept when it has that size already
    /// (its contents as they were), else allocated unfilled.
    void sized(Tensor& t, int64_t n);
    /// The pieces of each sequence that sp rank @p sp_rank holds, its Tl rows (model/sequence_split.h).
    std::vector<SeqPiece> pieces_of(int sp_rank, int Tl) const;
    Label label(Payload p, int layer, bool backward) const {
        return Label{p, layer, backward ? Phase::bwd : Phase::fwd, microbatch_, step_};
    }
    Comm& comm_;
    Group group_;
    RingSplit split_;
    Ledger& ledger_;
    bool overlap_;
    int rank_;
    int microbatch_ = -1, step_ = -1;
    // The blocks in flight, kept between calls (ring_forward, ring_backward) and booked in
    // Mem::comm: sized once, not allocated and zeroed per layer. kv_, next_: the blocks that
    // come in, by turns (my own is c_attn's k|v plane, sent as it is); dkv_, dnext_: the
    // other ranks' part of the held block's gradient, and the one coming in (backward).
    Tensor kv_, next_, dkv_, dnext_;
};

}  // namespace ss
