// ring_attention.h — ring attention / context parallelism (Liu, Zaharia &
// Abbeel 2023, "Ring Attention with Blockwise Transformers", arXiv:2310.01889;
// Megatron's context parallelism): the sp ranks each hold T/sp tokens of
// every sequence (as Ulysses), but attention keeps the token split: every
// rank keeps its queries, and the keys and values travel round the ring.
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
// blocks round again, each with the gradient of its keys and values, which
// every rank adds to on the way; one last hop brings each gradient home.
//
// The causal mask makes the work uneven: rank r computes r+1 blocks, rank 0
// one. The compute spans in the trace show it ("ring block" per step); the
// zig-zag split (each rank two chunks, from both ends) would even it out and
// is not implemented here.
//
// The block reaches it through model/attention.cpp (ring_attention_forward),
// which attention() picks when the layout asks for ring.
//
// Sends are `act` (keys and values) forward, and `act` + `act_grad` (their
// gradients) backward, on the sp axis.
#pragma once

#include "comm/comm.h"
#include "model/model_parallel.h"

namespace ss {

/// What a rank does with the block it holds at one step of the ring.
enum class RingBlock {
    diagonal,  ///< its own keys: attention is causal within the block
    full,      ///< an earlier rank's keys: every query sees every key
    skipped,   ///< a later rank's keys: all masked, nothing computed
};

/// One rank's step of the ring, in sp ranks (indices into the sp group).
struct RingStep {
    int owner;        ///< whose keys and values it holds at this step
    RingBlock block;  ///< what attention does with them
    int send_to;      ///< the neighbour it passes them to (the right one)
    int recv_from;    ///< the neighbour it takes the next block from (the left one)
};

/// Step @p step (0..sp-1) of sp rank @p sp_rank in a ring of @p sp ranks: rank r holds the
/// block of rank (r - step) mod sp, computes it if that rank is not ahead of r, and passes
/// it right. RingAttention runs exactly this, and `shardscope diagram ring` draws it.
RingStep ring_step(int sp_rank, int step, int sp);

/// Ring attention over an sp group.
class RingAttention final : public SequenceParallel {
public:
    /// @p sp_group: this rank's sequence-parallel group (axis "sp"), in ring order.
    RingAttention(Comm& comm, Group sp_group);

    int size() const override { return group_.size(); }
    int rank() const override { return rank_; }
    bool ring() const override { return true; }
    /// Attention of my queries over the blocks as they come round (see the file comment).
    void ring_forward(float* out, float* lse, const float* qkv, int B, int Tl, int C, int NH, int layer) override;
    /// Its backward: the blocks and their key/value gradients go round again.
    void ring_backward(float* dqkv, const float* dout, const float* qkv, const float* out, const float* lse, int B,
                       int Tl, int C, int NH, int layer) override;

    /// Labels use this micro-batch and step from now on.
    void set_position(int microbatch, int step) override {
        microbatch_ = microbatch;
        step_ = step;
    }

private:
    Label label(Payload p, int layer, bool backward) const {
        return Label{p, layer, backward ? Phase::bwd : Phase::fwd, microbatch_, step_};
    }
    Comm& comm_;
    Group group_;
    int rank_;
    int microbatch_ = -1, step_ = -1;
};

}  // namespace ss
