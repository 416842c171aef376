// zero.h — ZeRO: data parallelism that partitions the model states instead of
// replicating them (Rajbhandari et al. 2020, "ZeRO: Memory Optimizations
// Toward Training Trillion Parameter Models", arXiv:1910.02054), and
// ZeroModel, the one place that picks a strategy for a run.
//
// N ranks of a shard group each OWN 1/N of every unit (shard_plan.h). What a
// rank keeps, per stage (paper, section 5), and where each stage is written:
//
//                      params    grads     optimizer (fp32 master, m, v)
//   stage 0 (DDP)      all       all       all       (2 + 2 + 12) Psi          data_parallel.cpp
//   stage 1 (P_os)     all       all       my 1/N    2 Psi + 2 Psi + 12 Psi/N  zero1.cpp
//   stage 2 (P_os+g)   all       my 1/N    my 1/N    2 Psi + 14 Psi/N          zero2.cpp
//   stage 3 (P_os+g+p) my 1/N    my 1/N    my 1/N    16 Psi / N                zero3.cpp
//
// Each of those files draws what its stage moves in one step (section 7).
// What they all hold and do alike (the states, init, load, checkpoints,
// whole-model views) is rank_state.h; replica groups and local SGD, around
// every stage's step, are replicas.h. The passes (model/gpt2.h) ask a
// strategy for each unit's parameters and hand it each unit's gradients
// through UnitHooks; the strategy decides what to send.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "comm/comm.h"
#include "kernels/cpu/adamw.h"
#include "model/finite.h"
#include "model/gpt2.h"
#include "model/safetensors.h"
#include "optim/adamw.h"
#include "parallel/rank_state.h"
#include "parallel/replicas.h"
#include "parallel/ring_attention.h"
#include "parallel/sequence_parallel.h"
#include "parallel/shard_plan.h"
#include "parallel/tensor_parallel.h"
#include "parallel/zeropp.h"

