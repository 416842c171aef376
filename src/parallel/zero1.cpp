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
#include <cstring>

#include "parallel/zero.h"

namespace ss {

namespace {

class Zero1 final : public DpStrategy {
public:
    Zero1(RankState& state, const Replicas& replicas) : DpStrategy(state), replicas_(replicas) {}

    // The passes are DpStrategy's: whole parameters, whole gradients.

    void step() override {
        const int step = s.this_step();
        const ShardPlan& plan = s.shard.plan;
        // ZeRO-1 keeps all gradients: store them, then reduce-scatter each unit.
        s.store_grads();
        Tensor gshard(s.ledger, Mem::comm, {plan.shard_size}, s.storage);  // my chunks of the average
        for (size_t u = 0; u < s.units.size(); ++u) {
            const ShardPlan::UnitShard& us = plan.units[u];
            Tensor send(s.ledger, Mem::comm, {plan.padded(int(u))}, s.storage);  // padded with zeros
            std::memcpy(send.data(), RankState::at(s.grads, us.begin),
                        size_t(us.end - us.begin) * dtype_size(s.storage));
            s.shard.reduce_scatter(int(u), send.data(), RankState::at(gshard, us.local), s.storage,
                                   Label{Payload::grad, s.units[u].layer, Phase::step, -1, step});
        }
        replicas_.all_reduce_grads(gshard, step);
        step_chunks_and_gather(s, gshard);
    }

    // A copy of the accumulated gradients, averaged over all of dp here.
    std::vector<float> full_grads() override { return s.averaged_grads(&s.dp); }

private:
    const Replicas& replicas_;
};

}  // namespace

void step_chunks_and_gather(RankState& s, Tensor& grad_shard) {
    // Update my chunks, then all-gather every unit so all ranks hold all params again.
    Tensor pshard(s.ledger, Mem::comm, {s.shard.plan.shard_size}, s.storage);
    for (const Piece& p : s.shard.plan.pieces())
        std::memcpy(RankState::at(pshard, p.local), RankState::at(s.params, p.flat_begin),
                    size_t(p.flat_end - p.flat_begin) * dtype_size(s.storage));
    s.optim->step(pshard.data(), grad_shard.data(), s.storage);
    s.gather_params(pshard, s.this_step());
}

std::unique_ptr<DpStrategy> make_zero1(RankState& s, const Replicas& r) { return std::make_unique<Zero1>(s, r); }

}  // namespace ss
