// zero1.cpp — ZeRO-1 (P_os): the optimizer states are partitioned, nothing
// else (Rajbhandari et al. 2020, arXiv:1910.02054, section 5.1). Every rank
// still runs the whole model and accumulates all the gradients; in the step
// each rank reduce-scatters them, updates only the chunks it owns with
// AdamW, and all-gathers the updated parameters back.
//
//                      params    grads     optimizer (fp32 master, m, v)
//   stage 1 (P_os)     all       all       my 1/N         2 Psi + 2 Psi + 12 Psi/N
//
//   rank:            0            1            2            3
//   AdamW state: [ chunk 0 ]  [ chunk 1 ]  [ chunk 2 ]  [ chunk 3 ]   of every unit (shard_plan.h)
//
//   forward, backward:  as DDP, but nothing moves
//   step:  reduce_scatter(each unit's grads)    -> my chunk of the average
//          AdamW on my chunks
//          all_gather(each unit's params)       -> all ranks hold all params   2 Psi (N-1)/N
//
// The same volume as DDP's all-reduce (which IS a reduce-scatter plus an
// all-gather), for 12 Psi (N-1)/N bytes less per rank.
//
// With overlap (--overlap on) the same calls move earlier and later:
//
//   last backward:  reduce_scatter(unit u) started as soon as u's grads are complete
//   step:           wait for them; AdamW; all_gather(each unit) started
//   next forward:   params(u) waits for u's gather only (StepAndGather::need)
//
// With replicas (HSDP) each unit's chunk of the average is then all-reduced
// across them (ReplicaGrads, replicas.h): in the step (off), or started in the
// last backward once the unit's reduce-scatter lands (on: at most two wait, and
// backward's end lands the rest).
#include <cstring>

#include "parallel/zero.h"

namespace ss {

namespace {

class Zero1 final : public DpStrategy {
public:
    Zero1(RankState& state, const Replicas& replicas, bool overlap)
        : DpStrategy(state), overlap_(overlap), gather_(state, overlap), rep_(state, replicas, overlap) {}

    // The passes read whole parameters (DpStrategy's), once their gather is in.
    const float* params(int u, bool backward) override {
        gather_.need(u);
        return DpStrategy::params(u, backward);
    }
    void settle() override { gather_.settle(); }

    // Overlap: unit u's reduce-scatter starts once the last backward has completed
    // it. Not wte's when a pipeline's other end holds a tied copy: its gradient is
    // summed over the two stages after backward (pipeline.h, sync_tied_grads).
    void grads_ready(int u) override {
        DpStrategy::grads_ready(u);  // Megatron-SP's sums come first
        if (!overlap_ || !s.last_micro) return;
        if (u == 0 && s.layout.part.wte_tied_elsewhere()) return;
        if (gshard_.empty()) gshard_ = Tensor(s.ledger, Mem::comm, {s.shard.plan.shard_size}, s.storage);
        if (started_.empty()) started_.assign(s.units.size(), false);
        // With replicas, the oldest of three in flight lands, and its all-reduce across
        // them starts under backward too (ReplicaGrads, replicas.h).
        if (rep_.active() && in_flight_.size() >= 2) land_oldest();
        const Unit& unit = s.units[size_t(u)];
        s.store_grads(unit.begin, unit.size());
        in_flight_.push_back(start_unit(u));
        started_[size_t(u)] = true;
    }
    // With replicas, the last backward's end lands the rest, so that every all-reduce
    // across them starts in backward (wte's, tied across a pipeline, waits for the step).
    void backward_ends() override {
        if (overlap_ && rep_.active() && s.last_micro)
            while (!in_flight_.empty()) land_oldest();
    }

    void step() override {
        const int step = s.this_step();
        // ZeRO-1 keeps all gradients: store them, then reduce-scatter each unit
        // (overlap: the units not started in backward).
        if (gshard_.empty()) gshard_ = Tensor(s.ledger, Mem::comm, {s.shard.plan.shard_size}, s.storage);
        for (size_t u = 0; u < s.units.size(); ++u) {
            if (u < started_.size() && started_[u]) continue;
            const Unit& unit = s.units[u];
            s.store_grads(unit.begin, unit.size());
            UnitInFlight f = send_copy(int(u));
            s.shard.reduce_scatter(int(u), f.send.data(), RankState::at(gshard_, s.shard.plan.units[u].local),
                                   s.storage, Label{Payload::grad, s.units[u].layer, Phase::step, -1, step});
        }
        for (UnitInFlight& f : in_flight_) s.comm.wait(f.handle);  // the reduce-scatters started in backward
        in_flight_.clear();
        started_.clear();
        // HSDP: each unit's chunk averaged across the replicas (those not started in backward now).
        if (rep_.active())
            for (size_t u = 0; u < s.units.size(); ++u)
                if (!rep_.reduced(int(u))) rep_.reduce(gshard_, int(u), Phase::step);
        rep_.finish();
        gather_.step(gshard_);
        gshard_ = Tensor();
    }

