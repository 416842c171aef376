// encoder.cpp — GPT-2's input layer (Radford et al. 2019, section 2.3): token plus position embedding.
//
//   out[b,t,:] = wte[tokens[b,t], :] + wpe[t, :]          wte[V,C], wpe[maxT,C]
//
// A lookup is a matmul with a one-hot row, so its backward is a scatter-add:
// each row of dout goes back to the wte row it was read from. A token that
// appears k times in the batch receives k gradients summed, in (b, t) order.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")  // vectorize the row loops at -O2; see simd.h
#endif

#include "kernels/cpu/encoder.h"

namespace ss::cpu {

void encoder_forward(float* out, const int* tokens, const float* wte, const float* wpe, int B, int T, int C) {
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            float* o = out + (long(b) * T + t) * C;
            const float* tok_row = wte + long(tokens[b * T + t]) * C;
            const float* pos_row = wpe + long(t) * C;
            for (int c = 0; c < C; c++) o[c] = tok_row[c] + pos_row[c];
        }
}

void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* tokens, int B, int T, int C) {
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const float* d = dout + (long(b) * T + t) * C;
            if (dwte != nullptr) {
                float* tok_row = dwte + long(tokens[b * T + t]) * C;
                for (int c = 0; c < C; c++) tok_row[c] += d[c];
            }
            if (dwpe != nullptr) {
                float* pos_row = dwpe + long(t) * C;
                for (int c = 0; c < C; c++) pos_row[c] += d[c];
            }
        }
}

}  // namespace ss::cpu
