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
//
// With replicas (HSDP) each unit's chunk is then averaged across them
// (ReplicaGrads, replicas.h): started as soon as the unit's last reduce-
// scatter has landed (overlap on; at most two reduce-scatters wait in the last
// backward, so the early units land under it), blocking at backward's end (off).
#include "parallel/zero.h"

namespace ss {

namespace {

class Zero2 final : public DpStrategy {
public:
    Zero2(RankState& state, const Replicas& replicas, bool overlap)
        : DpStrategy(state), overlap_(overlap), gather_(state, overlap), rep_(state, replicas, overlap) {}

    // Forward and backward read the whole parameters (DpStrategy::params), once
    // their gather is in; a unit's full gradient lives only until it is reduce-scattered.
    const float* params(int u, bool backward) override {
        gather_.need(u);
        return DpStrategy::params(u, backward);
    }
    void settle() override { gather_.settle(); }
    float* grads(int u) override { return s.new_unit_grads(u); }
    void grads_ready(int u) override {
        if (!overlap_ || s.qgz) {  // qgZ's hops are blocking (zeropp.h)
            s.reduce_scatter_unit_grads(u);
            if (overlap_) rep_.shard_unit_done(u);
            return;
        }
        // With replicas, the last backward lands the oldest of three in flight, so
        // that its all-reduce across the replicas starts under backward too.
        if (rep_.active() && s.last_micro && in_flight_.size() >= 2) land_oldest();
        in_flight_.push_back(s.start_reduce_scatter_unit_grads(u));
    }
    void backward_ends() override {
        while (!in_flight_.empty()) land_oldest();
        rep_.shard_backward_done();
    }

    void step() override {
        rep_.shard_step();
        gather_.step(s.grads);  // as ZeRO-1 (zero1.cpp)
    }

    // My chunks are averaged over the shard group already, and over the replicas where
    // they synchronise every step (ReplicaGrads); what remains is averaged on a copy.
    std::vector<float> full_grads() override { return rep_.full_shard_grads(); }

private:
    // The oldest reduce-scatter in flight: its chunk added into my shard; in the last
    // backward, its all-reduce across the replicas started.
    void land_oldest() {
        const int u = in_flight_.front().unit;
        s.shard.finish_reduce_scatter_add(in_flight_.front());
        in_flight_.erase(in_flight_.begin());
        rep_.shard_unit_done(u);
    }

    bool overlap_;
    StepAndGather gather_;
    ReplicaGrads rep_;                     // the replicas' all-reduce, unit by unit (replicas.h)
    std::vector<UnitInFlight> in_flight_;  // overlap: this backward's reduce-scatters, oldest first
};

}  // namespace

std::unique_ptr<DpStrategy> make_zero2(RankState& s, const Replicas& r, bool overlap) {
    return std::make_unique<Zero2>(s, r, overlap);
}

}  // namespace ss
