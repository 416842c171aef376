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
//
// Prefetch (--overlap on, --prefetch K), as FSDP's forward and backward
// prefetch: when the pass takes unit u, the gathers of the next K units in
// the pass's order (unit_order, model/gpt2.h) are started, so they travel
// while u computes; and u's reduce-scatter is started, not waited for:
//
//   forward:   params(u) -> wait for u's gather; start gathers of u+1 .. u+K -> compute u
//   backward:  the same in backward's order; grads_ready(u) -> start u's reduce-scatter
//   replicas:  in the last backward, each unit's chunk all-reduced across them once its
//              reduce-scatter lands (ReplicaGrads, replicas.h); backward's end waits
//
// The K units in flight are booked in Mem::comm from the moment their gather
// starts: prefetch trades memory for time. With MBS 1 a unit's compute can
// be shorter than its gather, and then no depth hides it (tutorials/12-overlap.md).
//
// hpZ (--hpz K, ZeRO++: Wang et al. 2023, arXiv:2306.10209, sec. 3.2). The
// primary partition stays: params, grads and optimizer states over all N. The
// forward gather over N also leaves each rank 1/K of the unit, its slice of a
// group of K consecutive members (one node when K is the ranks per node): the
// secondary partition, Mem::hpz. The backward gathers the unit from those,
// inside the group, so the second gather never crosses nodes:
//
//   N = 8, K = 4:    forward   all_gather over 8 ranks -> whole u; keep slice (i mod 4) of 4
//                    backward  all_gather over ranks {0..3} or {4..7} of those slices -> whole u
//                    gradients reduce_scatter over 8, as ZeRO-3
//
// Padding: u is padded to N chunks of c; a secondary slice is N/K of them, so
// the K slices put back the same padded unit, and the bits are ZeRO-3's. The
// parameters do not change within a step, so a unit's slice, kept at its first
// forward, serves every micro-batch's backward (a pipeline runs several
// forwards before their backwards) and is freed at the step.
//
// qwZ (--qwz, ZeRO++ sec. 3.1): every gather from the primary partition moves
// int8 blocks and is dequantized on arrival (zeropp.h); with hpZ the secondary
// partition keeps the dequantized slice, so backward sees forward's weights.
// qgZ (--qgz, sec. 3.3) replaces the gradients' reduce-scatter (RankState::qgz).
#include "parallel/zero.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>

#include "kernels/dispatch.h"

namespace ss {

namespace {

class Zero3 final : public DpStrategy {
public:
    Zero3(RankState& state, const Replicas& replicas, const ZeroConfig& zc)
        : DpStrategy(state),
          rep_(state, replicas, zc.overlap),
          overlap_(zc.overlap),
          prefetch_(zc.overlap ? zc.prefetch : 0),
          qwz_block_(zc.qwz ? zc.quant_block : 0),
          order_{unit_order(state.layout, false), unit_order(state.layout, true)} {
        if (zc.hpz > 0) node_ = std::make_unique<ShardGroup>(secondary_group(zc.hpz));
    }

