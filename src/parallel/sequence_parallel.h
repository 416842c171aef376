// sequence_parallel.h — Ulysses sequence parallelism (DeepSpeed-Ulysses,
// Jacobs et al. 2023, arXiv:2309.14509): the sp ranks of a group each hold
// T/sp tokens of EVERY sequence of the micro-batch, and all the model.
//
// Everything but attention works token by token, so it runs on my T/sp
// tokens unchanged. Attention needs every token of a sequence; Ulysses
// trades the token split for a head split around it (rank r of sp = 4):
//
//     qkv [B, T/4, 3C]  --all_to_all-->  [B, T, 3C/4]     my tokens, all heads -> all tokens, my H/4 heads
//     attention on H/4 heads over the whole sequence
//     y   [B, T, C/4]   --all_to_all-->  [B, T/4, C]      back to my tokens
//
// (model/attention.cpp, ulysses_attention_forward, makes these calls around
// the attention kernel.) Backward runs the two all-to-alls in reverse. Per
// block and step each rank sends 4 all-to-alls (2 forward `act`, 2 backward `act_grad`) of B*T*C/sp
// elements of its own (3x for qkv). sp ranks hold the same parameters and see
// different tokens, so their gradients are averaged over dp x sp, and ZeRO
// shards over dp_shard x sp (DeepSpeed's sequence-data-parallel group); but
// they share their samples, so GBS = MBS x GA x DP counts dp alone.
#pragma once

#include "comm/comm.h"
#include "core/ledger.h"
#include "model/model_parallel.h"

namespace ss {

/// The Ulysses all-to-alls over an sp group.
class UlyssesComm final : public SequenceParallel {
public:
    /// @p sp_group: this rank's sequence-parallel group (axis "sp"); the all-to-alls'
    /// send and receive buffers are booked in @p ledger, Mem::comm, while a call runs.
    UlyssesComm(Comm& comm, Group sp_group, Ledger& ledger);

    int size() const override { return group_.size(); }
    int rank() const override { return rank_; }
    /// [B, Tl, P*C] -> [B, Tl*sp, P*C/sp]: one all_to_all.
    void seq_to_heads(const float* src, float* dst, int B, int Tl, int C, int parts, int layer,
                      bool backward) override;
    /// [B, Tl*sp, P*C/sp] -> [B, Tl, P*C]: one all_to_all.
    void heads_to_seq(const float* src, float* dst, int B, int Tl, int C, int parts, int layer,
                      bool backward) override;

    /// Labels use this micro-batch and step from now on.
    void set_position(int microbatch, int step) override {
        microbatch_ = microbatch;
        step_ = step;
    }

private:
    Label label(int layer, bool backward) const {
        return Label{backward ? Payload::act_grad : Payload::act, layer, backward ? Phase::bwd : Phase::fwd,
                     microbatch_, step_};
    }
    Comm& comm_;
    Group group_;
    Ledger& ledger_;
    int rank_;
    int microbatch_ = -1, step_ = -1;
};

}  // namespace ss
