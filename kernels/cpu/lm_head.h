// lm_head.h — GPT-2's output layer, tied to the token embedding (Press & Wolf 2017).
//
// The same matrix wte[V,C] that embeds tokens also scores them:
//
//   forward:   logits[N,V] = x[N,C] @ wte^T
//   backward:  dx[N,C]   += dlogits @ wte
//              dwte[V,C] += dlogits^T @ x
//
// Under tensor parallelism each rank holds V/tp rows of wte and computes its
// slice of the vocabulary with the same functions.
#pragma once

namespace ss::cpu {

/// logits[N,V] = x[N,C] @ wte[V,C]^T.
void lm_head_forward(float* logits, const float* x, const float* wte, int N, int C, int V);
/// Accumulates dx += dlogits @ wte and dwte += dlogits^T @ x (either may be null).
void lm_head_backward(float* dx, float* dwte, const float* dlogits, const float* x, const float* wte, int N, int C,
                      int V);

}  // namespace ss::cpu
