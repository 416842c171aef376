// replicas.h — replica groups and local SGD, the piece around every data-
// parallel strategy's step.
//
// Replica groups (HSDP, PyTorch FSDP's HYBRID_SHARD; MiCS, Zhang et al. 2022,
// arXiv:2203.14685): the dp ranks form R replicas of S shard ranks (DP = S x R).
// ZeRO shards over the S ranks of a shard group (axis dp_shard) and every
// shard is replicated across the R replicas (axis dp_rep):
//
//                  shard group 0 (replica 0)      shard group 1 (replica 1)
//   dp_shard:      rank 0   rank 1                rank 2   rank 3
//   holds:         chunk 0  chunk 1               chunk 0  chunk 1
//   dp_rep:        rank 0 <-------------------->  rank 2            (and 1 <-> 3)
//
// Gradient shards are reduce-scattered inside the shard group, then all-
// reduced across replicas, unit by unit (ReplicaGrads, below: under backward
// with overlap on, as FSDP's HYBRID_SHARD). With --replica-sync-every
// K > 1 (local SGD, Lin et al. 2020, "Don't Use Large Mini-Batches, Use
// Local SGD") the replicas skip that all-reduce and average their parameters
// every K steps instead (after_step): each replica then steps on its own
// batch of MBS x GA x S.
//
// DiLoCo (Douillard et al. 2023, arXiv:2311.08105; --replica-outer nesterov):
// the same sync, but the average is not taken as it is. The replicas keep the
// parameters of the last sync (theta) and an outer momentum, and take one
// outer Nesterov step on the averaged change (optim/diloco.h):
//
//   every H steps:  mean = all_reduce(avg) of what the optimizer updates   (dp_rep, as local SGD)
//                   Delta = theta - mean;  m = mu m + Delta;  theta -= lr_outer (Delta + mu m)
//                   every replica continues from theta
//
// No byte more crosses the replicas than with the plain average: theta is the
// same on every replica, so the mean of the deltas is theta minus the mean.
// The outer state lies beside AdamW's, in the optimizer's layout (RankState::
// outer_anchor, outer_momentum; Mem::outer): all P under DDP, my shard under
// ZeRO-1, -2 and -3, 8 bytes per element it covers.
//
// This is not ZeRO++'s hpZ (Wang et al. 2023, arXiv:2306.10209, sec. 3.2):
// hpZ keeps ZeRO-3's partition of parameters, gradients and optimizer states
// over all R x S ranks and adds a secondary copy of the parameters,
// partitioned inside each node, so that backward's all-gather stays in the
// node. Here the model states themselves are partitioned over S ranks only.
#pragma once

#include "optim/diloco.h"
#include "parallel/rank_state.h"

namespace ss {

/// The replicas of a rank's shard group, and how often they synchronise.
class Replicas {
public:
    /// @p sync_every: 1, all-reduce gradients every step; K > 1, synchronise parameters every K
    /// steps, by @p outer (the average, or DiLoCo's outer step with @p hp). DiLoCo allocates
    /// its outer state in @p state (Mem::outer); it starts when the parameters are set (init, load).
    Replicas(RankState& state, int sync_every, ReplicaOuter outer = ReplicaOuter::avg, OuterParams hp = {});

    /// Gradients are all-reduced across replicas every step (more than one replica, K = 1).
    bool sync_grads() const { return s_.rep.size() > 1 && sync_every_ == 1; }
    /// DDP's all-reduce group: all of dp, unless local SGD leaves the replicas apart (then the shard group).
    const Group& ddp_group() const { return sync_grads() || s_.rep.size() == 1 ? s_.dp : s_.shard.group; }
    /// True when the step just taken (RankState::steps_done) ends with a sync of the parameters.
    bool syncs_now() const { return s_.rep.size() > 1 && sync_every_ > 1 && s_.steps_done % sync_every_ == 0; }
    /// After the step: local SGD averages the replicas every K steps (DiLoCo: the outer step).
    /// The parameters must be settled (no gather in flight): ZeroModel::step sees to it.
    void after_step();

    /// The replicas' rank group (axis dp_rep).
    const Group& group() const { return s_.rep; }

private:
    void average();
    void outer_step(float* mean);
    RankState& s_;
    int sync_every_;
    ReplicaOuter outer_;
    OuterParams hp_;
};

/// The replicas' gradient all-reduce of one step, unit by unit, as PyTorch FSDP's
/// HYBRID_SHARD runs it: each unit's chunk of my gradient shard is averaged across the
/// replicas once the shard group's reduce-scatter has made it final. With overlap on
/// the call is started there, so it travels while backward computes the units before
/// it; with overlap off the same calls run blocking, at the end of the last backward
/// (ZeRO-2, -3) or in the step (ZeRO-1). The same calls on the same values either
/// way: the same bits.
///
///   last backward of unit u:  reduce_scatter(u) over dp_shard -> my chunk of u, final
///                             all_reduce(my chunk of u) over dp_rep        (started: reduce())
///   end of backward:          wait for them (ZeRO-2, -3: the gradients are averaged over all dp)
///
/// Not under backward: wte's chunk where a pipeline's other end holds a tied copy;
/// pipeline.h's sync_tied_grads sums it after backward, so it is averaged in the step.
class ReplicaGrads {
public:
    /// For the strategy over @p state, whose replicas are @p replicas; @p overlap: start the calls.
    ReplicaGrads(RankState& state, const Replicas& replicas, bool overlap)
        : s_(state), r_(replicas), overlap_(overlap) {}
    /// There is something to do: more than one replica, averaging gradients every step.
    bool active() const { return r_.sync_grads(); }
    /// Unit @p u's chunk waits for the step: wte's, when a pipeline's other end sums it after backward.
    bool deferred(int u) const;
    /// Unit @p u's chunk of @p shard (storage dtype, laid out as the shard plan's) is final:
    /// averages it across the replicas, started (overlap on) or at once. Once a step per unit.
    void reduce(Tensor& shard, int u, Phase phase);
    /// Whether reduce() has been called for unit @p u this step.
    bool reduced(int u) const { return size_t(u) < reduced_.size() && reduced_[size_t(u)]; }
    /// ZeRO-2, -3: unit @p u's chunk of the fp32 gradient shard is final in the last
    /// backward: round it into grads (bf16) and reduce() it, unless it is deferred.
    void shard_unit_done(int u);
    /// ZeRO-2, -3, end of the last backward: reduce() the units not reduced yet (overlap
    /// off: all of them, blocking), then wait for every call started.
    void shard_backward_done();
    /// ZeRO-2, -3's step: rounds into grads what shard_unit_done() has not, averages the
    /// deferred units, and starts the next step's book.
    void shard_step();
    /// Waits for every call started by reduce(), and starts the next step's book.
    void finish();
    /// ZeRO-2, -3: a copy of my fp32 gradient shard averaged over all dp, gathered whole
    /// (DpStrategy::full_grads): the units averaged in place are taken as they are.
    std::vector<float> full_shard_grads();

private:
    RankState& s_;
    const Replicas& r_;
    bool overlap_;
    std::vector<bool> reduced_;           // by unit: reduce() called this step
    std::vector<CommHandle> in_flight_;   // overlap on: the calls started, oldest first
};

}  // namespace ss
