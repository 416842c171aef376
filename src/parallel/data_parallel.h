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
// Because each rank's gradient is the mean over its own tokens, their
// average is the mean over the global batch: the update is exactly the
// single-rank update on MBS x DP sequences (Goyal et al. 2017, section 2;
// Li et al. 2020, "PyTorch Distributed", section 3).
//
// This is the naive version: one all_reduce per parameter tensor after the
// whole backward (PyTorch DDP's bucketing and overlap come with the ZeRO
// work). Communication volume per rank: 2 (n-1)/n x Psi elements per step on
// a ring (all_reduce = reduce_scatter + all_gather).
#pragma once

#include "comm/comm.h"
#include "model/gpt2.h"

namespace ss {

/// Averages the stored gradients (fp32 or bf16) of @p model over @p dp_group,
/// one all_reduce per parameter tensor (naive DDP). Call after GPT2::store_grads().
void dp_allreduce_grads_naive(Comm& comm, const Group& dp_group, GPT2& model, int step);

}  // namespace ss
