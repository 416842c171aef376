// encoder.h — GPT-2's input: token embedding plus learned position embedding.
//
//   out[b,t,:] = wte[tokens[b,t], :] + wpe[t, :]        wte[V,C], wpe[maxT,C]
//
// Backward scatters dout back into the rows that were read (+=).
#pragma once

namespace ss::cpu {

/// out[B,T,C] = wte[tokens] + wpe[0..T).
void encoder_forward(float* out, const int* tokens, const float* wte, const float* wpe, int B, int T, int C);
/// dwte[tokens[b,t]] += dout[b,t]; dwpe[t] += dout[b,t] (either may be null).
void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* tokens, int B, int T, int C);

}  // namespace ss::cpu
