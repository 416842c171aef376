// zero.cpp — ZeroModel: picks the strategy for the stage (the one switch on
// it), and runs the passes and the step through it. The table is in zero.h.
#include "parallel/zero.h"

#include "core/check.h"
#include "model/checkpoint.h"

namespace ss {

namespace {
// What a rank shards at each stage: its row of the table in zero.h.
Holding holding_for(int stage) {
    // A precondition, not an option check: train/options.cpp refuses a bad --zero with its message.
    SS_CHECK(stage >= 0 && stage <= 3, "ZeroConfig::stage " << stage << ": a ZeroModel holds stage 0 (DDP), 1, 2 or 3");
    return Holding{stage >= 1, stage >= 2, stage >= 3};
}

// ZeRO++ qgZ over the shard group, where the config asks for it (zeropp.h).
std::unique_ptr<Qgz> make_qgz(const ZeroConfig& zc, RankState& s) {
    if (!zc.qgz) return nullptr;
    SS_CHECK(zc.stage == 2 || zc.stage == 3, "ZeroConfig::qgz replaces stage 2/3's reduce-scatter; stage " << zc.stage);
    const int n = s.shard.plan.n;
    auto q = std::make_unique<Qgz>(s.shard, zc.qgz_node > 0 && zc.qgz_node < n ? zc.qgz_node : n, zc.qgz_bits,
                                   zc.quant_block);
    s.qgz = q.get();
    return q;
}

std::unique_ptr<DpStrategy> make_strategy(const ZeroConfig& zc, RankState& s, const Replicas& r) {
    switch (zc.stage) {
        case 0: return zc.bucketed ? make_ddp_bucketed(s, r, zc.bucket_mb, zc.overlap) : make_ddp_naive(s, r, zc.overlap);
        case 1: return make_zero1(s, r, zc.overlap);
        case 2: return make_zero2(s, r, zc.overlap);
        default: return make_zero3(s, r, zc);
    }
}
}  // namespace

Group hpz_group(const Group& shard, int me, int k) {
    const int i = shard.index_of(me);
    SS_CHECK(i >= 0 && k >= 1 && shard.size() % k == 0,
             "hpz_group: rank " << me << " in a shard group of " << shard.size() << " with K = " << k);
    const auto first = shard.ranks.begin() + (i / k) * k;
    return Group{"hpz", std::vector<int>(first, first + k)};
}

ShardPlan hpz_secondary_plan(const ShardPlan& primary, int k) {
    SS_CHECK(k >= 1 && primary.n % k == 0, "hpz_secondary_plan: K = " << k << " does not divide N = " << primary.n);
    ShardPlan p = primary;
    p.n = k;
    p.index = primary.index % k;
    int64_t local = 0;
    for (ShardPlan::UnitShard& us : p.units) {
        us.chunk *= primary.n / k;
        us.local = local;
        local += us.chunk;
    }
    p.shard_size = local;
    return p;
}

ZeroModel::ZeroModel(const GPT2Config& cfg, DType storage, const ZeroConfig& zc, Comm& comm, Group dp_group,
                     Group shard_group, Group rep_group, Ledger& ledger, const cpu::AdamWParams& hp,
                     TensorParallelComm* tp, SequenceParallel* sp, const ModelPart& part, Recompute recompute)
    : sp_(sp),
      parallel_{tp ? static_cast<TensorParallel&>(*tp) : ModelParallel::none().tp,
                sp ? static_cast<SequenceParallel&>(*sp) : ModelParallel::none().sp},
      recompute_(recompute),
      state_(cfg, storage, holding_for(zc.stage), comm, std::move(dp_group), std::move(shard_group),
             std::move(rep_group), ledger, hp, tp, part),
      replicas_(state_, zc.replica_sync_every, zc.replica_outer, zc.outer),
      qgz_(make_qgz(zc, state_)),
      strategy_(make_strategy(zc, state_, replicas_)) {}

ZeroModel::~ZeroModel() = default;

void ZeroModel::save(const std::string& path) {
    SS_CHECK(state_.layout.part.is_whole(state_.cfg.L),
             "ZeroModel::save writes the whole model; a pipeline stage holds part of it");
    std::vector<float> whole = whole_params();  // (settles the strategy)
    if (state_.comm.rank() == 0)
        save_params(state_.cfg, make_param_layout(state_.cfg), whole.data(), state_.storage, path);
}

std::vector<float> ZeroModel::full_grads() {
    // The gradients as the optimizer will see them: averaged over all dp ranks.
    return state_.place_whole(strategy_->full_grads(), Payload::grad);
}

// ---- the passes and the step ------------------------------------------------------------

void ZeroModel::set_position(int micro) {
    state_.micro = micro;
    if (state_.tp) state_.tp->set_position(micro, state_.this_step());
    if (sp_) sp_->set_position(micro, state_.this_step());
}

float ZeroModel::forward(const int* tokens, const int* targets, int B, int T, Activations& acts, int micro,
                         const float* x_in) {
    set_position(micro);
    return part_forward(PartPass{state_.cfg, state_.layout, *strategy_, parallel_, state_.ledger, recompute_},
                        tokens, targets, x_in, B, T, acts);
}

void ZeroModel::backward(const int* tokens, const int* targets, const Activations& acts, float dloss, int micro,
                         bool last, const float* dy, float* dx_in) {
    state_.last_micro = last;
    strategy_->backward_begins();
    set_position(micro);
    part_backward(PartPass{state_.cfg, state_.layout, *strategy_, parallel_, state_.ledger, recompute_}, tokens,
                  targets, acts, dloss, dy, dx_in);
    strategy_->backward_ends();
}

void ZeroModel::step() {
    strategy_->settle();  // the last step's gathers, if a pass did not need them all
    strategy_->step();
    ++state_.steps_done;
    // Local SGD, every K steps: the sync reads and writes the parameters, so ZeRO-1/2's
    // gathers (started in the step, overlap on) must have landed first, or they
    // would overwrite the synchronised parameters when the next forward waits for them.
    if (replicas_.syncs_now()) strategy_->settle();
    replicas_.after_step();
}

// ---- the passes over whole parameters and gradients (DDP, ZeRO-1; DpStrategy's defaults) --

const float* DpStrategy::params(int u, bool) { return s.params_f32() + s.units[size_t(u)].begin; }

void DpStrategy::release(int, bool) {}

float* DpStrategy::grads(int u) { return s.grads_f32().f32() + s.units[size_t(u)].begin; }

void DpStrategy::grads_ready(int u) {
    if (s.last_micro)  // Megatron-SP: the accumulated gradients, once
        s.sum_sequence_parallel_grads(u, s.grads_f32().f32() + s.units[size_t(u)].begin);
}

}  // namespace ss
