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

namespace {

// The backward's two row sums, sum_i g_i and sum_i g_i n_i (g = w dout, n the normalized row),
// each over kLanes lanes: lane j takes i = j, j + 16, ... as simd.h's sums, folded the same way.
// The lanes are kept as two halves of 8 floats, *_lo[j] for lane j and *_hi[j] for lane 8 + j, and
// not as one array of 16: GCC 12 compiled the array's inner loop of 16 for AVX2 as a loop of
// two 8-float vectors whose sums went through the stack, a store and a load each add (perf:
// half of the kernel's samples on two stores), and the kernel ran 1.5x slower than on AVX-512.
// Each half's loop of 8 is one vector operation on AVX2, kept in registers (AVX-512 uses 8-float
// vectors for them too, no slower in the step). The same lanes, adds and fold: the same bits.
// `bench kernels`, 1024 rows of 128, hot, on the Zen 4 (docs/performance.md, 2026-12-07): AVX2
// 71 us before, 61 with the halves, 49 with the halves and row_grads' one pass; AVX-512 46-47.
struct RowSums {
    float g = 0, gn = 0;
};
RowSums row_sums(const float* x, const float* dy, const float* w, float m, float s, int C) {
    float g_lo[8] = {}, g_hi[8] = {}, gn_lo[8] = {}, gn_hi[8] = {};
    int i = 0;
    for (; i + kLanes <= C; i += kLanes) {
        for (int j = 0; j < 8; j++) {
            const float g = w[i + j] * dy[i + j];
            g_lo[j] += g;
            gn_lo[j] += g * ((x[i + j] - m) * s);
        }
        for (int j = 0; j < 8; j++) {
            const float g = w[i + 8 + j] * dy[i + 8 + j];
            g_hi[j] += g;
            gn_hi[j] += g * ((x[i + 8 + j] - m) * s);
        }
    }
    float acc_g[kLanes], acc_gn[kLanes];
    for (int j = 0; j < 8; j++) {
        acc_g[j] = g_lo[j], acc_g[j + 8] = g_hi[j];
        acc_gn[j] = gn_lo[j], acc_gn[j + 8] = gn_hi[j];
    }
    for (int j = 0; j < C - i; j++) {  // the tail in the lanes, an FMA each, as sum_sq_dev's
        const float g = w[i + j] * dy[i + j];
        acc_g[j] += g;
        acc_gn[j] = std::fma(g, (x[i + j] - m) * s, acc_gn[j]);
    }
    return {lane_fold_sum(acc_g), lane_fold_sum(acc_gn)};  // chains of 4 adds, not 16
}

// One row's dx, and with WithParams its dw and db too, in one pass: x and dy are loaded once, not
// once per output. restrict: the arrays do not overlap; without it GCC needs more alias checks
// than it versions a loop for, and leaves the loop scalar (3.5x slower).
template <bool WithParams>
void row_grads(float* __restrict dx, float* __restrict dw, float* __restrict db, const float* __restrict x,
               const float* __restrict dy, const float* __restrict w, float m, float s, float mean_g, float mean_gn,
               int C) {
    for (int k = 0; k < C; k++) {
        const float norm = (x[k] - m) * s;
        dx[k] += s * (w[k] * dy[k] - mean_g - norm * mean_gn);
        if (WithParams) {
            dw[k] += norm * dy[k];
            db[k] += dy[k];
        }
    }
}

}  // namespace

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int N, int C) {
    for (long n = 0; n < N; n++) {
        const float* x = inp + n * C;
        const float* dy = dout + n * C;
        float* dx = dinp + n * C;
        const float m = mean[n];
        const float s = rstd[n];
        const RowSums sums = row_sums(x, dy, weight, m, s, C);
        const float mean_g = sums.g / C;
        const float mean_gn = sums.gn / C;
        if (dweight != nullptr && dbias != nullptr) {
            row_grads<true>(dx, dweight, dbias, x, dy, weight, m, s, mean_g, mean_gn, C);
            continue;
        }
        row_grads<false>(dx, nullptr, nullptr, x, dy, weight, m, s, mean_g, mean_gn, C);
        if (dweight != nullptr)
            for (int k = 0; k < C; k++) dweight[k] += (x[k] - m) * s * dy[k];
        if (dbias != nullptr)
            for (int k = 0; k < C; k++) dbias[k] += dy[k];
    }
}

}  // namespace ss::cpu
