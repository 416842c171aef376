#include "parallel/tensor_parallel.h"

#include <algorithm>
#include <vector>

namespace ss {

TensorParallelComm::TensorParallelComm(Comm& comm, Group tp_group)
    : comm_(comm), group_(std::move(tp_group)), rank_(group_.index_of(comm.rank())) {}

void TensorParallelComm::g_forward(float* x, long n, int layer) {
    if (size() == 1) return;
    comm_.all_reduce(x, size_t(n), group_, ReduceOp::sum, Label{Payload::act, layer, Phase::fwd, microbatch_, step_});
}

void TensorParallelComm::f_backward(float* dx, long n, int layer) {
    if (size() == 1) return;
    comm_.all_reduce(dx, size_t(n), group_, ReduceOp::sum,
                     Label{Payload::act_grad, layer, Phase::bwd, microbatch_, step_});
}

void TensorParallelComm::max_over_ranks(float* x, long n) {
    if (size() == 1) return;
    // The comm layer reduces by sum or average only; a max is an all_gather
    // followed by a local max (n values per rank: one per token).
    std::vector<float> all(size_t(n) * size_t(size()));
    comm_.all_gather(x, all.data(), size_t(n), group_, Label{Payload::act, -1, Phase::fwd, microbatch_, step_});
    for (long i = 0; i < n; ++i)
        for (int r = 0; r < size(); ++r) x[i] = std::max(x[i], all[size_t(r) * size_t(n) + size_t(i)]);
}

void TensorParallelComm::sum_over_ranks(float* x, long n) {
    if (size() == 1) return;
    comm_.all_reduce(x, size_t(n), group_, ReduceOp::sum, Label{Payload::act, -1, Phase::fwd, microbatch_, step_});
}

}  // namespace ss