namespace ss {

/// How the data-parallel ranks hold and synchronise the model.
struct ZeroConfig {
    int stage = 0;               ///< 0 = DDP, 1 / 2 / 3 = ZeRO stage
    bool bucketed = false;       ///< stage 0: all-reduce in buckets as gradients become ready (else one call per tensor)
    double bucket_mb = 25.0;     ///< stage 0, bucketed: bucket size in MiB (PyTorch DDP's default is 25)
    int replica_sync_every = 1;  ///< 1: replicas all-reduce gradients every step; K > 1: average params every K steps
    /// K > 1: how the replicas synchronise, the plain average (local SGD) or DiLoCo's outer step (replicas.h).
    ReplicaOuter replica_outer = ReplicaOuter::avg;
    OuterParams outer;  ///< DiLoCo's outer learning rate and momentum (optim/diloco.h)
    /// Start the data-parallel collectives as soon as their inputs are ready and wait
    /// only when their results are needed (--overlap on), or call each one blocking
    /// where the plain form does (off). The bits are the same either way: what hides
    /// under what is in each strategy's file and in docs/architecture.md.
    bool overlap = false;
    /// Stage 3 with overlap: how many units ahead of use the all-gather is started
    /// (--prefetch; 0 = gather each unit when it is needed). Prefetched units are
    /// booked in Mem::comm from the start of their gather: memory traded for time.
    int prefetch = 1;
    /// Stage 3: ZeRO++ hpZ (Wang et al. 2023, arXiv:2306.10209, sec. 3.2): after a unit's
    /// forward gather each rank keeps 1/K of it (the secondary partition, Mem::hpz), and the
    /// backward gathers the unit from those inside a group of K consecutive members of the
    /// shard group (hpz_group). 0: off. The arithmetic is ZeRO-3's, so the bits are too.
    int hpz = 0;
    /// Stage 3: ZeRO++ qwZ (zeropp.h): every parameter all-gather from the primary partition
    /// moves int8 blocks and their fp32 scales, dequantized on arrival. Changes results.
    bool qwz = false;
    /// Stages 2, 3: ZeRO++ qgZ (zeropp.h): gradients averaged by quantized all-to-alls, inside
    /// nodes of qgz_node members then across them, instead of the reduce-scatter. Changes results.
    bool qgz = false;
    int qgz_node = 0;      ///< qgZ: members per node (0 or the shard group's size: one all-to-all)
    int qgz_bits = 4;      ///< qgZ: bits per gradient element on the wire (4 or 8)
    int quant_block = 256; ///< qwZ / qgZ: elements per quantization block (one fp32 scale each)
};

/// The hpZ group of K ranks that global rank @p me belongs to inside @p shard (members
/// chunked by K in group order: K consecutive ranks, one node when K is the ranks per
/// node), on the axis "hpz".
Group hpz_group(const Group& shard, int me, int k);

/// hpZ's secondary partition, seen by the member of @p primary (ZeRO-3's plan over N)
/// whose index it holds: each padded unit in K slices of N/K primary chunks, slice
/// (index mod K) to this member. The K slices put back the same padded unit (zero3.cpp).
ShardPlan hpz_secondary_plan(const ShardPlan& primary, int k);

/// A data-parallel strategy: where the passes get each unit's parameters and
/// put its gradients (UnitHooks), and the step. The defaults are the passes over
/// whole parameters and whole gradients, as DDP and ZeRO-1 run them.
class DpStrategy : public UnitHooks {
public:
    /// A strategy over @p state (which it does not own).
    explicit DpStrategy(RankState& state) : s(state) {}
    /// UnitHooks: unit @p u's slice of the whole fp32 parameters.
    const float* params(int u, bool backward) override;
    /// UnitHooks: nothing to free.
    void release(int u, bool backward) override;
    /// UnitHooks: unit @p u's slice of the whole fp32 gradient accumulator.
    float* grads(int u) override;
    /// UnitHooks: Megatron-SP sums the accumulated gradients once, in the last micro-batch.
    void grads_ready(int u) override;
    /// Backward of a micro-batch begins (RankState::micro, last_micro say which).
    virtual void backward_begins() {}
    /// Backward of a micro-batch is done.
    virtual void backward_ends() {}
    /// Finishes every call still in flight that the parameters wait for (ZeRO-1/2's
    /// gathers after the step, which overlap the next forward): before anything but
    /// the passes reads the parameters (save, whole_params, checkpoints).
    virtual void settle() {}
    /// Synchronises the gradients, runs AdamW on what this rank owns and
    /// re-assembles what the passes read. Labels use RankState::this_step().
    virtual void step() = 0;
    /// The step's gradients averaged over all dp ranks, fp32, this rank's flat layout.
    /// Every rank must call. Valid between the last backward and step().
    virtual std::vector<float> full_grads() = 0;
    /// Where wte's gradients lie between the last backward and step(): all of
    /// them, or this rank's chunk (grads sharded); pipeline.h sums them.
    virtual GradSpan wte_grads() { return s.held_grads(0); }

protected:
    RankState& s;  ///< the model states this strategy works on
};

/// DDP, one all-reduce per tensor after backward, or (@p overlap) started as each tensor is ready (data_parallel.cpp).
std::unique_ptr<DpStrategy> make_ddp_naive(RankState& s, const Replicas& r, bool overlap);
/// DDP, all-reduce in buckets of @p bucket_mb MiB as backward completes them; @p overlap:
/// started, and waited for at the end of backward (data_parallel.cpp).
std::unique_ptr<DpStrategy> make_ddp_bucketed(RankState& s, const Replicas& r, double bucket_mb, bool overlap);
/// ZeRO-1: optimizer states sharded (zero1.cpp).
std::unique_ptr<DpStrategy> make_zero1(RankState& s, const Replicas& r, bool overlap);
/// ZeRO-2: and gradients (zero2.cpp).
std::unique_ptr<DpStrategy> make_zero2(RankState& s, const Replicas& r, bool overlap);
/// ZeRO-3: and parameters (zero3.cpp); zc.prefetch units gathered ahead when zc.overlap;
/// ZeRO++'s hpZ (zc.hpz > 0) and qwZ (zc.qwz) as ZeroConfig says.
std::unique_ptr<DpStrategy> make_zero3(RankState& s, const Replicas& r, const ZeroConfig& zc);

/// ZeRO-1/2's parameters after the step (zero1.cpp): AdamW on my chunks, then every
/// unit all-gathered so all ranks hold all parameters again. Blocking (overlap off),
/// or started (on): each unit's gather runs under the next forward until the pass
/// asks for that unit (need), as Megatron's distributed optimizer overlaps its
/// parameter all-gather with the next forward.
class StepAndGather {
public:
    /// For the strategy over @p state; @p overlap: start the gathers, wait in need().
    StepAndGather(RankState& state, bool overlap) : s(state), overlap_(overlap) {}
    /// AdamW on my chunks of the whole params with @p grad_shard, then the gathers.
    void step(Tensor& grad_shard);
    /// Unit @p u's gathered parameters are in place (waits for its gather if in flight).
    void need(int u);
    /// Every gather in flight finished.
    void settle();

private:
    RankState& s;
    bool overlap_;
    Tensor pshard_;                          // my updated chunks: what the gathers send
    std::map<int, UnitInFlight> in_flight_;  // unit -> its gather
};

/// One rank's GPT-2 under data parallelism with ZeRO stage 0-3 and replica groups.
///
/// Call order per optimizer step: zero_grad(); GA x (forward(); backward());
/// step(). Collectives are issued on @p shard_group (axis dp_shard) and
/// @p rep_group (axis dp_rep); DDP (stage 0) uses their union, @p dp_group.
class ZeroModel final {
public:
    /// Allocates what this rank holds for stage zc.stage (Ledger categories as in rank_state.h).
    /// @p dp_group = @p shard_group x @p rep_group, all containing comm.rank().
    /// With @p tp (tensor parallelism, parallel/tensor_parallel.h) this rank holds its TP
    /// slice of the model, and ZeRO partitions that slice over the shard group. With @p sp
    /// (Ulysses, parallel/sequence_parallel.h, or ring attention, parallel/ring_attention.h)
    /// the passes take this rank's T/sp tokens, and
    /// the dp / shard groups given here must include the sp ranks (dp+sp, dp_shard+sp).
    /// With @p part (a pipeline stage, parallel/pipeline.h) it holds only that stage's
    /// tensors; @p recompute is what its passes recompute in backward.
    ZeroModel(const GPT2Config& cfg, DType storage, const ZeroConfig& zc, Comm& comm, Group dp_group,
              Group shard_group, Group rep_group, Ledger& ledger, const cpu::AdamWParams& hp,
              TensorParallelComm* tp = nullptr, SequenceParallel* sp = nullptr,
              const ModelPart& part = ModelPart::whole(), Recompute recompute = Recompute::none);
    /// Frees everything (the Ledger sees it go).
    ~ZeroModel();

