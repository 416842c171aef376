// zero.cpp — ZeRO stages 0-3 with replica groups. The picture and the
// sources are in zero.h; this file follows it top to bottom:
//   1. the partition (ShardPlan)
//   2. holding the model: construction, init, load, save
//   3. the passes: what each stage does when a unit's params are needed
//      and when a unit's gradients are complete (UnitHooks)
//   4. the step: synchronise, update what I own, re-assemble
#include "parallel/zero.h"

#include <algorithm>
#include <cstring>

#include "core/check.h"
#include "kernels/dispatch.h"
#include "model/checkpoint.h"
#include "model/finite.h"
#include "parallel/data_parallel.h"

namespace ss {

// ---- 1. the partition ----------------------------------------------------------------

ShardPlan make_shard_plan(const std::vector<Unit>& units, int n, int index) {
    ShardPlan p;
    p.n = n;
    p.index = index;
    for (const Unit& u : units) {
        ShardPlan::UnitShard us;
        us.begin = u.begin;
        us.end = u.end;
        us.chunk = (u.size() + n - 1) / n;  // ceil: the last chunk may end in padding
        us.local = p.shard_size;
        p.shard_size += us.chunk;
        p.units.push_back(us);
    }
    return p;
}

Piece ShardPlan::mine(int u) const {
    const UnitShard& us = units[u];
    int64_t lo = std::min(us.end, us.begin + index * us.chunk);
    int64_t hi = std::min(us.end, lo + us.chunk);
    return Piece{lo, hi, us.local};
}

std::vector<Piece> ShardPlan::pieces() const {
    std::vector<Piece> out;
    for (size_t u = 0; u < units.size(); ++u) out.push_back(mine(int(u)));
    return out;
}

// ---- 2. holding the model -------------------------------------------------------------

ZeroModel::ZeroModel(const GPT2Config& cfg, DType storage, const ZeroConfig& zc, Comm& comm, Group dp_group,
                     Group shard_group, Group rep_group, Ledger& ledger, const cpu::AdamWParams& hp,
                     TensorParallelComm* tp, SequenceParallel* sp, const ModelPart& part, Recompute recompute)
    : cfg_(cfg),
      tp_(tp),
      sp_(sp),
      parallel_{tp ? static_cast<TensorParallel&>(*tp) : ModelParallel::none().tp,
                sp ? static_cast<SequenceParallel&>(*sp) : ModelParallel::none().sp},
      recompute_(recompute),
      layout_(make_param_layout(cfg, tp ? tp->size() : 1, tp ? tp->rank() : 0, part)),
      units_(make_units(layout_)),
      storage_(storage),
      zc_(zc),
      comm_(comm),
      dp_(std::move(dp_group)),
      shard_(std::move(shard_group)),
      rep_(std::move(rep_group)),
      ledger_(ledger) {
    validate(cfg_);
    SS_CHECK(zc.stage >= 0 && zc.stage <= 3, "--zero " << zc.stage << " does not exist; choose 0 (DDP), 1, 2 or 3");
    SS_CHECK(zc.replica_sync_every >= 1,
             "--replica-sync-every must be at least 1 (got " << zc.replica_sync_every << ")");
    SS_CHECK(storage == DType::f32 || storage == DType::bf16, "--dtype must be fp32 or bf16");
    const bool sharded = zc.stage >= 1;
    plan_ = make_shard_plan(units_, sharded ? shard_.size() : 1, sharded ? shard_.index_of(comm.rank()) : 0);
    const int64_t P = layout_.total, S = plan_.shard_size;

    params_ = Tensor(ledger, Mem::params, {zc.stage >= 3 ? S : P}, storage);
    if (storage == DType::bf16 && zc.stage < 3) compute_ = Tensor(ledger, Mem::workspace, {P});
    grads_ = Tensor(ledger, Mem::grads, {zc.stage >= 2 ? S : P}, storage);
    if (storage == DType::bf16) grad_acc_ = Tensor(ledger, Mem::workspace, {grads_.numel()});
    if (zc.stage == 0)
        optim_ = std::make_unique<AdamW>(layout_, 0, P, storage, ledger, hp);
    else
        optim_ = std::make_unique<AdamW>(layout_, plan_.pieces(), S, storage, ledger, hp);
    if (zc.stage == 0 && zc.bucketed)
        buckets_ = make_grad_buckets(layout_, size_t(zc.bucket_mb * 1048576.0), dtype_size(storage));
}

ZeroModel::~ZeroModel() = default;

void* ZeroModel::storage_at(Tensor& t, int64_t elem) {
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

void ZeroModel::refresh_compute_copy() {
    if (!compute_.empty()) kern::bf16_to_f32(compute_.f32(), params_.bf16(), size_t(params_.numel()));
}

std::vector<float> ZeroModel::pick_mine(const std::vector<float>& full) const {
    std::vector<float> mine(size_t(plan_.shard_size), 0.0f);
    for (const Piece& p : plan_.pieces())
        std::copy(full.begin() + p.flat_begin, full.begin() + p.flat_end, mine.begin() + p.local);
    return mine;
}

void ZeroModel::set_local_values(std::vector<float> local) {
    store(params_.data(), st(), local.data(), local.size());
    refresh_compute_copy();
    // The master weights start from the stored (rounded) values, as after every step.
    widen(local.data(), params_.data(), st(), local.size());
    optim_->set_master(zc_.stage == 1 || zc_.stage == 2 ? pick_mine(local).data() : local.data());
}

void ZeroModel::init(uint64_t seed) {
    std::vector<float> local(size_t(params_.numel()), 0.0f);
    if (zc_.stage >= 3) {
        for (const Piece& p : plan_.pieces())  // only what I own: no rank ever builds the whole model
            init_params(layout_, cfg_, seed, p.flat_begin, p.flat_end, local.data() + p.local);
    } else {
        init_params(layout_, cfg_, seed, 0, layout_.total, local.data());
    }
    set_local_values(std::move(local));
}

void ZeroModel::load(const std::string& path) {
    // The file holds whole HF tensors; take my TP slice of them, then (stage 3) my shard.
    const ParamLayout global = make_param_layout(cfg_);
    std::vector<float> whole = read_params(global, path);
    std::vector<float> full(size_t(layout_.total));
    slice_for_rank(layout_, global, whole.data(), full.data());
    set_local_values(zc_.stage >= 3 ? pick_mine(full) : std::move(full));
}

// Whole fp32 parameters, every unit gathered over the shard group for stage 3.
// Every rank must call it (it may communicate); every rank gets the result.
std::vector<float> ZeroModel::gather_full(const Tensor& t, bool is_shard, Payload payload) {
    std::vector<float> full(size_t(layout_.total));
    if (!is_shard) {
        widen(full.data(), t.data(), t.dtype(), full.size());
        return full;
    }
    for (size_t u = 0; u < units_.size(); ++u) {
        const ShardPlan::UnitShard& us = plan_.units[u];
        Tensor whole(ledger_, Mem::comm, {us.chunk * plan_.n}, t.dtype(), false);
        Label label{payload, units_[u].layer, Phase::none, -1, step_};
        const void* mine = static_cast<const char*>(t.data()) + size_t(us.local) * dtype_size(t.dtype());
        comm_.all_gather(mine, whole.data(), size_t(us.chunk), t.dtype(), shard_, label);
        widen(full.data() + us.begin, whole.data(), t.dtype(), size_t(us.end - us.begin));
    }
    return full;
}

std::vector<float> ZeroModel::whole_params() {
    return place_whole(gather_full(params_, zc_.stage >= 3, Payload::param), Payload::param);
}

void ZeroModel::save(const std::string& path) {
    SS_CHECK(layout_.part.is_whole(cfg_.L), "ZeroModel::save writes the whole model; a pipeline stage holds part of it");
    std::vector<float> whole = whole_params();
    if (comm_.rank() == 0) save_params(cfg_, make_param_layout(cfg_), whole.data(), st(), path);
}

void ZeroModel::sync_tied_grads(const Group& emb) {
    if (emb.size() <= 1 || !layout_.has_wte()) return;
    // wte is a unit of its own on a stage (model/gpt2.h, Unit), the same size on
    // the first and the last stage, so both hold the same range of it: all of it
    // (stages 0, 1) or the same shard (stages 2, 3). The sum is linear, so it
    // commutes with the data-parallel average that happens before or after it.
    const Label label{Payload::grad, -1, Phase::step, -1, step_ + 1};
    const ShardPlan::UnitShard& us = plan_.units[0];  // wte: the stage's first unit
    if (zc_.stage == 0) {  // the gradients were synchronised in backward, into grads_
        comm_.all_reduce(grads_.data(), size_t(us.end - us.begin), st(), emb, ReduceOp::sum, label);
        return;
    }
    float* acc = st() == DType::bf16 ? grad_acc_.f32() : grads_.f32();
    if (zc_.stage == 1)
        comm_.all_reduce(acc + us.begin, size_t(us.end - us.begin), emb, ReduceOp::sum, label);
    else
        comm_.all_reduce(acc + us.local, size_t(us.chunk), emb, ReduceOp::sum, label);
}

NonFinite ZeroModel::find_nonfinite_grad() const {
    // What this rank holds after the last backward: all P gradients (stages 0, 1; bf16 runs
    // accumulate them in fp32 in grad_acc_), or the pieces of its shard (stages 2, 3). A nan
    // on any rank reaches every rank's step, so between them the ranks see every value the
    // optimizer will read. No communication: each rank looks at its own memory.
    const float* acc = st() == DType::bf16 ? grad_acc_.f32() : grads_.f32();
    if (zc_.stage < 2) return find_nonfinite(layout_, acc);
    for (const Piece& p : plan_.pieces()) {
        const int64_t i = first_nonfinite(acc + p.local, p.flat_end - p.flat_begin);
        if (i < 0) continue;
        const int64_t flat = p.flat_begin + i;
        for (const ParamSpec& s : layout_.specs)
            if (flat >= s.offset && flat < s.offset + s.numel) return NonFinite{s.name, flat - s.offset, acc[p.local + i]};
    }
    return {};
}

std::vector<float> ZeroModel::full_grads() {
    // The gradients as the optimizer will see them: averaged over all dp ranks.
    // (Stages 0: done in backward. Others: average a copy here, outside the
    // step's own traffic, labelled phase "none".)
    const float* acc = st() == DType::bf16 ? grad_acc_.f32() : grads_.f32();
    if (zc_.stage == 0) return place_whole(gather_full(grads_, false, Payload::grad), Payload::grad);
    Tensor copy(ledger_, Mem::comm, {grads_.numel()});
    std::memcpy(copy.f32(), acc, size_t(copy.numel()) * sizeof(float));
    Label label{Payload::grad, -1, Phase::none, -1, step_ + 1};
    if (zc_.stage == 1) {
        comm_.all_reduce(copy.f32(), size_t(copy.numel()), dp_, ReduceOp::avg, label);
        return place_whole(gather_full(copy, false, Payload::grad), Payload::grad);
    }
    if (rep_.size() > 1) comm_.all_reduce(copy.f32(), size_t(copy.numel()), rep_, ReduceOp::avg, label);
    return place_whole(gather_full(copy, true, Payload::grad), Payload::grad);
}

// Under tensor parallelism each TP rank holds a different slice: gather all
// slices over the tp group and put each element in its place in the whole
// HF tensors. A pipeline stage's part goes to its places; the rest stays zero
// (and so does the head's copy of wte: the first stage's is the one that counts).
// Every rank must call it; every rank gets the whole.
std::vector<float> ZeroModel::place_whole(const std::vector<float>& mine, Payload payload) {
    const int t = tp_ ? tp_->size() : 1;
    const ModelPart& part = layout_.part;
    if (t == 1 && part.is_whole(cfg_.L)) return mine;
    std::vector<float> all = mine;
    if (t > 1) {
        all.resize(mine.size() * size_t(t));
        comm_.all_gather(mine.data(), all.data(), mine.size(), tp_->group(),
                         Label{payload, -1, Phase::none, -1, step_});
    }
    const ParamLayout global = make_param_layout(cfg_);
    std::vector<float> whole(size_t(global.total), 0.0f);
    for (int r = 0; r < t; ++r)
        place_from_rank(make_param_layout(cfg_, t, r, part), global, all.data() + size_t(r) * mine.size(),
                        whole.data());
    if (!part.embedding && part.head)
        std::fill_n(whole.begin() + global.wte().offset, global.wte().numel, 0.0f);
    return whole;
}

// ---- checkpoints (train/checkpoint.h) -------------------------------------------------

bool ZeroModel::checkpoint_writer() const {
    // Replicas hold the same shards; under DDP every dp (and sp) rank holds everything.
    const int me = comm_.rank();
    return rep_.index_of(me) <= 0 && (zc_.stage >= 1 || shard_.index_of(me) <= 0);
}

void ZeroModel::checkpoint_pieces(StFile& out) const {
    ZeroModel& self = const_cast<ZeroModel&>(*this);  // the tensors are read, not changed
    const std::vector<Piece> pieces =
        zc_.stage == 0 ? std::vector<Piece>{Piece{0, layout_.total, 0}} : plan_.pieces();
    Tensor& master = self.optim_->master();
    for (const Piece& p : pieces)
        for (const ParamSpec& s : layout_.specs) {
            // Not wte's padding rows (the tensor's last elements): files hold HF rows only.
            const int64_t lo = std::max(p.flat_begin, s.offset),
                          hi = std::min(p.flat_end, s.offset + s.unpadded_numel());
            if (lo >= hi) continue;
            if (s.name == "wte.weight" && !layout_.part.embedding) continue;  // the head's copy
            const int64_t n = hi - lo, local = p.local + (lo - p.flat_begin);
            // Stored params: flat positions (stages 0-2) or the shard's (stage 3).
            const int64_t at = zc_.stage >= 3 ? local : lo;
            StTensor param;
            param.name = "param/" + s.name;
            param.dtype = st();
            param.shape = {n};
            const char* src = static_cast<const char*>(params_.data()) + size_t(at) * dtype_size(st());
            param.bytes.assign(src, src + size_t(n) * dtype_size(st()));
            out.put(std::move(param));
            auto put_f32 = [&](const std::string& kind, const Tensor& t) {
                const float* v = t.f32() + local;
                out.put(st_from_f32(kind + "/" + s.name, {n}, std::vector<float>(v, v + n)));
            };
            put_f32("exp_avg", self.optim_->m());
            put_f32("exp_avg_sq", self.optim_->v());
            if (st() == DType::bf16) put_f32("master", master);
            out.metadata[s.name] = std::to_string(s.tp) + " " + std::to_string(s.tp_rank) + " " +
                                   std::to_string(lo - s.offset) + " " + std::to_string(hi - s.offset);
        }
}

void ZeroModel::load_state(const std::vector<float>& master, const std::vector<float>& m,
                           const std::vector<float>& v, int adam_t, int steps_done) {
    const ParamLayout global = make_param_layout(cfg_);
    // Whole -> my TP slice and stage (flat layout) -> what the optimizer holds (local).
    auto mine = [&](const std::vector<float>& whole) {
        std::vector<float> full(size_t(layout_.total));
        slice_for_rank(layout_, global, whole.data(), full.data());
        return zc_.stage == 0 ? full : pick_mine(full);
    };
    std::vector<float> w(size_t(layout_.total));
    slice_for_rank(layout_, global, master.data(), w.data());
    set_local_values(zc_.stage >= 3 ? pick_mine(w) : std::move(w));  // stored params (rounded for bf16)
    if (st() == DType::bf16) {  // the exact fp32 master, not the rounded params
        std::vector<float> mm = mine(master);
        std::copy(mm.begin(), mm.end(), optim_->master().f32());
    }
    std::vector<float> mm = mine(m), vv = mine(v);
    std::copy(mm.begin(), mm.end(), optim_->m().f32());
    std::copy(vv.begin(), vv.end(), optim_->v().f32());
    optim_->set_t(adam_t);
    step_ = steps_done;
}

// ---- 3. the passes --------------------------------------------------------------------

void ZeroModel::zero_grad() {
    Tensor& acc = st() == DType::bf16 ? grad_acc_ : grads_;
    acc.zero();
}

float ZeroModel::forward(const int* tokens, const int* targets, int B, int T, Activations& acts, int micro,
                         const float* x_in) {
    micro_ = micro;
    if (tp_) tp_->set_position(micro, step_ + 1);
    if (sp_) sp_->set_position(micro, step_ + 1);
    return part_forward(PartPass{cfg_, layout_, *this, parallel_, ledger_, recompute_}, tokens, targets, x_in, B, T,
                        acts);
}

void ZeroModel::backward(const int* tokens, const int* targets, const Activations& acts, float dloss, int micro,
                         bool last, const float* dy, float* dx_in) {
    micro_ = micro;
    last_micro_ = last;
    next_bucket_ = 0;
    if (tp_) tp_->set_position(micro, step_ + 1);
    if (sp_) sp_->set_position(micro, step_ + 1);
    part_backward(PartPass{cfg_, layout_, *this, parallel_, ledger_, recompute_}, tokens, targets, acts, dloss, dy,
                  dx_in);
    if (zc_.stage == 0 && last && !zc_.bucketed) {
        if (st() == DType::bf16) kern::f32_to_bf16(grads_.bf16(), grad_acc_.f32(), size_t(grads_.numel()));
        dp_allreduce_naive(comm_, replicas_sync_grads() || rep_.size() == 1 ? dp_ : shard_, grads_, layout_,
                           step_ + 1);
    }
}

const float* ZeroModel::params(int u, bool backward) {
    if (zc_.stage < 3) {
        const float* w = st() == DType::bf16 ? compute_.f32() : params_.f32();
        return w + units_[u].begin;
    }
    // ZeRO-3: gather the unit from its N shards just before it is used (comm),
    // widen it for the math (workspace), and free both at release().
    const ShardPlan::UnitShard& us = plan_.units[u];
    Tensor& g = gathered_[u] = Tensor(ledger_, Mem::comm, {us.chunk * plan_.n}, st(), false);
    Label label{Payload::param, units_[u].layer, backward ? Phase::bwd : Phase::fwd, micro_, step_ + 1};
    comm_.all_gather(storage_at(params_, us.local), g.data(), size_t(us.chunk), st(), shard_, label);
    if (st() == DType::f32) return g.f32();
    Tensor& w = gathered_f32_[u] = Tensor(ledger_, Mem::workspace, {g.numel()}, DType::f32, false);
    kern::bf16_to_f32(w.f32(), g.bf16(), size_t(g.numel()));
    return w.f32();
}

void ZeroModel::release(int u, bool) {
    gathered_.erase(u);
    gathered_f32_.erase(u);
}

float* ZeroModel::grads(int u) {
    if (zc_.stage < 2) {
        float* acc = st() == DType::bf16 ? grad_acc_.f32() : grads_.f32();
        return acc + units_[u].begin;
    }
    // ZeRO-2/3: the unit's full gradient lives only until it is reduce-scattered.
    const ShardPlan::UnitShard& us = plan_.units[u];
    return (unit_grads_[u] = Tensor(ledger_, Mem::workspace, {us.chunk * plan_.n})).f32();
}

void ZeroModel::sum_sequence_parallel_grads(int u, float* unit_grads) {
    // Megatron-SP: each TP rank saw T/t tokens, so the gradients of what it
    // holds whole (LayerNorms, row-parallel biases, wpe) are partial: sum them
    // over the tp group (Korthikanti et al. 2022, section 4.2.2).
    const Unit& unit = units_[u];
    for (const ParamSpec& s : layout_.specs)
        if (s.split == Split::none && s.offset >= unit.begin && s.offset < unit.end)
            comm_.all_reduce(unit_grads + (s.offset - unit.begin), size_t(s.numel), tp_->group(), ReduceOp::sum,
                             Label{Payload::grad, s.layer, Phase::bwd, micro_, step_ + 1});
}

void ZeroModel::grads_ready(int u) {
    if (tp_ && tp_->sequence_parallel()) {
        if (zc_.stage >= 2)
            sum_sequence_parallel_grads(u, unit_grads_[u].f32());  // this micro-batch's unit gradients
        else if (last_micro_)                                    // the accumulated gradients, once
            sum_sequence_parallel_grads(u, (st() == DType::bf16 ? grad_acc_.f32() : grads_.f32()) + units_[u].begin);
    }
    if (zc_.stage == 0 && zc_.bucketed && last_micro_) {
        const Unit& unit = units_[u];
        if (st() == DType::bf16)
            kern::f32_to_bf16(grads_.bf16() + unit.begin, grad_acc_.f32() + unit.begin, size_t(unit.size()));
        launch_ready_buckets(unit.begin);
    } else if (zc_.stage >= 2) {
        reduce_scatter_unit(u, unit_grads_[u].f32());
        unit_grads_.erase(u);
    }
}

void ZeroModel::launch_ready_buckets(int64_t ready_from) {
    // Units complete from the end of the flat buffer towards its start, and
    // buckets are laid out in that order: a bucket is complete once the
    // completed region reaches its first element.
    const Group& g = replicas_sync_grads() || rep_.size() == 1 ? dp_ : shard_;
    while (next_bucket_ < buckets_.size() && buckets_[next_bucket_].begin >= ready_from)
        dp_allreduce_bucket(comm_, g, grads_, buckets_[next_bucket_++], step_ + 1);
}

void ZeroModel::reduce_scatter_unit(int u, const float* unit_grads) {
    // send: the unit's padded gradient in the storage dtype; recv: my chunk of
    // the average over the shard group, added into my gradient shard.
    const ShardPlan::UnitShard& us = plan_.units[u];
    const int64_t padded = us.chunk * plan_.n;
    Tensor send;
    const void* send_ptr = unit_grads;
    if (st() == DType::bf16) {
        send = Tensor(ledger_, Mem::comm, {padded}, DType::bf16, false);
        kern::f32_to_bf16(send.bf16(), unit_grads, size_t(padded));
        send_ptr = send.data();
    }
    Tensor mine(ledger_, Mem::comm, {us.chunk}, st(), false);
    Label label{Payload::grad, units_[u].layer, Phase::bwd, micro_, step_ + 1};
    comm_.reduce_scatter(send_ptr, mine.data(), size_t(us.chunk), st(), shard_, ReduceOp::avg, label);
    float* acc = (st() == DType::bf16 ? grad_acc_.f32() : grads_.f32()) + us.local;
    if (st() == DType::bf16)
        for (int64_t i = 0; i < us.chunk; ++i) acc[i] += bf16_to_f32(mine.bf16()[i]);
    else
        for (int64_t i = 0; i < us.chunk; ++i) acc[i] += mine.f32()[i];
}

// ---- 4. the step ----------------------------------------------------------------------

void ZeroModel::step() {
    const int step = step_ + 1;
    const Label sync{Payload::grad, -1, Phase::step, -1, step};
    if (zc_.stage == 0) {
        optim_->step(params_.data(), grads_.data(), st());
        refresh_compute_copy();
    } else {
        Tensor gshard_tmp;  // stage 1: my reduce-scattered chunk of the full gradients (comm)
        Tensor* gshard = &grads_;
        if (zc_.stage == 1) {
            // ZeRO-1 keeps all gradients: store them, then reduce-scatter each unit.
            if (st() == DType::bf16) kern::f32_to_bf16(grads_.bf16(), grad_acc_.f32(), size_t(grads_.numel()));
            gshard_tmp = Tensor(ledger_, Mem::comm, {plan_.shard_size}, st());
            for (size_t u = 0; u < units_.size(); ++u) {
                const ShardPlan::UnitShard& us = plan_.units[u];
                Tensor send(ledger_, Mem::comm, {us.chunk * plan_.n}, st());  // padded
                std::memcpy(send.data(), storage_at(grads_, us.begin), size_t(us.end - us.begin) * dtype_size(st()));
                Label label{Payload::grad, units_[u].layer, Phase::step, -1, step};
                comm_.reduce_scatter(send.data(), storage_at(gshard_tmp, us.local), size_t(us.chunk), st(), shard_,
                                     ReduceOp::avg, label);
            }
            gshard = &gshard_tmp;
        } else if (st() == DType::bf16) {
            kern::f32_to_bf16(grads_.bf16(), grad_acc_.f32(), size_t(grads_.numel()));
        }
        // Replicas: each holds the same shard of a different batch's gradient.
        if (replicas_sync_grads())
            comm_.all_reduce(gshard->data(), size_t(gshard->numel()), st(), rep_, ReduceOp::avg, sync);

        if (zc_.stage == 3) {
            optim_->step(params_.data(), gshard->data(), st());
        } else {
            // Update my chunks, then all-gather every unit so all ranks hold all params again.
            Tensor pshard(ledger_, Mem::comm, {plan_.shard_size}, st());
            for (const Piece& p : plan_.pieces())
                std::memcpy(storage_at(pshard, p.local), storage_at(params_, p.flat_begin),
                            size_t(p.flat_end - p.flat_begin) * dtype_size(st()));
            optim_->step(pshard.data(), gshard->data(), st());
            assemble_params(pshard, Payload::param, step);
        }
    }
    step_ = step;
    if (rep_.size() > 1 && zc_.replica_sync_every > 1 && step % zc_.replica_sync_every == 0) average_replicas();
}

void ZeroModel::assemble_params(Tensor& pshard, Payload payload, int step) {
    // Stages 1, 2: every rank changed only its own chunks; all-gather each unit
    // so that every rank holds all the parameters again.
    for (size_t u = 0; u < units_.size(); ++u) {
        const ShardPlan::UnitShard& us = plan_.units[u];
        Tensor whole(ledger_, Mem::comm, {us.chunk * plan_.n}, st(), false);
        Label label{payload, units_[u].layer, Phase::step, -1, step};
        comm_.all_gather(storage_at(pshard, us.local), whole.data(), size_t(us.chunk), st(), shard_, label);
        std::memcpy(storage_at(params_, us.begin), whole.data(), size_t(us.end - us.begin) * dtype_size(st()));
    }
    refresh_compute_copy();
}

void ZeroModel::average_replicas() {
    // Local SGD: the replicas stepped on their own batches since the last sync;
    // average what they hold so that they agree again: the fp32 master copy
    // the optimizer updates (bf16 runs) or the fp32 parameters themselves.
    // Adam's moments stay local.
    if (st() == DType::f32) {
        comm_.all_reduce(params_.f32(), size_t(params_.numel()), rep_, ReduceOp::avg,
                         Label{Payload::param, -1, Phase::step, -1, step_});
        return;
    }
    Tensor& master = optim_->master();
    comm_.all_reduce(master.f32(), size_t(master.numel()), rep_, ReduceOp::avg,
                     Label{Payload::optim, -1, Phase::step, -1, step_});
    if (zc_.stage == 1 || zc_.stage == 2) {
        Tensor pshard(ledger_, Mem::comm, {plan_.shard_size}, DType::bf16);
        kern::f32_to_bf16(pshard.bf16(), master.f32(), size_t(master.numel()));
        assemble_params(pshard, Payload::param, step_);
    } else {
        kern::f32_to_bf16(params_.bf16(), master.f32(), size_t(master.numel()));
        refresh_compute_copy();
    }
}

}  // namespace ss
