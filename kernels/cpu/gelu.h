// gelu.h — GELU in the tanh form GPT-2 uses (Hendrycks & Gimpel 2016, eq. 2):
//
//   gelu(x) = 0.5 x (1 + tanh( sqrt(2/pi) (x + 0.044715 x^3) ))
//
// Elementwise over n values. Backward accumulates (+=) into dinp, or overwrites it.
//
// The fast versions use the identity 0.5 (1 + tanh(u)) = 1 / (1 + e^(-2u)),
// so gelu(x) = x / (1 + e^(-2u)) with u = sqrt(2/pi) (x + 0.044715 x^3):
// one vectorizable exp (simd.h), and no 1 + tanh cancellation for x << 0.
// The *_reference versions are the formula above with std::tanh, for tests.
#pragma once

namespace ss::cpu {

/// out[i] = gelu(inp[i]).
void gelu_forward(float* out, const float* inp, long n);
/// dinp[i] += gelu'(inp[i]) * dout[i]; with @p overwrite, dinp[i] = 0 + gelu'(inp[i]) * dout[i]
/// (what += gives on a zero-filled buffer, bit for bit, without the pass that fills it).
void gelu_backward(float* dinp, const float* inp, const float* dout, long n, bool overwrite = false);

/// Plain twin of gelu_forward with std::tanh, for tests.
void gelu_forward_reference(float* out, const float* inp, long n);
/// Plain twin of gelu_backward with std::tanh, for tests.
void gelu_backward_reference(float* dinp, const float* inp, const float* dout, long n);

}  // namespace ss::cpu