    /// Counter-based initialisation: each rank fills only what it holds.
    void init(uint64_t seed) { state_.init(seed); }
    /// Loads an HF-layout safetensors file: each rank takes only what it holds.
    void load(const std::string& path) { state_.load(path); }
    /// Saves the whole model to @p path from rank 0 (every rank must call: stage 3 gathers).
    /// The whole model only; a pipeline stage's part is written by parallel/pipeline.h.
    void save(const std::string& path);
    /// The fp32 parameters this rank's part holds, gathered over the shard and tp groups,
    /// in the whole model's HF flat layout, zero where the part holds nothing (and where
    /// it holds only the head's copy of wte). Every rank of those groups must call.
    std::vector<float> whole_params() {
        strategy_->settle();
        return state_.whole_params();
    }
    /// The same for the averaged fp32 gradients of the last step (every rank must call).
    /// Valid between backward of the last micro-batch (and sync_tied_grads) and step().
    std::vector<float> full_grads();
    /// The first nan or inf among the gradients this rank holds after the step's last
    /// backward (all of them, or its ZeRO shard), named by tensor; empty if none.
    /// Local: no communication. Valid where full_grads() is.
    NonFinite find_nonfinite_grad() const { return state_.find_nonfinite_grad(); }
    /// Where wte's gradients lie after the last backward: what pipeline.h's
    /// sync_tied_grads sums over the embedding group.
    GradSpan wte_grads() { return strategy_->wte_grads(); }

