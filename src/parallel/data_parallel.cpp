// data_parallel.cpp — DDP: the all-reduce helpers, then the strategy, naive
// and bucketed side by side. The picture is in data_parallel.h.
#include "parallel/data_parallel.h"

#include "parallel/zero.h"

namespace ss {

static void* elem_ptr(Tensor& t, int64_t i) { return static_cast<char*>(t.data()) + size_t(i) * dtype_size(t.dtype()); }

void dp_allreduce_naive(Comm& comm, const Group& group, Tensor& grads, const ParamLayout& layout, int step) {
    if (group.size() == 1) return;
    for (const ParamSpec& s : layout.specs) {
        Label label{Payload::grad, s.layer, Phase::bwd, -1, step};
        comm.all_reduce(elem_ptr(grads, s.offset), size_t(s.numel), grads.dtype(), group, ReduceOp::avg, label);
    }
}

std::vector<GradBucket> make_grad_buckets(const ParamLayout& layout, size_t bucket_bytes, size_t elem_size) {
    std::vector<GradBucket> buckets;
    GradBucket cur{layout.total, layout.total};
    for (auto it = layout.specs.rbegin(); it != layout.specs.rend(); ++it) {
        cur.begin = it->offset;
        if (size_t(cur.end - cur.begin) * elem_size >= bucket_bytes) {
            buckets.push_back(cur);
            cur = GradBucket{cur.begin, cur.begin};
        }
    }
    if (cur.end > cur.begin) buckets.push_back(cur);
    return buckets;
}

void dp_allreduce_bucket(Comm& comm, const Group& group, Tensor& grads, const GradBucket& b, int step) {
    if (group.size() == 1) return;
    Label label{Payload::grad, -1, Phase::bwd, -1, step};
    comm.all_reduce(elem_ptr(grads, b.begin), size_t(b.end - b.begin), grads.dtype(), group, ReduceOp::avg, label);
}

// ---- the strategy (zero.h, DpStrategy) -----------------------------------------------------

namespace {

// What both versions share: the passes over whole parameters and gradients
// (DpStrategy's defaults), and a step on gradients already averaged in backward.
class Ddp : public DpStrategy {
public:
    Ddp(RankState& state, const Replicas& replicas) : DpStrategy(state), replicas_(replicas) {}

    // Every rank holds the same average: AdamW on all of it, as on one rank.
    void step() override {
        s.optim->step(s.params.data(), s.grads.data(), s.storage);
        s.refresh_compute_copy();
    }
    std::vector<float> full_grads() override { return s.gather_full(s.grads, false, Payload::grad); }
    // Averaged in backward, into the stored gradients.
    GradSpan wte_grads() override {
        const Unit& wte = s.units[0];
        return GradSpan{RankState::at(s.grads, wte.begin), size_t(wte.size()), s.storage};
    }

protected:
    const Replicas& replicas_;
};

// Naive: after the step's last backward, one all_reduce per parameter tensor.
// With overlap, each tensor's all_reduce starts as soon as backward has
// completed its unit, and backward's end waits for them all.
class DdpNaive final : public Ddp {
public:
    DdpNaive(RankState& state, const Replicas& replicas, bool overlap) : Ddp(state, replicas), overlap_(overlap) {}

    void grads_ready(int u) override {
        DpStrategy::grads_ready(u);  // Megatron-SP's sums come first
        if (!overlap_ || !s.last_micro) return;
        const Unit& unit = s.units[size_t(u)];
        s.store_grads(unit.begin, unit.size());
        if (replicas_.ddp_group().size() == 1) return;
        for (const ParamSpec& t : s.layout.specs) {
            if (t.offset < unit.begin || t.offset >= unit.end) continue;
            Label label{Payload::grad, t.layer, Phase::bwd, -1, s.this_step()};
            in_flight_.push_back(s.comm.start_all_reduce(elem_ptr(s.grads, t.offset), size_t(t.numel), s.storage,
                                                         replicas_.ddp_group(), ReduceOp::avg, label));
        }
    }
    void backward_ends() override {
        if (!s.last_micro) return;
        if (overlap_) {
            for (CommHandle& h : in_flight_) s.comm.wait(h);
            in_flight_.clear();
            return;
        }
        s.store_grads();
        dp_allreduce_naive(s.comm, replicas_.ddp_group(), s.grads, s.layout, s.this_step());
    }

private:
    bool overlap_;
    std::vector<CommHandle> in_flight_;  // overlap: this backward's all-reduces
};

// Bucketed: a bucket is all-reduced as soon as backward has completed every
// gradient in it, while backward goes on with earlier layers.
// With overlap (PyTorch DDP's way) the all_reduce is started, so the bucket
// travels while backward computes the layers before it; backward's end waits.
class DdpBucketed final : public Ddp {
public:
    DdpBucketed(RankState& state, const Replicas& replicas, double bucket_mb, bool overlap)
        : Ddp(state, replicas),
          buckets_(make_grad_buckets(state.layout, size_t(bucket_mb * 1048576.0), dtype_size(state.storage))),
          overlap_(overlap) {}

    void backward_begins() override { next_bucket_ = 0; }
    void backward_ends() override {
        for (CommHandle& h : in_flight_) s.comm.wait(h);
        in_flight_.clear();
    }
    void grads_ready(int u) override {
        DpStrategy::grads_ready(u);  // Megatron-SP's sums come first
        if (!s.last_micro) return;
        const Unit& unit = s.units[size_t(u)];
        s.store_grads(unit.begin, unit.size());
        // Units complete from the end of the flat buffer towards its start, and
        // buckets are laid out in that order: a bucket is complete once the
        // completed region reaches its first element.
        while (next_bucket_ < buckets_.size() && buckets_[next_bucket_].begin >= unit.begin) {
            const GradBucket& b = buckets_[next_bucket_++];
            if (!overlap_ || replicas_.ddp_group().size() == 1) {
                dp_allreduce_bucket(s.comm, replicas_.ddp_group(), s.grads, b, s.this_step());
                continue;
            }
            Label label{Payload::grad, -1, Phase::bwd, -1, s.this_step()};
            in_flight_.push_back(s.comm.start_all_reduce(elem_ptr(s.grads, b.begin), size_t(b.end - b.begin),
                                                         s.storage, replicas_.ddp_group(), ReduceOp::avg, label));
        }
    }

private:
    std::vector<GradBucket> buckets_;  // in launch order
    size_t next_bucket_ = 0;
    bool overlap_;
    std::vector<CommHandle> in_flight_;  // overlap: this backward's bucket all-reduces
};

}  // namespace

std::unique_ptr<DpStrategy> make_ddp_naive(RankState& s, const Replicas& r, bool overlap) {
    return std::make_unique<DdpNaive>(s, r, overlap);
}

std::unique_ptr<DpStrategy> make_ddp_bucketed(RankState& s, const Replicas& r, double bucket_mb, bool overlap) {
    return std::make_unique<DdpBucketed>(s, r, bucket_mb, overlap);
}

}  // namespace ss
