// residual.cpp — the residual connection out = a + b (He et al. 2016, arXiv:1512.03385, eq. 1).
//
// The sum's derivative is 1 with respect to each input, so the gradient flows
// unchanged into both branches: da += dout, db += dout. That identity path is
// why deep residual stacks train: every block sees the loss gradient directly.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")  // vectorize the elementwise loops at -O2; see simd.h
#endif

#include "kernels/cpu/residual.h"

namespace ss::cpu {

// No __restrict: out may be a or b (an in-place residual). The vectorizer adds
// a run-time overlap check and keeps a scalar path for overlapping arrays.

void residual_forward(float* out, const float* a, const float* b, long n) {
    for (long i = 0; i < n; i++) out[i] = a[i] + b[i];
}

void residual_backward(float* da, float* db, const float* dout, long n) {
    for (long i = 0; i < n; i++) da[i] += dout[i];
    for (long i = 0; i < n; i++) db[i] += dout[i];
}

void add_inplace(float* y, const float* x, long n) {
    for (long i = 0; i < n; i++) y[i] += x[i];
}

void add_bias(float* out, const float* bias, int N, int C) {
    for (int n = 0; n < N; ++n) {
        float* o = out + long(n) * C;
        for (int c = 0; c < C; ++c) o[c] += bias[c];
    }
}

void add_bias_residual(float* out, const float* bias, const float* x, int N, int C) {
    for (int n = 0; n < N; ++n) {
        float* o = out + long(n) * C;
        const float* xn = x + long(n) * C;
        for (int c = 0; c < C; ++c) o[c] = (o[c] + bias[c]) + xn[c];
    }
}

}  // namespace ss::cpu
