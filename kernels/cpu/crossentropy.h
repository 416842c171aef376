// crossentropy.h — softmax cross-entropy over the vocabulary, forward and backward.
//
// N rows (tokens) of V logits. probs = softmax(logits) (max-subtracted for
// stability); loss_n = -log probs[n, target_n]. The mean loss over the N rows
// is what training reports. Backward of the mean loss:
//
//   dlogits[n, v] += (probs[n, v] - [v == target_n]) * dloss_n     (dloss_n = 1/N for the mean)
//
// A row holds Vp >= V logits (the padded vocabulary, model/config.h
// padded_vocab; llm.c's (V, Vp) pair): only the first V are words. The padding
// columns are left out of the softmax (their probs are 0) and get no gradient.
#pragma once

namespace ss::cpu {

/// Writes probs[N,Vp] (0 in the padding columns V..Vp-1) and losses[N]; returns the mean of losses.
float crossentropy_forward(float* losses, float* probs, const float* logits, const int* targets, int N, int V,
                           int Vp);
/// Accumulates into the first V columns of dlogits[N,Vp] with dloss = @p dloss for every row
/// (1/N for the mean loss); the padding columns are not touched. With @p overwrite it writes
/// them instead, 0 + the gradient (the same bits as accumulating into zeros) and 0 in the
/// padding, so a fresh buffer needs no zero-fill: N x Vp floats a step (824 MB for GPT-2 at
/// 4 x 1024 tokens).
void crossentropy_backward(float* dlogits, const float* probs, const int* targets, float dloss, int N, int V, int Vp,
                           bool overwrite = false);

}  // namespace ss::cpu
