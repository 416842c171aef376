#include "parallel/tensor_parallel.h"

#include <algorithm>

#include "core/tensor.h"

namespace ss {

TensorParallelComm::TensorParallelComm(Comm& comm, Group tp_group, Ledger& ledger, bool sequence_parallel)
    : comm_(comm),
      group_(std::move(tp_group)),
      ledger_(ledger),
      rank_(group_.index_of(comm.rank())),
      sequence_parallel_(sequence_parallel) {}

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
    Tensor gathered(ledger_, Mem::comm, {n * size()}, DType::f32, false);  // written whole by the all_gather
    const float* all = gathered.f32();
    comm_.all_gather(x, gathered.f32(), size_t(n), group_, Label{Payload::act, -1, Phase::fwd, microbatch_, step_});
    for (long i = 0; i < n; ++i)
        for (int r = 0; r < size(); ++r) x[i] = std::max(x[i], all[size_t(r) * size_t(n) + size_t(i)]);
}

void TensorParallelComm::sum_over_ranks(float* x, long n) {
    if (size() == 1) return;
    comm_.all_reduce(x, size_t(n), group_, ReduceOp::sum, Label{Payload::act, -1, Phase::fwd, microbatch_, step_});
}

void TensorParallelComm::sum_sequence_parallel_grads(const ParamLayout& layout, int64_t begin, int64_t end,
                                                     float* grads) {
    // Korthikanti et al. 2022, section 4.2.2: the replicated parameters' gradients are summed over the tp group.
    for (const ParamSpec& s : layout.specs)
        if (s.split == Split::none && s.offset >= begin && s.offset < end)
            comm_.all_reduce(grads + (s.offset - begin), size_t(s.numel), group_, ReduceOp::sum,
                             Label{Payload::grad, s.layer, Phase::bwd, microbatch_, step_});
}

// The sequence axis of [B, T, C] is the middle one, so rank r's tokens of each
// sequence are B separate runs: the collectives move [t][B][Tl][C] blocks and
// we put the tokens in place around them.

void TensorParallelComm::gather_seq(const float* mine, float* all, int B, int Tl, int C, int layer, bool backward) {
    const int t = size();
    const size_t block = size_t(B) * Tl * C, row = size_t(Tl) * C;
    Tensor gathered(ledger_, Mem::comm, {int64_t(block) * t}, DType::f32, false);  // written whole
    const float* recv = gathered.f32();
    comm_.all_gather(mine, gathered.f32(), block, group_, label(layer, backward));
    for (int r = 0; r < t; ++r)
        for (int b = 0; b < B; ++b)
            std::copy(&recv[r * block + b * row], &recv[r * block + b * row] + row, all + (size_t(b) * t + r) * row);
}

void TensorParallelComm::scatter_seq(const float* all, float* mine, int B, int Tl, int C, int layer, bool backward) {
    const int t = size();
    const size_t block = size_t(B) * Tl * C, row = size_t(Tl) * C;
    Tensor packed(ledger_, Mem::comm, {int64_t(block) * t}, DType::f32, false);  // written whole, below
    float* send = packed.f32();
    for (int r = 0; r < t; ++r)
        for (int b = 0; b < B; ++b)
            std::copy(all + (size_t(b) * t + r) * row, all + (size_t(b) * t + r) * row + row, &send[r * block + b * row]);
    comm_.reduce_scatter(send, mine, block, group_, ReduceOp::sum, label(layer, backward));
}

}  // namespace ss