    // A copy of the accumulated gradients, averaged over all of dp here.
    std::vector<float> full_grads() override { return s.averaged_grads(&s.dp); }

private:
    // The oldest reduce-scatter in flight has landed in gshard_: its all-reduce across the replicas starts.
    void land_oldest() {
        const int u = in_flight_.front().unit;
        s.comm.wait(in_flight_.front().handle);
        in_flight_.erase(in_flight_.begin());
        rep_.reduce(gshard_, u, Phase::bwd);
    }
    // Unit u's stored gradients, padded with zeros: what its reduce-scatter sends.
    UnitInFlight send_copy(int u) {
        const ShardPlan::UnitShard& us = s.shard.plan.units[size_t(u)];
        UnitInFlight f;
        f.unit = u;
        f.send = Tensor(s.ledger, Mem::comm, {s.shard.plan.padded(u)}, s.storage);
        std::memcpy(f.send.data(), RankState::at(s.grads, us.begin), size_t(us.end - us.begin) * dtype_size(s.storage));
        return f;
    }
    // Unit u's reduce-scatter, started in backward.
    UnitInFlight start_unit(int u) {
        UnitInFlight f = send_copy(u);
        const ShardPlan::UnitShard& us = s.shard.plan.units[size_t(u)];
        f.handle = s.comm.start_reduce_scatter(f.send.data(), RankState::at(gshard_, us.local), size_t(us.chunk),
                                               s.storage, s.shard.group, ReduceOp::avg,
                                               Label{Payload::grad, s.units[size_t(u)].layer, Phase::bwd, -1, s.this_step()});
        return f;
    }

    bool overlap_;
    StepAndGather gather_;
    ReplicaGrads rep_;                     // the replicas' all-reduce, unit by unit (replicas.h)
    Tensor gshard_;                        // my chunks of the averaged gradients
    std::vector<UnitInFlight> in_flight_;  // overlap: the reduce-scatters started in backward, oldest first
    std::vector<bool> started_;            // overlap: by unit, its reduce-scatter started in backward
};

}  // namespace

void StepAndGather::step(Tensor& grad_shard) {
    // Update my chunks, then all-gather every unit so all ranks hold all params again.
    pshard_ = Tensor(s.ledger, Mem::comm, {s.shard.plan.shard_size}, s.storage);
    for (const Piece& p : s.shard.plan.pieces())
        std::memcpy(RankState::at(pshard_, p.local), RankState::at(s.params, p.flat_begin),
                    size_t(p.flat_end - p.flat_begin) * dtype_size(s.storage));
    s.optim->step(pshard_.data(), grad_shard.data(), s.storage);
    if (!overlap_) {
        s.gather_params(pshard_, s.this_step());
        pshard_ = Tensor();
        return;
    }
    for (size_t u = 0; u < s.units.size(); ++u) {
        Label label{Payload::param, s.units[u].layer, Phase::step, -1, s.this_step()};
        in_flight_.emplace(int(u), s.shard.start_all_gather(int(u), RankState::at(pshard_, s.shard.plan.units[u].local),
                                                            s.storage, label));
    }
}

void StepAndGather::need(int u) {
    auto it = in_flight_.find(u);
    if (it == in_flight_.end()) return;
    UnitInFlight& f = it->second;
    s.comm.wait(f.handle);
    const ShardPlan::UnitShard& us = s.shard.plan.units[size_t(u)];
    std::memcpy(RankState::at(s.params, us.begin), f.whole.data(), size_t(us.end - us.begin) * dtype_size(s.storage));
    s.refresh_compute_copy(us.begin, us.end - us.begin);
    in_flight_.erase(it);
    if (in_flight_.empty()) pshard_ = Tensor();
}

void StepAndGather::settle() {
    while (!in_flight_.empty()) need(in_flight_.begin()->first);
}

std::unique_ptr<DpStrategy> make_zero1(RankState& s, const Replicas& r, bool overlap) {
    return std::make_unique<Zero1>(s, r, overlap);
}

}  // namespace ss
