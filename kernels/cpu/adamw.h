// adamw.h — AdamW, Adam with decoupled weight decay (Loshchilov & Hutter 2019, Algorithm 2).
//
// For every element, at step t (1-based):
//   m = beta1 m + (1 - beta1) g
//   v = beta2 v + (1 - beta2) g^2
//   mhat = m / (1 - beta1^t),  vhat = v / (1 - beta2^t)
//   p -= lr * ( mhat / (sqrt(vhat) + eps) + weight_decay * p )
//
// This matches torch.optim.AdamW. The caller passes weight_decay = 0 for the
// tensors that are not decayed (biases, LayerNorm).
#pragma once

namespace ss::cpu {

/// Hyper-parameters of one AdamW update.
struct AdamWParams {
    float lr = 3e-4f;           ///< learning rate
    float beta1 = 0.9f;         ///< decay rate of m (first moment)
    float beta2 = 0.95f;        ///< decay rate of v (second moment)
    float eps = 1e-8f;          ///< added to sqrt(vhat) in the denominator
    float weight_decay = 0.1f;  ///< decoupled decay, scaled by lr
};

/// Updates n elements of params, m and v in place from grads, at step t (1-based).
void adamw_update(float* params, const float* grads, float* m, float* v, long n, int t, const AdamWParams& hp);

}  // namespace ss::cpu
