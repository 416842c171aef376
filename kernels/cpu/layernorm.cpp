// layernorm.cpp — LayerNorm over the last dimension (Ba et al. 2016, arXiv:1607.06450, eq. 4).
//
// One row x of C features at a time:
//   mean = (1/C) sum_i x_i
//   rstd = 1 / sqrt((1/C) sum_i (x_i - mean)^2 + eps)       (biased variance, as PyTorch)
//   n_i  = (x_i - mean) rstd                                  (the normalized row)
//   out_i = n_i w_i + b_i
//
// Backward (derivation as in llm.c's layernorm_backward): with g_i = w_i dout_i,
//   dx_i = rstd ( g_i - mean_j(g_j) - n_i mean_j(g_j n_j) )
//   dw_i += n_i dout_i,   db_i += dout_i
// The two means are why a LayerNorm gradient sums to zero over a row and is
// orthogonal to n: shifting or scaling x does not change n.
//
// The variance is computed in two passes (mean first, then squared
// deviations) rather than E[x^2] - mean^2, which cancels catastrophically
// when |mean| >> std. Sums run in float over 16 lanes (simd.h), as PyTorch does.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")  // vectorize the row loops at -O2; see simd.h
#endif

#include "kernels/cpu/layernorm.h"

#include <cmath>

#include "kernels/cpu/simd.h"

namespace ss::cpu {

// sum_i (x_i - m)^2 over kLanes partial sums (the lane pattern of simd.h).
static float sum_sq_dev(const float* x, float m, int C) {
    float acc[kLanes] = {};
    int i = 0;
    for (; i + kLanes <= C; i += kLanes)
        for (int j = 0; j < kLanes; j++) acc[j] += (x[i + j] - m) * (x[i + j] - m);
    for (int j = 0; j < C - i; j++)  // the tail in the lanes, an FMA each, as simd.h's lane_dot
        acc[j] = std::fma(x[i + j] - m, x[i + j] - m, acc[j]);
    return lane_fold_sum(acc);  // folded by halves: a chain of 4 adds, not 16 (simd.h, 5.)
}

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int N, int C) {
    for (long n = 0; n < N; n++) {
        const float* x = inp + n * C;
        float* y = out + n * C;
        const float m = lane_sum(x, C) / C;
        const float var = sum_sq_dev(x, m, C) / C;
        const float s = 1.0f / std::sqrt(var + kLayerNormEps);
        for (int i = 0; i < C; i++) y[i] = (x[i] - m) * s * weight[i] + bias[i];
        mean[n] = m;
        rstd[n] = s;
    }
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int N, int C) {
    for (long n = 0; n < N; n++) {
        const float* x = inp + n * C;
        const float* dy = dout + n * C;
        float* dx = dinp + n * C;
        const float m = mean[n];
        const float s = rstd[n];
        // the two row means of the formula above, in one pass each over 16 lanes
        float acc_g[kLanes] = {}, acc_gn[kLanes] = {};
        int i = 0;
        for (; i + kLanes <= C; i += kLanes)
            for (int j = 0; j < kLanes; j++) {
                const float g = weight[i + j] * dy[i + j];
                acc_g[j] += g;
                acc_gn[j] += g * ((x[i + j] - m) * s);
            }
        for (int j = 0; j < C - i; j++) {  // the tail in the lanes, an FMA each, as sum_sq_dev's
            const float g = weight[i + j] * dy[i + j];
            acc_g[j] += g;
            acc_gn[j] = std::fma(g, (x[i + j] - m) * s, acc_gn[j]);
        }
        const float sum_g = lane_fold_sum(acc_g), sum_gn = lane_fold_sum(acc_gn);  // chains of 4 adds, not 16
        const float mean_g = sum_g / C;
        const float mean_gn = sum_gn / C;
        for (int k = 0; k < C; k++) {
            const float norm = (x[k] - m) * s;
            dx[k] += s * (weight[k] * dy[k] - mean_g - norm * mean_gn);
        }
        if (dweight != nullptr)
            for (int k = 0; k < C; k++) dweight[k] += (x[k] - m) * s * dy[k];
        if (dbias != nullptr)
            for (int k = 0; k < C; k++) dbias[k] += dy[k];
    }
}

}  // namespace ss::cpu
