// data_parallel.h — data parallelism (DDP): same model on every rank,
// different micro-batches, gradients averaged before the step.
//
//        rank 0           rank 1           rank 2           rank 3
//     batch rows 0-1   batch rows 2-3   batch rows 4-5   batch rows 6-7
//     fwd + bwd        fwd + bwd        fwd + bwd        fwd + bwd
//          \________________|________________|________________/
//                 all_reduce(avg) of every gradient, axis dp
//     AdamW step       AdamW step       AdamW step       AdamW step   (identical on all)
//
// Because each rank's gradient is the mean over its own tokens, their average
// is the mean over the global batch: the update is exactly the single-rank
// update on MBS x DP sequences (Goyal et al. 2017, section 2; Li et al. 2020,
// "PyTorch Distributed", section 3).
//
// Two versions, side by side (--bucket-mb picks the second):
//
//  - naive: after the whole backward, one all_reduce per parameter tensor;
//  - bucketed (PyTorch DDP, Li et al. 2020, section 3.2.3): tensors are packed,
//    in reverse order, into buckets of about --bucket-mb MiB, and a bucket is
//    all-reduced as soon as every gradient in it is complete, while backward
//    goes on with earlier layers. Fewer, larger calls (latency paid once per
//    bucket); with an asynchronous backend the calls would also overlap with
//    compute. On the threads backend each call blocks, so the trace shows
//    the buckets interleaved with backward but not overlapping it.
//
// With gradient accumulation only the last micro-batch communicates.
// Volume per rank and step on a ring: 2 (n-1)/n x Psi elements.
//
// Stage 0 of ZeRO's table (zero.h): every rank holds all the parameters, all
// the gradients and all of AdamW's state, (2 + 2 + 12) Psi bytes in bf16.
//
//   stage 0   backward:  all_reduce(grads)                               2 Psi (N-1)/N
//
// The strategy itself (zero.h, make_ddp_naive / make_ddp_bucketed) is in
// data_parallel.cpp, below the helpers declared here. With replica groups
// (replicas.h) the all-reduce spans all of dp, or only the shard group when
// local SGD leaves the replicas apart.
#pragma once

#include <vector>

#include "comm/comm.h"
#include "core/tensor.h"
#include "model/params.h"

namespace ss {

/// A contiguous range [begin, end) of the flat gradient buffer, all-reduced as one call.
struct GradBucket {
    int64_t begin = 0;  ///< first flat element
    int64_t end = 0;    ///< one past the last
};

/// Averages @p grads (the whole flat buffer, fp32 or bf16) over @p group,
/// one all_reduce per parameter tensor (naive DDP).
void dp_allreduce_naive(Comm& comm, const Group& group, Tensor& grads, const ParamLayout& layout, int step);

/// Buckets of whole tensors, of at least @p bucket_bytes each (the last may be
/// smaller), in the order backward completes them: from the end of the flat
/// buffer towards its start (PyTorch DDP's reverse-order bucketing).
std::vector<GradBucket> make_grad_buckets(const ParamLayout& layout, size_t bucket_bytes, size_t elem_size);

/// Averages one bucket of @p grads over @p group.
void dp_allreduce_bucket(Comm& comm, const Group& group, Tensor& grads, const GradBucket& b, int step);

}  // namespace ss
