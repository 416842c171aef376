// gelu.cpp — GELU, tanh form (Hendrycks & Gimpel 2016, arXiv:1606.08415, section 2), forward and backward.
//
// With k = sqrt(2/pi), a = 0.044715 and u(x) = k (x + a x^3):
//
//   gelu(x)  = 0.5 x (1 + tanh u)                      (the paper's form; *_reference)
//            = x s,   s = sigmoid(2u) = 1 / (1 + e^(-2u))   (fast form, same function)
//
//   gelu'(x) = s + x * 2 u'(x) * s (1 - s),   u'(x) = k (1 + 3 a x^2)
//
// The identity 0.5 (1 + tanh u) = sigmoid(2u) turns the tanh into one exp,
// which simd.h's exp_fast computes in vector registers. It also avoids a
// cancellation: for x << 0, 1 + tanh u subtracts two numbers near 1, while
// 1 / (1 + e^(-2u)) keeps full relative precision. 1 - s is computed as
// e^(-2u) s for the same reason.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")  // vectorize the elementwise loops at -O2; see simd.h
#endif

#include "kernels/cpu/gelu.h"

#include <cmath>

#include "kernels/cpu/simd.h"

namespace ss::cpu {

namespace {
constexpr float kSqrt2OverPi = 0.7978845608028654f;  // k = sqrt(2/pi)
constexpr float kCubic = 0.044715f;                  // a
// The fast form's constants, folded so that each value below is a chain of 3 operations, not 5
// (simd.h, 5.): -2u = x (-2k + -2ka x^2) and 2u' = 2k + 6ka x^2.
constexpr float kMinus2K = -2.0f * kSqrt2OverPi, kMinus2KA = -2.0f * kSqrt2OverPi * kCubic;
constexpr float k2K = 2.0f * kSqrt2OverPi, k6KA = 6.0f * kSqrt2OverPi * kCubic;
}  // namespace

void gelu_forward(float* out, const float* inp, long n) {
    for_each_chained(n, [&](long i) {
        const float x = inp[i];
        const float minus_2u = x * (kMinus2K + kMinus2KA * (x * x));
        out[i] = x / (1.0f + exp_fast(minus_2u));
    });
}

namespace {
// dinp[i] = base + gelu'(x) dout[i], base = dinp[i] (accumulate) or +0 (overwrite: the same
// bits as adding into a zero-filled buffer; GCC keeps 0 + v, which is not v when v = -0).
template <bool Overwrite>
void gelu_backward_into(float* dinp, const float* inp, const float* dout, long n) {
    for_each_chained(n, [&](long i) {
        const float x = inp[i], x2 = x * x;
        const float e = exp_fast(x * (kMinus2K + kMinus2KA * x2));  // e^(-2u)
        const float s = 1.0f / (1.0f + e);                         // sigmoid(2u)
        const float one_minus_s = e * s;                           // 1 - s without cancellation
        const float x_2du = x * (k2K + k6KA * x2);                  // x 2u'(x), beside the exp
        const float base = Overwrite ? 0.0f : dinp[i];
        dinp[i] = base + (s + s * (x_2du * one_minus_s)) * dout[i];
    });
}
}  // namespace

void gelu_backward(float* dinp, const float* inp, const float* dout, long n, bool overwrite) {
    if (overwrite)
        gelu_backward_into<true>(dinp, inp, dout, n);
    else
        gelu_backward_into<false>(dinp, inp, dout, n);
}

// ---- plain formula with std::tanh, for the tests and for reading ---------------

void gelu_forward_reference(float* out, const float* inp, long n) {
    for (long i = 0; i < n; i++) {
        const float x = inp[i];
        const float u = kSqrt2OverPi * (x + kCubic * x * x * x);
        out[i] = 0.5f * x * (1.0f + std::tanh(u));
    }
}

void gelu_backward_reference(float* dinp, const float* inp, const float* dout, long n) {
    for (long i = 0; i < n; i++) {
        const float x = inp[i];
        const float u = kSqrt2OverPi * (x + kCubic * x * x * x);
        const float t = std::tanh(u);
        const float sech2 = 1.0f - t * t;  // d tanh(u) / du
        const float grad = 0.5f * (1.0f + t) + 0.5f * x * sech2 * kSqrt2OverPi * (1.0f + 3.0f * kCubic * x * x);
        dinp[i] += grad * dout[i];
    }
}

}  // namespace ss::cpu
