// crossentropy.cpp — softmax cross-entropy over the vocabulary, forward and backward.
//
// For one row z of V logits and its target y:
//
//   probs_v = e^(z_v - zmax) / S,   S = sum_u e^(z_u - zmax)      (softmax; subtracting
//                                    zmax = max_u z_u changes nothing but keeps e^ <= 1)
//   loss    = -log probs_y = log S - (z_y - zmax)                  (log-sum-exp form)
//
//   dloss/dz_v = probs_v - [v == y]                                (softmax + NLL, e.g.
//                                    Goodfellow et al., Deep Learning, section 6.2.2.3)
//
// The loss is taken in the log-sum-exp form, as PyTorch's log_softmax does:
// -log(probs_y) would return inf once probs_y underflows to 0 in float,
// while log S - (z_y - zmax) stays finite. Sums run over 16 float lanes (simd.h).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")  // vectorize the row loops at -O2; see simd.h
#endif

#include "kernels/cpu/crossentropy.h"

#include <cmath>

#include "core/check.h"
#include "kernels/cpu/simd.h"

namespace ss::cpu {

float crossentropy_forward(float* losses, float* probs, const float* logits, const int* targets, int N, int V,
                           int Vp) {
    SS_CHECK(1 <= V && V <= Vp, "crossentropy: V=" << V << " words in rows of Vp=" << Vp << " logits");
    double total = 0.0;  // the mean over up to B*T rows, kept in double so it does not drift
    for (long n = 0; n < N; n++) {
        const float* z = logits + n * Vp;
        float* p = probs + n * Vp;
        const int y = targets[n];
        SS_CHECK(y >= 0 && y < V, "crossentropy: target " << y << " at row " << n << " is outside the vocabulary [0, "
                                                           << V << "); check the data's tokenizer matches the model");
        const float zmax = lane_max(z, V);
        for (int v = 0; v < V; v++) p[v] = exp_fast(z[v] - zmax);
        const float sum = lane_sum(p, V);
        const float inv_sum = 1.0f / sum;
        for (int v = 0; v < V; v++) p[v] *= inv_sum;
        for (int v = V; v < Vp; v++) p[v] = 0.0f;  // padding: never predicted
        losses[n] = std::log(sum) - (z[y] - zmax);
        total += losses[n];
    }
    return N > 0 ? float(total / N) : 0.0f;
}

namespace {
// dz = base + p dloss, base = dz (accumulate) or +0 (overwrite: the bits of adding into a zero-filled
// buffer; GCC keeps 0 + v, which is not v when v = -0).
template <bool Overwrite>
void crossentropy_backward_into(float* dlogits, const float* probs, const int* targets, float dloss, int N, int V,
                                int Vp) {
    for (long n = 0; n < N; n++) {
        float* dz = dlogits + n * Vp;
        const float* p = probs + n * Vp;
        for (int v = 0; v < V; v++) dz[v] = (Overwrite ? 0.0f : dz[v]) + p[v] * dloss;
        dz[targets[n]] -= dloss;  // the -[v == y] term
        if (Overwrite)
            for (int v = V; v < Vp; v++) dz[v] = 0.0f;  // padding: no gradient
    }
}
}  // namespace

void crossentropy_backward(float* dlogits, const float* probs, const int* targets, float dloss, int N, int V,
                           int Vp, bool overwrite) {
    if (overwrite)
        crossentropy_backward_into<true>(dlogits, probs, targets, dloss, N, V, Vp);
    else
        crossentropy_backward_into<false>(dlogits, probs, targets, dloss, N, V, Vp);
}

}  // namespace ss::cpu