    // Gather unit u from its N chunks just before it is used (comm), and
    // widen it for the math (workspace) in a bf16 run. With prefetch, u's
    // gather may be in flight already, and the next units' gathers start here.
    const float* params(int u, bool backward) override {
        auto pre = prefetched_.find(u);
        Tensor& g = gathered_[u];
        if (pre != prefetched_.end()) {
            if (pre->second.wire.numel() > 0)
                finish_qwz_all_gather(s.shard, pre->second, qwz_block_);
            else
                s.comm.wait(pre->second.handle);
            g = std::move(pre->second.whole);
            prefetched_.erase(pre);
        } else if (from_secondary(u, backward)) {
            g = node_->all_gather(u, secondary_[u].data(), s.storage, label(u, backward));
        } else if (qwz_block_ > 0) {
            g = qwz_all_gather(s.shard, u, my_chunk(u), s.storage, qwz_block_, label(u, backward));
        } else {
            g = s.shard.all_gather(u, my_chunk(u), s.storage, label(u, backward));
        }
        if (node_ && !backward && !secondary_.count(u)) keep_secondary(u, g);
        prefetch_after(u, backward);
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
    void grads_ready(int u) override {
        if (!overlap_ || s.qgz) {  // qgZ's hops are blocking (zeropp.h)
            s.reduce_scatter_unit_grads(u);
            if (overlap_) rep_.shard_unit_done(u);
            return;
        }
        // Started; at most two in flight, so the unit gradients waiting for the
        // wire stay few (FSDP limits them the same way).
        if (reducing_.size() >= 2) land_oldest();
        reducing_.push_back(s.start_reduce_scatter_unit_grads(u));
    }
    void backward_ends() override {
        while (!reducing_.empty()) land_oldest();
        rep_.shard_backward_done();
    }

    // Step my shard: the gradient shard (averaged across replicas, replicas.h)
    // updates the parameter shard in place.
    void step() override {
        secondary_.clear();  // hpZ: the parameters change here; the next forward keeps new slices
        rep_.shard_step();
        s.optim->step(s.params.data(), s.grads.data(), s.storage);
    }

    // My chunks are averaged over the shard group already, and over the replicas where
    // they synchronise every step (ReplicaGrads); what remains is averaged on a copy.
    std::vector<float> full_grads() override { return rep_.full_shard_grads(); }

private:
    // The oldest reduce-scatter in flight: its chunk added into my shard; in the last
    // backward, its all-reduce across the replicas started (ReplicaGrads).
    void land_oldest() {
        const int u = reducing_.front().unit;
        s.shard.finish_reduce_scatter_add(reducing_.front());
        reducing_.erase(reducing_.begin());
        rep_.shard_unit_done(u);
    }
    const void* my_chunk(int u) { return RankState::at(s.params, s.shard.plan.units[size_t(u)].local); }
    Label label(int u, bool backward) const {
        return Label{Payload::param, s.units[size_t(u)].layer, backward ? Phase::bwd : Phase::fwd, s.micro,
                     s.this_step()};
    }
    // Starts the gathers of the prefetch_ units that follow u in this pass's
    // order and are neither held nor in flight. Units past the pass's end are
    // left for the next pass, which gathers them when it needs them.
    void prefetch_after(int u, bool backward) {
        if (prefetch_ == 0) return;
        const std::vector<int>& order = order_[backward];
        auto at = std::find(order.begin(), order.end(), u);
        if (at == order.end()) return;
        for (auto next = at + 1; next != order.end() && next - at <= prefetch_; ++next) {
            const int v = *next;
            if (gathered_.count(v) || prefetched_.count(v)) continue;
            const Label l = label(v, backward);
            prefetched_.emplace(v, from_secondary(v, backward) ? node_->start_all_gather(v, secondary_[v].data(), s.storage, l)
                                   : qwz_block_ > 0 ? start_qwz_all_gather(s.shard, v, my_chunk(v), s.storage, qwz_block_, l)
                                                    : s.shard.start_all_gather(v, my_chunk(v), s.storage, l));
        }
    }

    // hpZ: the group of K and its partition of each padded unit into K slices of N/K chunks.
    ShardGroup secondary_group(int k) const {
        return ShardGroup{s.comm, hpz_group(s.shard.group, s.comm.rank(), k), hpz_secondary_plan(s.shard.plan, k),
                          s.ledger};
    }
    // hpZ: unit u's backward gathers it from the secondary partition.
    bool from_secondary(int u, bool backward) const { return backward && node_ && secondary_.count(u); }
    // hpZ: keep my slice of the gathered unit @p whole (padded) until its backward.
    void keep_secondary(int u, const Tensor& whole) {
        const int64_t slice = node_->plan.units[size_t(u)].chunk;
        const size_t es = dtype_size(s.storage);
        Tensor& mine = secondary_[u] = Tensor(s.ledger, Mem::hpz, {slice}, s.storage, false);
        std::memcpy(mine.data(), static_cast<const char*>(whole.data()) + size_t(node_->plan.index * slice) * es,
                    size_t(slice) * es);
    }

    ReplicaGrads rep_;                               // the replicas' all-reduce, unit by unit (replicas.h)
    bool overlap_;
    int prefetch_;                                   // units gathered ahead (0 without overlap)
    int qwz_block_;                                  // qwZ: elements per quantization block (0: off, zeropp.h)
    std::vector<int> order_[2];                      // the order the passes take units: forward, backward
    std::map<int, Tensor> gathered_, gathered_f32_;  // the units in use (comm / workspace)
    std::map<int, UnitInFlight> prefetched_;         // gathers started ahead of use
    std::vector<UnitInFlight> reducing_;             // reduce-scatters in flight, oldest first
    std::unique_ptr<ShardGroup> node_;               // hpZ: the group of K and its partition (null: off)
    std::map<int, Tensor> secondary_;                // hpZ: my slice of each unit, first forward to the step (Mem::hpz)
};

}  // namespace

std::unique_ptr<DpStrategy> make_zero3(RankState& s, const Replicas& r, const ZeroConfig& zc) {
    return std::make_unique<Zero3>(s, r, zc);
}

}  // namespace ss
