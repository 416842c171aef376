// adamw.h — AdamW on the GPU (Loshchilov & Hutter 2019, Algorithm 2), as torch.optim.AdamW computes it.
// The twin of kernels/cpu/adamw.h: the same hyper-parameter struct, the same
// arguments, device pointers, a stream.
//
//   m = beta1 m + (1 - beta1) g,   v = beta2 v + (1 - beta2) g^2
//   p -= lr * ( mhat / (sqrt(vhat) + eps) + weight_decay * p )
//
// Mixed precision (the ZeRO paper's 2 + 2 + 12 bytes per parameter): the
// optimizer owns fp32 master weights, m and v; the model computes with bf16
// params. adamw_update_bf16 updates the master copy and writes its bf16
// rounding in the same pass, as the CPU path calls adamw_update and then
// f32_to_bf16 (src/optim/adamw.cpp).
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "kernels/cpu/adamw.h"  // AdamWParams, shared with the CPU twin

namespace ss::cuda {

/// Updates n elements of params, m and v in place from grads, at step t (1-based); on @p stream.
void adamw_update(float* params, const float* grads, float* m, float* v, long n, int t, const cpu::AdamWParams& hp,
                  cudaStream_t stream);
/// As adamw_update on the fp32 @p master weights, and writes params_bf16[i] = bf16(master[i])
/// (raw bf16 bits, round to nearest even, as core/dtype.h's f32_to_bf16); on @p stream.
void adamw_update_bf16(float* master, uint16_t* params_bf16, const float* grads, float* m, float* v, long n, int t,
                       const cpu::AdamWParams& hp, cudaStream_t stream);

}  // namespace ss::cuda
