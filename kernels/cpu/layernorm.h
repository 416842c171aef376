// layernorm.h — LayerNorm over the last dimension (Ba et al. 2016), forward and backward.
//
//   mean = (1/C) sum_i x_i,  rstd = 1 / sqrt((1/C) sum_i (x_i - mean)^2 + 1e-5)
//   out_i = (x_i - mean) * rstd * weight_i + bias_i
//
// N rows of C features. mean[N] and rstd[N] are saved by the forward pass for
// the backward pass. Backward accumulates (+=) into dinp, dweight, dbias.
#pragma once

namespace ss::cpu {

/// LayerNorm epsilon, as PyTorch's nn.LayerNorm default and GPT-2.
constexpr float kLayerNormEps = 1e-5f;

/// out[N,C] = layernorm(inp) * weight + bias; writes mean[N], rstd[N].
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int N, int C);
/// Accumulates into dinp[N,C], dweight[C], dbias[C] (dweight/dbias may be null).
void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int N, int C);

}  // namespace ss::cpu
