// residual.h — the residual connection on the GPU, out = a + b (He et al. 2016).
// The twin of kernels/cpu/residual.h: same arguments, device pointers, a stream.
//
// Its backward is the identity into both branches: da += dout, db += dout.
#pragma once

#include <cuda_runtime.h>

namespace ss::cuda {

/// out[i] = a[i] + b[i], on @p stream.
void residual_forward(float* out, const float* a, const float* b, long n, cudaStream_t stream);
/// da[i] += dout[i]; db[i] += dout[i], on @p stream.
void residual_backward(float* da, float* db, const float* dout, long n, cudaStream_t stream);
/// y[i] += x[i], on @p stream.
void add_inplace(float* y, const float* x, long n, cudaStream_t stream);
/// out[n, c] += bias[c] for N rows of C, on @p stream.
void add_bias(float* out, const float* bias, int N, int C, cudaStream_t stream);

}  // namespace ss::cuda
