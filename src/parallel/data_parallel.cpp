#include "parallel/data_parallel.h"

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

}  // namespace ss