    /// Checkpoints (train/checkpoint.h): whether this rank's copy of what it holds
    /// is the one saved (replicas and, under DDP, the other dp ranks hold the same).
    bool checkpoint_writer() const { return state_.checkpoint_writer(); }
    /// Adds what this rank owns to @p out as tensors "<kind>/<HF name>" (kind: param,
    /// master, exp_avg, exp_avg_sq; DiLoCo: outer_anchor, outer_momentum; local SGD's
    /// replica r > 0: exp_avg.rep<r>, exp_avg_sq.rep<r> only), each the range [lo, hi)
    /// of the rank's TP-local tensor, with metadata "<HF name>" = "tp tp_rank lo hi".
    /// The head's copy of wte is left out (the first stage's is the one saved).
    void checkpoint_pieces(StFile& out) const {
        strategy_->settle();
        state_.checkpoint_pieces(out);
    }
    /// Loads a checkpoint's state, whole-model HF flat layout (make_param_layout(cfg)):
    /// fp32 master weights (the parameters of an fp32 run), Adam's m and v, its t, and
    /// the steps done. Each rank takes its TP slice / stage / shard, as load() does.
    /// DiLoCo's outer state comes from @p outer_anchor and @p outer_momentum, or (empty)
    /// starts at the loaded parameters with momentum 0; a run without DiLoCo ignores them.
    void load_state(const std::vector<float>& master, const std::vector<float>& m, const std::vector<float>& v,
                    int adam_t, int steps_done, const std::vector<float>& outer_anchor = {},
                    const std::vector<float>& outer_momentum = {}) {
        strategy_->settle();
        state_.load_state(master, m, v, adam_t, steps_done, outer_anchor, outer_momentum);
    }

    /// Starts a step: gradient accumulators to zero.
    void zero_grad() { state_.grads_f32().zero(); }
    /// Forward of one micro-batch; returns its mean loss (0 on a pipeline stage
    /// without the head). A later pipeline stage starts from @p x_in [B, Tl, C].
    float forward(const int* tokens, const int* targets, int B, int T, Activations& acts, int micro,
                  const float* x_in = nullptr);
    /// Backward of one micro-batch. @p last: the step's last micro-batch (DDP communicates then).
    /// A stage without the head starts from @p dy; one without the embedding writes @p dx_in.
    void backward(const int* tokens, const int* targets, const Activations& acts, float dloss, int micro,
                  bool last, const float* dy = nullptr, float* dx_in = nullptr);
    /// Synchronises gradients as the stage says, runs AdamW on what this rank owns,
    /// and re-assembles parameters (stages 1, 2); local SGD averages replicas every K steps.
    void step();

    /// The partition (stage >= 1; for stage 0 the trivial one of N = 1).
    const ShardPlan& plan() const { return state_.shard.plan; }
    /// The optimizer state this rank holds.
    AdamW& optimizer() { return *state_.optim; }
    /// Steps taken.
    int steps_done() const { return state_.steps_done; }
    /// The memory book this model's tensors are booked in.
    Ledger& ledger() { return state_.ledger; }
    /// This rank's parameter layout (its TP slice under tensor parallelism).
    const ParamLayout& layout() const { return state_.layout; }
    /// The parameters this rank stores (all of them for stages 0-2, its shard for stage 3).
    const Tensor& stored_params() const {
        strategy_->settle();
        return state_.params;
    }
    /// Finishes the calls still in flight that the parameters wait for (DpStrategy::settle).
    void settle() { strategy_->settle(); }

private:
    void set_position(int micro);

    SequenceParallel* sp_;      // null: no sequence parallelism (else Ulysses or ring)
    ModelParallel parallel_;    // what the passes call: tp and sp, or the identity
    Recompute recompute_;       // what the passes recompute in backward
    RankState state_;
    Replicas replicas_;
    std::unique_ptr<Qgz> qgz_;  // ZeRO++ qgZ (null: off); state_.qgz points here
    std::unique_ptr<DpStrategy> strategy_;
};

}  // namespace ss
