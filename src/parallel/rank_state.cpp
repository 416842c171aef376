// rank_state.cpp — a data-parallel rank's model states: allocation, the bf16
// copies, init and load, checkpoints and whole-model views. The picture is in
// rank_state.h; what each strategy does with the states is in its own file.
#include "parallel/rank_state.h"

#include "parallel/zeropp.h"

#include <algorithm>
#include <cstring>

#include "core/check.h"
#include "kernels/dispatch.h"
#include "model/checkpoint.h"

namespace ss {

RankState::RankState(const GPT2Config& model, DType dtype, Holding holding, Comm& rank_comm, Group dp_group,
                     Group shard_group, Group rep_group, Ledger& rank_ledger, const cpu::AdamWParams& hp,
                     TensorParallelComm* tp_comm, const ModelPart& part)
    : cfg(model),
      tp(tp_comm),
      layout(make_param_layout(model, tp_comm ? tp_comm->size() : 1, tp_comm ? tp_comm->rank() : 0, part)),
      units(make_units(layout)),
      storage(dtype),
      holds(holding),
      comm(rank_comm),
      dp(std::move(dp_group)),
      rep(std::move(rep_group)),
      shard{rank_comm, std::move(shard_group), ShardPlan{}, rank_ledger},
      ledger(rank_ledger) {
    validate(cfg);
    // A precondition, not an option check: train/options.cpp refuses a bad --dtype.
    SS_CHECK(storage == DType::f32 || storage == DType::bf16,
             "RankState: storage " << dtype_name(storage) << " is not one a model is kept in (fp32 or bf16)");
    const bool sharded = holds.optim;
    shard.plan =
        make_shard_plan(units, sharded ? shard.group.size() : 1, sharded ? shard.group.index_of(comm.rank()) : 0);
    const int64_t P = layout.total, S = shard.plan.shard_size;

    params = Tensor(ledger, Mem::params, {holds.params ? S : P}, storage);
    if (storage == DType::bf16 && !holds.params) compute_ = Tensor(ledger, Mem::workspace, {P});
    grads = Tensor(ledger, Mem::grads, {holds.grads ? S : P}, storage);
    if (storage == DType::bf16) acc_ = Tensor(ledger, Mem::workspace, {grads.numel()});
    if (holds.optim)
        optim = std::make_unique<AdamW>(layout, shard.plan.pieces(), S, storage, ledger, hp);
    else
        optim = std::make_unique<AdamW>(layout, 0, P, storage, ledger, hp);
}

void* RankState::at(Tensor& t, int64_t elem) {
    return static_cast<char*>(t.data()) + size_t(elem) * dtype_size(t.dtype());
}

namespace {
// dst (fp32 or bf16) = src (fp32), n elements.
void store(void* dst, DType dt, const float* src, size_t n) {
    if (dt == DType::bf16)
        f32_to_bf16(static_cast<uint16_t*>(dst), src, n);
    else
        std::memcpy(dst, src, n * sizeof(float));
}
// dst (fp32) = src (fp32 or bf16), n elements.
void widen(float* dst, const void* src, DType dt, size_t n) {
    if (dt == DType::bf16)
        bf16_to_f32(dst, static_cast<const uint16_t*>(src), n);
    else
        std::memcpy(dst, src, n * sizeof(float));
}
}  // namespace

// ---- the bf16 copies and the per-unit pieces the strategies share ----------------------

void RankState::store_grads(int64_t begin, int64_t n) {
    if (!acc_.empty()) kern::f32_to_bf16(grads.bf16() + begin, acc_.f32() + begin, size_t(n));
}

void RankState::refresh_compute_copy() {
    if (!compute_.empty()) kern::bf16_to_f32(compute_.f32(), params.bf16(), size_t(params.numel()));
}

void RankState::sum_sequence_parallel_grads(int u, float* unit_grads) {
    if (tp && tp->sequence_parallel()) tp->sum_sequence_parallel_grads(layout, units[size_t(u)].begin,
                                                                       units[size_t(u)].end, unit_grads);
}

float* RankState::new_unit_grads(int u) {
    return (unit_grads_[u] = Tensor(ledger, Mem::workspace, {shard.plan.padded(u)})).f32();
}

void RankState::reduce_scatter_unit_grads(int u) {
    float* unit_grads = unit_grads_[u].f32();  // this micro-batch's gradients of the whole unit
    sum_sequence_parallel_grads(u, unit_grads);
    const Label label{Payload::grad, units[size_t(u)].layer, Phase::bwd, micro, this_step()};
    float* my_acc = grads_f32().f32() + shard.plan.units[size_t(u)].local;
    if (qgz)
        qgz->reduce_scatter_add(u, unit_grads, my_acc, label);
    else
        shard.reduce_scatter_add(u, unit_grads, storage, my_acc, label);
    unit_grads_.erase(u);
}

UnitInFlight RankState::start_reduce_scatter_unit_grads(int u) {
    Tensor unit_grads = std::move(unit_grads_[u]);
    unit_grads_.erase(u);
    sum_sequence_parallel_grads(u, unit_grads.f32());
    const Label label{Payload::grad, units[size_t(u)].layer, Phase::bwd, micro, this_step()};
    return shard.start_reduce_scatter_add(u, std::move(unit_grads), storage,
                                          grads_f32().f32() + shard.plan.units[size_t(u)].local, label);
}

void RankState::refresh_compute_copy(int64_t begin, int64_t n) {
    if (!compute_.empty()) kern::bf16_to_f32(compute_.f32() + begin, params.bf16() + begin, size_t(n));
}

void RankState::gather_params(Tensor& pshard, int step) {
    // Every rank changed only its own chunks; all-gather each unit so that
    // every rank holds all the parameters again.
    for (size_t u = 0; u < units.size(); ++u) {
        const ShardPlan::UnitShard& us = shard.plan.units[u];
        Label label{Payload::param, units[u].layer, Phase::step, -1, step};
        Tensor whole = shard.all_gather(int(u), at(pshard, us.local), storage, label);
        std::memcpy(at(params, us.begin), whole.data(), size_t(us.end - us.begin) * dtype_size(storage));
    }
    refresh_compute_copy();
}

GradSpan RankState::held_grads(int u) {
    const ShardPlan::UnitShard& us = shard.plan.units[size_t(u)];
    float* acc = grads_f32().f32();
    if (holds.grads) return GradSpan{acc + us.local, size_t(us.chunk), DType::f32};
    return GradSpan{acc + us.begin, size_t(us.end - us.begin), DType::f32};
}

// ---- init and load ----------------------------------------------------------------------

std::vector<float> RankState::pick_mine(const std::vector<float>& full) const {
    std::vector<float> mine(size_t(shard.plan.shard_size), 0.0f);
    for (const Piece& p : shard.plan.pieces())
        std::copy(full.begin() + p.flat_begin, full.begin() + p.flat_end, mine.begin() + p.local);
    return mine;
}

std::vector<float> RankState::optimizer_share(const std::vector<float>& full) const {
    return holds.optim ? pick_mine(full) : full;
}

void RankState::set_local_values(std::vector<float> local) {
    store(params.data(), storage, local.data(), local.size());
    refresh_compute_copy();
    // The master weights start from the stored (rounded) values, as after every step.
    widen(local.data(), params.data(), storage, local.size());
    optim->set_master(holds.optim && !holds.params ? pick_mine(local).data() : local.data());
    restart_outer_state();
}

void RankState::optimizer_values(float* dst) const {
    RankState& self = const_cast<RankState&>(*this);  // read, not changed
    if (storage == DType::bf16) {
        std::memcpy(dst, self.optim->master().f32(), size_t(self.optim->master().numel()) * sizeof(float));
    } else if (holds.optim && !holds.params) {  // ZeRO-1, -2: my pieces of the whole params
        for (const Piece& p : shard.plan.pieces())
            std::memcpy(dst + p.local, params.f32() + p.flat_begin, size_t(p.flat_end - p.flat_begin) * sizeof(float));
    } else {  // DDP, ZeRO-3: the params are what the optimizer updates
        std::memcpy(dst, params.f32(), size_t(params.numel()) * sizeof(float));
    }
}

// DiLoCo's outer state starts where the parameters are: the anchor is what the
// optimizer holds, the momentum zero (Algorithm 1 of arXiv:2311.08105, before
// the first outer step). Nothing without DiLoCo.
void RankState::restart_outer_state() {
    if (outer_anchor.empty()) return;
    optimizer_values(outer_anchor.f32());
    outer_momentum.zero();
}

void RankState::init(uint64_t seed) {
    std::vector<float> local(size_t(params.numel()), 0.0f);
    if (holds.params) {
        for (const Piece& p : shard.plan.pieces())  // only what I own: no rank ever builds the whole model
            init_params(layout, cfg, seed, p.flat_begin, p.flat_end, local.data() + p.local);
    } else {
        init_params(layout, cfg, seed, 0, layout.total, local.data());
    }
    set_local_values(std::move(local));
}

void RankState::load(const std::string& path) {
    // The file holds whole HF tensors; take my TP slice of them, then (ZeRO-3) my shard.
    const ParamLayout global = make_param_layout(cfg);
    std::vector<float> whole = read_params(global, path);
    std::vector<float> full(size_t(layout.total));
    slice_for_rank(layout, global, whole.data(), full.data());
    set_local_values(holds.params ? pick_mine(full) : std::move(full));
}

// ---- checkpoints (train/checkpoint.h) -----------------------------------------------------

bool RankState::checkpoint_writer() const {
    // Replicas hold the same shards; under DDP every dp (and sp) rank holds everything.
    // Under local SGD the replicas' Adam moments differ, and every replica writes its own.
    const int me = comm.rank();
    return (replicas_apart || rep.index_of(me) <= 0) && (holds.optim || shard.group.index_of(me) <= 0);
}

void RankState::checkpoint_pieces(StFile& out) const {
    RankState& self = const_cast<RankState&>(*this);  // the tensors are read, not changed
    const std::vector<Piece> pieces =
        holds.optim ? shard.plan.pieces() : std::vector<Piece>{Piece{0, layout.total, 0}};
    Tensor& master = self.optim->master();
    // Local SGD: replica r > 0 writes only its own Adam moments, as "exp_avg.rep<r>",
    // "exp_avg_sq.rep<r>"; its parameters (and DiLoCo's outer state) equal replica 0's
    // at a sync, the only steps that save (train/options.cpp).
    const int replica = std::max(0, rep.index_of(comm.rank()));
    const std::string rep_suffix = replica > 0 ? ".rep" + std::to_string(replica) : "";
    for (const Piece& p : pieces)
        for (const ParamSpec& s : layout.specs) {
            // Not wte's padding rows (the tensor's last elements): files hold HF rows only.
            const int64_t lo = std::max(p.flat_begin, s.offset),
                          hi = std::min(p.flat_end, s.offset + s.unpadded_numel());
            if (lo >= hi) continue;
            if (s.name == "wte.weight" && !layout.part.embedding) continue;  // the head's copy
            const int64_t n = hi - lo, local = p.local + (lo - p.flat_begin);
            auto put_f32 = [&](const std::string& kind, const Tensor& t) {
                const float* v = t.f32() + local;
                out.put(st_from_f32(kind + "/" + s.name, {n}, std::vector<float>(v, v + n)));
            };
            out.metadata[s.name] = std::to_string(s.tp) + " " + std::to_string(s.tp_rank) + " " +
                                   std::to_string(lo - s.offset) + " " + std::to_string(hi - s.offset);
            if (replica > 0) {
                put_f32("exp_avg" + rep_suffix, self.optim->m());
                put_f32("exp_avg_sq" + rep_suffix, self.optim->v());
                continue;
            }
            // Stored params: flat positions (whole) or the shard's (ZeRO-3).
            const int64_t where = holds.params ? local : lo;
            StTensor param;
            param.name = "param/" + s.name;
            param.dtype = storage;
            param.shape = {n};
            const char* src = static_cast<const char*>(params.data()) + size_t(where) * dtype_size(storage);
            param.bytes.assign(src, src + size_t(n) * dtype_size(storage));
            out.put(std::move(param));
            put_f32("exp_avg", self.optim->m());
            put_f32("exp_avg_sq", self.optim->v());
            if (storage == DType::bf16) put_f32("master", master);
            if (!outer_anchor.empty()) {  // DiLoCo
                put_f32("outer_anchor", outer_anchor);
                put_f32("outer_momentum", outer_momentum);
            }
        }
}

void RankState::load_state(const std::vector<float>& master, const std::vector<float>& m,
                           const std::vector<float>& v, int adam_t, int steps,
                           const std::vector<float>& outer_anchor_in, const std::vector<float>& outer_momentum_in) {
    const ParamLayout global = make_param_layout(cfg);
    // Whole -> my TP slice and stage (flat layout) -> what the optimizer holds (local).
    auto mine = [&](const std::vector<float>& whole) {
        std::vector<float> full(size_t(layout.total));
        slice_for_rank(layout, global, whole.data(), full.data());
        return optimizer_share(full);
    };
    std::vector<float> w(size_t(layout.total));
    slice_for_rank(layout, global, master.data(), w.data());
    set_local_values(holds.params ? pick_mine(w) : std::move(w));  // stored params (rounded for bf16)
    if (storage == DType::bf16) {  // the exact fp32 master, not the rounded params
        std::vector<float> mm = mine(master);
        std::copy(mm.begin(), mm.end(), optim->master().f32());
    }
    std::vector<float> mm = mine(m), vv = mine(v);
    std::copy(mm.begin(), mm.end(), optim->m().f32());
    std::copy(vv.begin(), vv.end(), optim->v().f32());
    optim->set_t(adam_t);
    steps_done = steps;
    if (outer_anchor.empty()) return;  // not DiLoCo: a checkpoint's outer state is not used (train.cpp says so)
    if (outer_anchor_in.empty() || outer_momentum_in.empty()) {
        restart_outer_state();  // a checkpoint without it: DiLoCo starts from the loaded parameters
        return;
    }
    std::vector<float> aa = mine(outer_anchor_in), om = mine(outer_momentum_in);
    std::copy(aa.begin(), aa.end(), outer_anchor.f32());
    std::copy(om.begin(), om.end(), outer_momentum.f32());
}

NonFinite RankState::find_nonfinite_grad() const {
    // What this rank holds after the last backward: all P gradients (bf16 runs
    // accumulate them in fp32), or the pieces of its shard (grads sharded). A nan
    // on any rank reaches every rank's step, so between them the ranks see every
    // value the optimizer will read. No communication: each rank looks at its own memory.
    const float* acc = grads_f32().f32();
    if (!holds.grads) return find_nonfinite(layout, acc);
    for (const Piece& p : shard.plan.pieces()) {
        const int64_t i = first_nonfinite(acc + p.local, p.flat_end - p.flat_begin);
        if (i < 0) continue;
        const int64_t flat = p.flat_begin + i;
        for (const ParamSpec& s : layout.specs)
            if (flat >= s.offset && flat < s.offset + s.numel) return NonFinite{s.name, flat - s.offset, acc[p.local + i]};
    }
    return {};
}

// ---- whole-model views ------------------------------------------------------------------

std::vector<float> RankState::gather_full(const Tensor& t, bool is_shard, Payload payload) {
    std::vector<float> full(size_t(layout.total));
    if (!is_shard) {
        widen(full.data(), t.data(), t.dtype(), full.size());
        return full;
    }
    for (size_t u = 0; u < units.size(); ++u) {
        const ShardPlan::UnitShard& us = shard.plan.units[u];
        Label label{payload, units[u].layer, Phase::none, -1, steps_done};
        const void* mine = static_cast<const char*>(t.data()) + size_t(us.local) * dtype_size(t.dtype());
        Tensor whole = shard.all_gather(int(u), mine, t.dtype(), label);
        widen(full.data() + us.begin, whole.data(), t.dtype(), size_t(us.end - us.begin));
    }
    return full;
}

std::vector<float> RankState::averaged_grads(const Group* over) {
    Tensor copy(ledger, Mem::comm, {grads.numel()});
    std::memcpy(copy.f32(), grads_f32().f32(), size_t(copy.numel()) * sizeof(float));
    if (over)
        comm.all_reduce(copy.f32(), size_t(copy.numel()), *over, ReduceOp::avg,
                        Label{Payload::grad, -1, Phase::none, -1, this_step()});
    return gather_full(copy, holds.grads, Payload::grad);
}

// Under tensor parallelism each TP rank holds a different slice: gather all
// slices over the tp group and put each element in its place in the whole
// HF tensors. A pipeline stage's part goes to its places; the rest stays zero
// (and so does the head's copy of wte: the first stage's is the one that counts).
// Every rank must call it; every rank gets the whole.
std::vector<float> RankState::place_whole(const std::vector<float>& mine, Payload payload) {
    const int t = tp ? tp->size() : 1;
    const ModelPart& part = layout.part;
    if (t == 1 && part.is_whole(cfg.L)) return mine;
    std::vector<float> all = mine;
    if (t > 1) {
        all.resize(mine.size() * size_t(t));
        comm.all_gather(mine.data(), all.data(), mine.size(), tp->group(),
                        Label{payload, -1, Phase::none, -1, steps_done});
    }
    const ParamLayout global = make_param_layout(cfg);
    std::vector<float> whole(size_t(global.total), 0.0f);
    for (int r = 0; r < t; ++r)
        place_from_rank(make_param_layout(cfg, t, r, part), global, all.data() + size_t(r) * mine.size(),
                        whole.data());
    if (!part.embedding && part.head)
        std::fill_n(whole.begin() + global.wte().offset, global.wte().numel, 0.0f);
    return whole;
}

std::vector<float> RankState::whole_params() {
    return place_whole(gather_full(params, holds.params, Payload::param), Payload::param);
}

}  // namespace ss
