// zero2.cpp — ZeRO-2 (P_os+g): the optimizer states and the gradients are
// partitioned (Rajbhandari et al. 2020, arXiv:1910.02054, section 5.2).
// Each unit's gradient is reduce-scattered as soon as backward completes it,
// so a rank keeps only its chunk of the gradients; the step is ZeRO-1's.
//
//                      params    grads     optimizer (fp32 master, m, v)
//   stage 2 (P_os+g)   all       my 1/N    my 1/N         2 Psi + 14 Psi/N
//
//   backward of unit u:  full gradient of u (workspace, this micro-batch)
//                        reduce_scatter(u) -> my chunk, added into my gradient shard; free u
//   step:                AdamW on my chunks, all_gather(each unit's params)     2 Psi (N-1)/N
//
// With gradient accumulation every micro-batch reduce-scatters (a chunk can
// only accumulate what it has received), where ZeRO-1 communicates once.
//
// With overlap (--overlap on) each unit's reduce-scatter is started, so it
// travels while backward computes the units before it; backward's end waits
// for them and adds my chunks in, in the same order. The step's all-gather
// runs under the next forward, as ZeRO-1's (zero1.cpp, StepAndGather).
#include "parallel/zero.h"

namespace ss {

namespace {

class Zero2 final : public DpStrategy {
public:
    Zero2(RankState& state, const Replicas& replicas, bool overlap)
        : DpStrategy(state), replicas_(replicas), overlap_(overlap), gather_(state, overlap) {}

    // Forward and backward read the whole parameters (DpStrategy::params), once
    // their gather is in; a unit's full gradient lives only until it is reduce-scattered.
    const float* params(int u, bool backward) override {
        gather_.need(u);
        return DpStrategy::params(u, backward);
    }
    void settle() override { gather_.settle(); }
    float* grads(int u) override { return s.new_unit_grads(u); }
    void grads_ready(int u) override {
        if (!overlap_ || s.qgz) return s.reduce_scatter_unit_grads(u);  // qgZ's hops are blocking (zeropp.h)
        in_flight_.push_back(s.start_reduce_scatter_unit_grads(u));
    }
    void backward_ends() override {
        for (UnitInFlight& f : in_flight_) s.shard.finish_reduce_scatter_add(f);
        in_flight_.clear();
    }

    void step() override {
        s.store_grads();
        replicas_.all_reduce_grads(s.grads, s.this_step());
        gather_.step(s.grads);  // as ZeRO-1 (zero1.cpp)
    }

    // My chunks are averaged over the shard group already; the replicas remain.
    std::vector<float> full_grads() override { return s.averaged_grads(s.rep.size() > 1 ? &s.rep : nullptr); }

private:
    const Replicas& replicas_;
    bool overlap_;
    StepAndGather gather_;
    std::vector<UnitInFlight> in_flight_;  // overlap: this backward's reduce-scatters
};

}  // namespace

std::unique_ptr<DpStrategy> make_zero2(RankState& s, const Replicas& r, bool overlap) {
    return std::make_unique<Zero2>(s, r, overlap);
}

}  // namespace ss
