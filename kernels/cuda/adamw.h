// adamw.h — AdamW on the GPU (Loshchilov & Hutter 2019, Algorithm 2), as torch.optim.AdamW computes it.
// The twin of kernels/cpu/adamw.h: the same hyper-parameter struct, the same
// arguments, device pointers, a stream.
//
//   m = beta1 m + (1 - beta1) g,   v = beta2 v + (1 - beta2) g^2
//   p -= lr * ( mhat / (sqrt(vhat) + eps) + weight_decay * p )
//
// Mixed precision (the ZeRO paper's 2 + 2 + 12 bytes per parameter): the
// optimizer owns fp32 master weights, m and v; the model computes with bf16
// params. On the GPU as on the CPU the step is adamw_update on the master,
// then f32_to_bf16 (kernels/cuda/convert.h, core/dtype.h's rounding, NaN
// included) for the model's copy (kernels/dispatch.cpp, src/optim/adamw.cpp).
#pragma once

#include <cuda_runtime.h>

#include "kernels/cpu/adamw.h"  // AdamWParams, shared with the CPU twin

namespace ss::cuda {

/// Updates n elements of params, m and v in place from grads, at step t (1-based); on @p stream.
void adamw_update(float* params, const float* grads, float* m, float* v, long n, int t, const cpu::AdamWParams& hp,
                  cudaStream_t stream);

}  // namespace ss::cuda
