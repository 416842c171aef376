// zero3.cpp — ZeRO-3 (P_os+g+p): the parameters, the gradients and the
// optimizer states are all partitioned (Rajbhandari et al. 2020,
// arXiv:1910.02054, section 5.3; PyTorch FSDP's FULL_SHARD, Zhao et al. 2023).
// A rank stores only its chunk of every unit. Just before the pass uses a
// unit, the unit is all-gathered from the N chunks, and freed right after;
// its gradient is reduce-scattered as soon as backward completes it. The
// step updates the shard in place: nothing is re-assembled.
//
//                      params    grads     optimizer (fp32 master, m, v)
//   stage 3 (P_os+g+p) my 1/N    my 1/N    my 1/N         16 Psi / N
//
//   rank:        0            1            2            3
//   unit u:  [ chunk 0  |  chunk 1  |  chunk 2  |  chunk 3 ]   (shard_plan.h)
//
//   forward of u:   all_gather(u's params) -> every rank holds all of u -> compute -> free
//   backward of u:  all_gather(u's params) again -> compute -> free;
//                   reduce_scatter(u's grads) -> my chunk of the average; free    3 Psi (N-1)/N
//   step:           AdamW on my shard (no communication)
//
// The whole model never exists on one rank: at any moment a rank holds its
// shard plus the few units in use (Mem::comm), which is what lets ZeRO-3
// scale the model with N. Compare tensor parallelism (tensor_parallel.h),
// which also splits every layer but moves activations, not parameters.
#include "parallel/zero.h"

#include <map>

#include "kernels/dispatch.h"

namespace ss {

namespace {

class Zero3 final : public DpStrategy {
public:
    Zero3(RankState& state, const Replicas& replicas) : DpStrategy(state), replicas_(replicas) {}

    // Gather unit u from its N chunks just before it is used (comm), and
    // widen it for the math (workspace) in a bf16 run.
    const float* params(int u, bool backward) override {
        const ShardPlan::UnitShard& us = s.shard.plan.units[size_t(u)];
        Label label{Payload::param, s.units[size_t(u)].layer, backward ? Phase::bwd : Phase::fwd, s.micro,
                    s.this_step()};
        Tensor& g = gathered_[u] = s.shard.all_gather(u, RankState::at(s.params, us.local), s.storage, label);
        if (s.storage == DType::f32) return g.f32();
        Tensor& w = gathered_f32_[u] = Tensor(s.ledger, Mem::workspace, {g.numel()}, DType::f32, false);
        kern::bf16_to_f32(w.f32(), g.bf16(), size_t(g.numel()));
        return w.f32();
    }

    // Free the gathered unit: only my chunk of it stays.
    void release(int u, bool) override {
        gathered_.erase(u);
        gathered_f32_.erase(u);
    }

    // The unit's full gradient lives only until it is reduce-scattered into
    // my gradient shard (shard_plan.h, ShardGroup::reduce_scatter_add).
    float* grads(int u) override { return s.new_unit_grads(u); }
    void grads_ready(int u) override { s.reduce_scatter_unit_grads(u); }

    // Step my shard: the gradient shard (averaged across replicas, replicas.h)
    // updates the parameter shard in place.
    void step() override {
        s.store_grads();
        replicas_.all_reduce_grads(s.grads, s.this_step());
        s.optim->step(s.params.data(), s.grads.data(), s.storage);
    }

    // My chunks are averaged over the shard group already; the replicas remain.
    std::vector<float> full_grads() override { return s.averaged_grads(s.rep.size() > 1 ? &s.rep : nullptr); }

private:
    const Replicas& replicas_;
    std::map<int, Tensor> gathered_, gathered_f32_;  // the units in use (comm / workspace)
};

}  // namespace

std::unique_ptr<DpStrategy> make_zero3(RankState& s, const Replicas& r) { return std::make_unique<Zero3>(s, r); }

}  // namespace ss
