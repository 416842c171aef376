// tensor_parallel.h — tensor parallelism (Megatron-LM, Shoeybi et al. 2019,
// arXiv:1909.08053): the t ranks of a tp group split every layer and work on
// the SAME micro-batch, exchanging activations instead of parameters.
//
// Each block (model/layers.cpp, block_forward) on rank r of t:
//
//        x --ln_1--> f --> [c_attn columns: my H/t heads] --> attention --> [c_proj rows] --> g --> + x
//        x --ln_2--> f --> [c_fc columns: my 4C/t]  --> gelu -------------> [c_proj rows] --> g --> + x
//
//     ColumnParallelLinear  W = [W_1, ..., W_t]   Y_r = X W_r          (no communication)
//     RowParallelLinear     W = [W_1; ...; W_t]   Y = sum_r X_r W_r    (g: all-reduce)
//
//     f: forward identity, backward all-reduce     (the paper's "f", section 3, figure 3a)
//     g: forward all-reduce, backward identity     (its conjugate "g")
//
// So a block costs 2 all-reduces of B*T*C activations in forward (payload
// `act`) and 2 in backward (`act_grad`), on the tp axis. The embedding and the
// tied LM head are split over the vocabulary (kernels/cpu/vocab_parallel.h):
// one more all-reduce in forward for the embedding, one in backward for the
// head's input gradient, and three values per token for the loss.
//
// Megatron sequence parallelism (--sequence-parallel; Korthikanti et al. 2022,
// arXiv:2205.05198, section 4.2.2) keeps the LayerNorms and residual additions
// on T/t tokens per rank instead of repeating them on all T: f becomes an
// all-gather along the sequence (backward: reduce-scatter) and g a
// reduce-scatter (backward: all-gather). An all-reduce IS a reduce-scatter
// plus an all-gather, so the volume is the same as TP's; what changes is that
// the LayerNorm and bias gradients now come from T/t tokens each and are
// summed over the tp group (sum_sequence_parallel_grads). This engine keeps the
// gathered LayerNorm outputs for backward instead of gathering them again.
//
// Compare ZeRO-3 (parallel/zero3.cpp), which also splits every layer's
// parameters: it gathers them (`param`) and runs the whole layer on its own
// micro-batch. TP never moves parameters, and its ranks share one micro-batch,
// so TP ranks do not count in DP or in the global batch.
#pragma once

#include "comm/comm.h"
#include "core/ledger.h"
#include "model/model_parallel.h"
#include "model/params.h"

namespace ss {

/// The f and g operators over a tp group, with the Comm of this rank.
class TensorParallelComm final : public TensorParallel {
public:
    /// @p tp_group: this rank's tensor-parallel group (axis "tp"); @p sequence_parallel
    /// turns on Megatron sequence parallelism (Korthikanti et al. 2022). The collectives'
    /// scratch (the gathered sequence, the max's all_gather) is booked in @p ledger, Mem::comm.
    TensorParallelComm(Comm& comm, Group tp_group, Ledger& ledger, bool sequence_parallel = false);

    int size() const override { return group_.size(); }
    int rank() const override { return rank_; }
    /// g, forward: all_reduce(sum) of a row-parallel layer's partial outputs (payload act).
    void g_forward(float* x, long n, int layer) override;
    /// f, backward: all_reduce(sum) of a column-parallel layer's partial input gradients (payload act_grad).
    void f_backward(float* dx, long n, int layer) override;
    /// Max over the group (an all_gather of the n values, then the max here).
    void max_over_ranks(float* x, long n) override;
    /// Sum over the group (all_reduce).
    void sum_over_ranks(float* x, long n) override;
    /// Megatron-SP is on.
    bool sequence_parallel() const override { return sequence_parallel_; }
    /// all_gather along the sequence (forward act, or backward act_grad).
    void gather_seq(const float* mine, float* all, int B, int Tl, int C, int layer, bool backward) override;
    /// reduce_scatter(sum) along the sequence (forward act, or backward act_grad).
    void scatter_seq(const float* all, float* mine, int B, int Tl, int C, int layer, bool backward) override;

    /// Megatron-SP: each rank saw T/t tokens, so the gradients of what it holds whole
    /// (LayerNorms, row-parallel biases, wpe) are partial. Sums those of flat range
    /// [@p begin, @p end) of @p layout (@p grads: element @p begin) over the group (payload grad).
    void sum_sequence_parallel_grads(const ParamLayout& layout, int64_t begin, int64_t end, float* grads);

    /// The group.
    const Group& group() const { return group_; }
    /// Labels use this micro-batch and step from now on.
    void set_position(int microbatch, int step) {
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
    bool sequence_parallel_;
    int microbatch_ = -1, step_ = -1;
};

}  // namespace ss
