// crossentropy.h — softmax cross-entropy over the vocabulary on the GPU, forward and backward.
// The twin of kernels/cpu/crossentropy.h: same arguments, device pointers, a stream.
//
// N rows (tokens) of Vp logits, the first V of them words (Vp - V padding
// columns: probs 0, no gradient). probs = softmax(logits); loss_n = -log probs[n, target_n].
//
//   dlogits[n, v] += (probs[n, v] - [v == target_n]) * dloss      (dloss = 1/N for the mean)
//
// Two differences from the CPU twin, both because a kernel cannot stop the
// host: the forward returns nothing (the mean of losses[N] is the caller's to
// take; returning it would wait for the GPU), and a target outside [0, V)
// cannot throw: its loss is written as NaN, which the training loop's NaN
// check reports, and its row of dlogits gets no -1 term.
#pragma once

#include <cuda_runtime.h>

namespace ss::cuda {

/// Writes probs[N,Vp] (0 in the padding columns) and losses[N] (NaN for a target outside [0, V)); on @p stream.
void crossentropy_forward(float* losses, float* probs, const float* logits, const int* targets, int N, int V,
                          int Vp, cudaStream_t stream);
/// Accumulates into the V word columns of dlogits[N,Vp] with dloss = @p dloss for every row
/// (1/N for the mean loss); on @p stream.
void crossentropy_backward(float* dlogits, const float* probs, const int* targets, float dloss, int N, int V,
                           int Vp, cudaStream_t stream);

}  // namespace ss::cuda
