// replicas.cpp — the replicas' gradient all-reduce and local SGD's parameter
// average. The picture is in replicas.h.
#include "parallel/replicas.h"

#include <cstring>

#include "core/check.h"
#include "kernels/dispatch.h"

namespace ss {

Replicas::Replicas(RankState& state, int sync_every, ReplicaOuter outer, OuterParams hp)
    : s_(state), sync_every_(sync_every), outer_(outer), hp_(hp) {
    // Preconditions, not option checks: train/options.cpp refuses bad --replica-* flags with their messages.
    SS_CHECK(sync_every >= 1, "Replicas: sync_every " << sync_every << " is not a number of steps (1 or more)");
    SS_CHECK(outer == ReplicaOuter::avg || (s_.rep.size() > 1 && sync_every > 1),
             "Replicas: the outer Nesterov step needs replicas (" << s_.rep.size() << ") that sync every K > 1 steps ("
                                                                  << sync_every << ")");
    s_.replicas_apart = s_.rep.size() > 1 && sync_every > 1;
    if (outer_ == ReplicaOuter::nesterov) {  // the optimizer's layout: all P, or my shard's pieces
        const int64_t n = s_.optim->m().numel();
        s_.outer_anchor = Tensor(s_.ledger, Mem::outer, {n});
        s_.outer_momentum = Tensor(s_.ledger, Mem::outer, {n});
    }
}

// ---- the gradient all-reduce, unit by unit ------------------------------------------

bool ReplicaGrads::deferred(int u) const { return u == 0 && s_.layout.part.wte_tied_elsewhere(); }

void ReplicaGrads::reduce(Tensor& shard, int u, Phase phase) {
    SS_CHECK(active() && !reduced(u), "ReplicaGrads::reduce: unit " << u << (active() ? " twice in a step" : " without replicas"));
    if (reduced_.empty()) reduced_.assign(s_.units.size(), false);
    reduced_[size_t(u)] = true;
    const ShardPlan::UnitShard& us = s_.shard.plan.units[size_t(u)];
    const Label label{Payload::grad, s_.units[size_t(u)].layer, phase, -1, s_.this_step()};
    void* mine = RankState::at(shard, us.local);
    if (overlap_)
        in_flight_.push_back(s_.comm.start_all_reduce(mine, size_t(us.chunk), s_.storage, s_.rep, ReduceOp::avg, label));
    else
        s_.comm.all_reduce(mine, size_t(us.chunk), s_.storage, s_.rep, ReduceOp::avg, label);
}

void ReplicaGrads::shard_unit_done(int u) {
    if (!active() || !s_.last_micro || deferred(u)) return;
    const ShardPlan::UnitShard& us = s_.shard.plan.units[size_t(u)];
    s_.store_grads(us.local, us.chunk);
    reduce(s_.grads, u, Phase::bwd);
}

void ReplicaGrads::shard_backward_done() {
    if (!active() || !s_.last_micro) return;
    for (size_t u = 0; u < s_.units.size(); ++u)
        if (!reduced(int(u))) shard_unit_done(int(u));
    for (CommHandle& h : in_flight_) s_.comm.wait(h);
    in_flight_.clear();
}

void ReplicaGrads::shard_step() {
    if (!active()) return s_.store_grads();
    for (size_t u = 0; u < s_.units.size(); ++u) {
        if (reduced(int(u))) continue;  // rounded and averaged in backward
        const ShardPlan::UnitShard& us = s_.shard.plan.units[size_t(u)];
        s_.store_grads(us.local, us.chunk);
        reduce(s_.grads, int(u), Phase::step);
    }
    finish();
}

void ReplicaGrads::finish() {
    for (CommHandle& h : in_flight_) s_.comm.wait(h);
    in_flight_.clear();
    reduced_.clear();
}

std::vector<float> ReplicaGrads::full_shard_grads() {
    // fp32 runs average grads itself in place (grads_f32() is grads); a bf16 run's
    // fp32 accumulator is not what moved, so all of it is averaged here, as before.
    Tensor copy(s_.ledger, Mem::comm, {s_.grads.numel()});
    std::memcpy(copy.f32(), s_.grads_f32().f32(), size_t(copy.numel()) * sizeof(float));
    const Label label{Payload::grad, -1, Phase::none, -1, s_.this_step()};
    if (s_.rep.size() > 1 && !(active() && s_.storage == DType::f32)) {
        s_.comm.all_reduce(copy.f32(), size_t(copy.numel()), s_.rep, ReduceOp::avg, label);
    } else if (s_.rep.size() > 1) {
        for (size_t u = 0; u < s_.units.size(); ++u) {  // only what waits for the step (deferred)
            if (reduced(int(u))) continue;
            const ShardPlan::UnitShard& us = s_.shard.plan.units[size_t(u)];
            s_.comm.all_reduce(copy.f32() + us.local, size_t(us.chunk), s_.rep, ReduceOp::avg, label);
        }
    }
    return s_.gather_full(copy, true, Payload::grad);
}

void Replicas::after_step() {
    if (syncs_now()) average();
}

void Replicas::average() {
    // Local SGD: the replicas stepped on their own batches since the last sync;
    // average what they hold so that they agree again: the fp32 master copy
    // the optimizer updates (bf16 runs) or the fp32 parameters themselves.
    // Adam's moments stay local. DiLoCo then takes its outer step from the mean.
    const int step = s_.steps_done;
    const bool diloco = outer_ == ReplicaOuter::nesterov;
    if (s_.storage == DType::f32) {
        if (s_.holds.optim && !s_.holds.params) {
            // ZeRO-1, -2: every rank holds whole parameters but steps only its chunks, and the
            // shard group's all-gather after each step makes the rest; so average my chunks
            // across the replicas (1/N of the model, as the bf16 path's master shard below),
            // take the outer step on them, and gather every unit so that all ranks of the
            // shard group hold the result whole.
            Tensor mine(s_.ledger, Mem::comm, {s_.shard.plan.shard_size});
            s_.optimizer_values(mine.f32());
            s_.comm.all_reduce(mine.f32(), size_t(mine.numel()), s_.rep, ReduceOp::avg,
                               Label{Payload::param, -1, Phase::step, -1, step});
            if (diloco) outer_step(mine.f32());
            s_.gather_params(mine, step);
            return;
        }
        // DDP, ZeRO-3: the parameters are what the optimizer steps (all P, or my shard)
        s_.comm.all_reduce(s_.params.f32(), size_t(s_.params.numel()), s_.rep, ReduceOp::avg,
                           Label{Payload::param, -1, Phase::step, -1, step});
        if (diloco) outer_step(s_.params.f32());
        return;
    }
    Tensor& master = s_.optim->master();
    s_.comm.all_reduce(master.f32(), size_t(master.numel()), s_.rep, ReduceOp::avg,
                       Label{Payload::optim, -1, Phase::step, -1, step});
    if (diloco) outer_step(master.f32());  // theta in fp32; the bf16 params follow below
    if (s_.holds.optim && !s_.holds.params) {  // ZeRO-1, -2: my chunks of whole params
        Tensor pshard(s_.ledger, Mem::comm, {s_.shard.plan.shard_size}, DType::bf16);
        kern::f32_to_bf16(pshard.bf16(), master.f32(), size_t(master.numel()));
        s_.gather_params(pshard, step);
    } else {  // DDP, ZeRO-3: the master covers exactly what params holds
        kern::f32_to_bf16(s_.params.bf16(), master.f32(), size_t(master.numel()));
        s_.refresh_compute_copy();
    }
}

// DiLoCo's outer step on the replicas' mean, in place: the mean becomes the new theta.
void Replicas::outer_step(float* mean) {
    outer_nesterov_update(s_.outer_anchor.f32(), s_.outer_momentum.f32(), mean, mean,
                          size_t(s_.outer_anchor.numel()), hp_);
}

}  // namespace ss
