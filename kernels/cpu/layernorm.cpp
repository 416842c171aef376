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

namespace {

/// Rows normalized side by side in layernorm_forward (see layernorm_rows).
constexpr int kLayerNormRows = 4;

// Normalizes R rows at once, their loops side by side. One row's sums are chains
// (each add waits for the one before, simd.h 5.): a row's mean, variance and rstd
// form one chain of ~120 cycles that the out-of-order core could not overlap with
// the next row's, the window filled by the row's own instructions. With R rows
// in each loop (R a constant, so the loops over r are unrolled and their
// operations interleaved) R chains run at once: over 1024 rows of 128, 49 -> 29 us
// on one core of the Zen 3 host (docs/performance.md). Each row's sums are added
// in the same order as alone, over kLanes partial sums folded by halves (simd.h):
// the same bits for any R. Always inlined, so that its loops are layernorm_forward's
// in the object code that tests/vectorized.sh reads.
template <int R>
[[gnu::always_inline]] inline void layernorm_rows(float* out, float* mean, float* rstd, const float* x, const float* weight, const float* bias,
                    int C) {
    float sum[R][kLanes] = {};
    int i = 0;
    for (; i + kLanes <= C; i += kLanes)
#pragma GCC unroll 4
        for (int r = 0; r < R; r++)
            for (int j = 0; j < kLanes; j++) sum[r][j] += x[r * C + i + j];
    float m[R], s[R];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        float t = lane_fold_sum(sum[r]);  // folded by halves: a chain of 4 adds, not 16 (simd.h, 5.)
        for (int k = i; k < C; k++) t += x[r * C + k];
        m[r] = t / C;
    }
    // the variance in a second pass over the squared deviations, not E[x^2] - mean^2 (see the top)
    float sq[R][kLanes] = {};
    for (i = 0; i + kLanes <= C; i += kLanes)
#pragma GCC unroll 4
        for (int r = 0; r < R; r++)
            for (int j = 0; j < kLanes; j++) sq[r][j] += (x[r * C + i + j] - m[r]) * (x[r * C + i + j] - m[r]);
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        float t = lane_fold_sum(sq[r]);
        for (int k = i; k < C; k++) t += (x[r * C + k] - m[r]) * (x[r * C + k] - m[r]);
        s[r] = 1.0f / std::sqrt(t / C + kLayerNormEps);
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        for (int k = 0; k < C; k++) out[r * C + k] = (x[r * C + k] - m[r]) * s[r] * weight[k] + bias[k];
        mean[r] = m[r];
        rstd[r] = s[r];
    }
}

}  // namespace

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int N, int C) {
    long n = 0;
    for (; n + kLayerNormRows <= N; n += kLayerNormRows)
        layernorm_rows<kLayerNormRows>(out + n * C, mean + n, rstd + n, inp + n * C, weight, bias, C);
    for (; n < N; n++) layernorm_rows<1>(out + n * C, mean + n, rstd + n, inp + n * C, weight, bias, C);
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
        float sum_g = lane_fold_sum(acc_g), sum_gn = lane_fold_sum(acc_gn);  // chains of 4 adds, not 16
        for (; i < C; i++) {
            const float g = weight[i] * dy[i];
            sum_g += g;
            sum_gn += g * ((x[i] - m) * s);
        }
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
