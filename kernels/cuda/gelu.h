// gelu.h — GELU on the GPU, in the tanh form GPT-2 uses (Hendrycks & Gimpel 2016, eq. 2).
// The twin of kernels/cpu/gelu.h: same arguments, device pointers, a stream.
//
//   gelu(x) = 0.5 x (1 + tanh( sqrt(2/pi) (x + 0.044715 x^3) ))
//
// Elementwise over n values. Backward accumulates (+=) into dinp.
#pragma once

#include <cuda_runtime.h>

namespace ss::cuda {

/// out[i] = gelu(inp[i]), on @p stream.
void gelu_forward(float* out, const float* inp, long n, cudaStream_t stream);
/// dinp[i] += gelu'(inp[i]) * dout[i], on @p stream.
void gelu_backward(float* dinp, const float* inp, const float* dout, long n, cudaStream_t stream);

}  // namespace ss::cuda
