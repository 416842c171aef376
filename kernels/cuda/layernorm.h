// layernorm.h — LayerNorm over the last dimension on the GPU (Ba et al. 2016), forward and backward.
// The twin of kernels/cpu/layernorm.h: same arguments, device pointers, a stream.
//
//   mean = (1/C) sum_i x_i,  rstd = 1 / sqrt((1/C) sum_i (x_i - mean)^2 + 1e-5)
//   out_i = (x_i - mean) * rstd * weight_i + bias_i
//
// N rows of C features; mean[N] and rstd[N] are saved for the backward pass,
// which accumulates (+=) into dinp, dweight, dbias.
#pragma once

#include <cuda_runtime.h>

namespace ss::cuda {

/// out[N,C] = layernorm(inp) * weight + bias; writes mean[N], rstd[N]; on @p stream.
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int N, int C, cudaStream_t stream);
/// Accumulates into dinp[N,C], dweight[C], dbias[C] (dweight/dbias may be null); on @p stream.
void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int N, int C,
                        cudaStream_t stream);

}  // namespace ss::cuda
