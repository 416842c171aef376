#include "parallel/data_parallel.h"

namespace ss {

void dp_allreduce_grads_naive(Comm& comm, const Group& dp_group, GPT2& model, int step) {
    if (dp_group.size() == 1) return;
    Tensor& grads = model.grads();
    const size_t es = dtype_size(grads.dtype());
    for (const ParamSpec& s : model.layout().specs) {
        Label label{Payload::grad, s.layer, Phase::bwd, -1, step};
        void* p = static_cast<char*>(grads.data()) + size_t(s.offset) * es;
        comm.all_reduce(p, size_t(s.numel), grads.dtype(), dp_group, ReduceOp::avg, label);
    }
}

}  // namespace ss
