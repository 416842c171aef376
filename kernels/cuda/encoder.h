// encoder.h — GPT-2's input on the GPU: token embedding plus position embedding.
// The twin of kernels/cpu/encoder.h: same arguments in the same order, all
// pointers on the device, plus the stream the kernels run on.
//
//   out[b,t,:] = wte[tokens[b,t], :] + wpe[t, :]        wte[V,C], wpe[maxT,C]
//
// Backward scatters dout back into the rows that were read (+=).
#pragma once

#include <cuda_runtime.h>

namespace ss::cuda {

/// out[B,T,C] = wte[tokens] + wpe[0..T), on @p stream.
void encoder_forward(float* out, const int* tokens, const float* wte, const float* wpe, int B, int T, int C,
                     cudaStream_t stream);
/// dwte[tokens[b,t]] += dout[b,t]; dwpe[t] += dout[b,t] (either may be null), on @p stream.
void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* tokens, int B, int T, int C,
                      cudaStream_t stream);

}  // namespace ss::cuda
