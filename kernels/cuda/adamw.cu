// adamw.cu — AdamW on the GPU (twin of kernels/cpu/adamw.cpp, which gives the
// order of operations and why it follows torch.optim.AdamW).
//
// One thread per parameter; nothing is shared between elements. The step's
// scalars (bias corrections, decay) are computed once on the host in double,
// exactly as the CPU twin computes them, and passed by value, so both sides
// start from the same floats. sqrtf and '/' are IEEE-exact here (we do not
// build with --use_fast_math), so the two differ only where the compilers
// fuse a multiply-add differently: a few ulp.
#include "kernels/cuda/adamw.h"

#include <cmath>

#include "core/check.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/reduce.cuh"

namespace ss::cuda {

namespace {

// The per-step scalars of the update, as adamw.cpp computes them.
struct StepScalars {
    float decay, one_minus_beta1, one_minus_beta2, beta2, step_size, bias_correction2_sqrt, eps;
};

StepScalars step_scalars(int t, const cpu::AdamWParams& hp) {
    SS_CHECK(t >= 1, "adamw_update: step t=" << t << " must be 1-based (the first step is t=1)");
    const double lr = hp.lr, beta1 = hp.beta1, beta2 = hp.beta2, wd = hp.weight_decay;
    return {float(1.0 - lr * wd),
            float(1.0 - beta1),
            float(1.0 - beta2),
            hp.beta2,
            float(lr / (1.0 - std::pow(beta1, t))),
            float(std::sqrt(1.0 - std::pow(beta2, t))),
            hp.eps};
}

__device__ inline float adamw_element(float param, float g, float* m, float* v, const StepScalars& k) {
    const float p = param * k.decay;
    const float mi = *m + k.one_minus_beta1 * (g - *m);
    const float vi = *v * k.beta2 + k.one_minus_beta2 * g * g;
    const float denom = sqrtf(vi) / k.bias_correction2_sqrt + k.eps;
    *m = mi;
    *v = vi;
    return p - k.step_size * (mi / denom);
}

__global__ void adamw_kernel(float* params, const float* grads, float* m, float* v, long n, StepScalars k) {
    const long i = blockIdx.x * long(blockDim.x) + threadIdx.x;
    if (i < n) params[i] = adamw_element(params[i], grads[i], &m[i], &v[i], k);
}

}  // namespace

void adamw_update(float* params, const float* grads, float* m, float* v, long n, int t, const cpu::AdamWParams& hp,
                  cudaStream_t stream) {
    const StepScalars k = step_scalars(t, hp);
    if (n == 0) return;
    adamw_kernel<<<blocks_for(n), kThreads, 0, stream>>>(params, grads, m, v, n, k);
    SS_CUDA_CHECK_LAUNCH("adamw_kernel");
}

}  // namespace ss::cuda
