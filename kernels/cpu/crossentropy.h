// crossentropy.h — softmax cross-entropy over the vocabulary, forward and backward.
//
// N rows (tokens) of V logits. probs = softmax(logits) (max-subtracted for
// stability); loss_n = -log probs[n, target_n]. The mean loss over the N rows
// is what training reports. Backward of the mean loss:
//
//   dlogits[n, v] += (probs[n, v] - [v == target_n]) * dloss_n     (dloss_n = 1/N for the mean)
#pragma once

namespace ss::cpu {

/// Writes probs[N,V] and losses[N]; returns the mean of losses.
float crossentropy_forward(float* losses, float* probs, const float* logits, const int* targets, int N, int V);
/// Accumulates into dlogits[N,V] with dloss = @p dloss for every row (1/N for the mean loss).
void crossentropy_backward(float* dlogits, const float* probs, const int* targets, float dloss, int N, int V);

}  // namespace ss::cpu
