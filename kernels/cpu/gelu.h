// gelu.h — GELU in the tanh form GPT-2 uses (Hendrycks & Gimpel 2016, eq. 2):
//
//   gelu(x) = 0.5 x (1 + tanh( sqrt(2/pi) (x + 0.044715 x^3) ))
//
// Elementwise over n values. Backward accumulates (+=) into dinp.
#pragma once

namespace ss::cpu {

/// out[i] = gelu(inp[i]).
void gelu_forward(float* out, const float* inp, long n);
/// dinp[i] += gelu'(inp[i]) * dout[i].
void gelu_backward(float* dinp, const float* inp, const float* dout, long n);

}  // namespace ss::cpu
