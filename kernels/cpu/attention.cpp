// attention.cpp — causal multi-head self-attention (Vaswani et al. 2017, arXiv:1706.03762, section 3.2).
//
// B = batch, T = sequence length, NH = heads, hs = C / NH = head size. For
// one (b, h), Q, K, V are [T, hs] views into qkv[B,T,3C] (row stride 3C):
//
//   token row of qkv:  [ q_0 q_1 .. q_NH-1 | k_0 .. k_NH-1 | v_0 .. v_NH-1 ]
//                        ^ Q = row + h*hs    ^ K = Q + C      ^ V = Q + 2C
//
//   forward    S = Q K^T / sqrt(hs)        [T,T] scores, eq. (1) of the paper
//              P = softmax_row(S + M)      M[t,s] = -inf for s > t (causal mask)
//              O = P V                     [T,hs], written at out[b, :, h*hs]
//
//   backward   dP = dO V^T                 dV += P^T dO
//              dS[t,s] = P[t,s] (dP[t,s] - sum_s' P[t,s'] dP[t,s'])   (softmax backward)
//              dQ += dS K / sqrt(hs)       dK += dS^T Q / sqrt(hs)
//
// The four matrix products per (b, h) go to OpenBLAS sgemm, reading Q, K, V,
// dQ, dK, dV in place through a leading dimension of 3C (no copies); only the
// masked softmax and its backward are loops. Above the diagonal P is 0, so
// the products are done in blocks of kBlock rows that stop at the diagonal
// block: about half the flops of the full T x T products for long T.
//
// att keeps P with the masked entries 0. The *_reference functions are the
// same math in plain loops (as llm.c's attention_forward), for the tests.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")  // vectorize the softmax loops at -O2; see simd.h
#endif

#include "kernels/cpu/attention.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/check.h"
#include "kernels/cpu/simd.h"

namespace ss::cpu {

namespace {

// Rows per block of the causal products. Row block [r0, r1) needs key columns
// [0, r1) only; the wasted work is the upper half of each diagonal block.
// Measured on one AVX-512 core (OpenBLAS 0.3.21, forward + backward): 64 is
// as fast as 32 or 128 at T = 128..1024 and 1.5x faster than no blocking at
// T = 1024; 256 loses at T = 256.
constexpr int kBlock = 64;

void check_shape(int C, int NH) {
    SS_CHECK(NH > 0 && C % NH == 0, "attention: C=" << C << " is not divisible by NH=" << NH
                                                    << "; the head size C/NH must be a whole number");
}

// row-major sgemm: Cm[M,N] = alpha op(A) op(B) + beta Cm, with leading dimensions given
void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, long lda, const float* Bm,
          long ldb, float beta, float* Cm, long ldc) {
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, M, N, K,
                alpha, A, int(lda), Bm, int(ldb), beta, Cm, int(ldc));
}

}  // namespace

void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH) {
    check_shape(C, NH);
    const int hs = C / NH;
    const long C3 = 3L * C;
    const float scale = 1.0f / std::sqrt(float(hs));
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            const float* Q = qkv + long(b) * T * C3 + long(h) * hs;
            const float* K = Q + C;
            const float* V = Q + 2L * C;
            float* P = att + (long(b) * NH + h) * T * T;
            float* O = out + long(b) * T * C + long(h) * hs;
            for (int r0 = 0; r0 < T; r0 += kBlock) {
                const int r1 = std::min(T, r0 + kBlock);
                // 1. scores of rows [r0, r1) against keys [0, r1): P = scale Q K^T
                gemm(false, true, r1 - r0, r1, hs, scale, Q + r0 * C3, C3, K, C3, 0.0f, P + long(r0) * T, T);
                // 2. masked softmax, row by row: keys s <= t are kept, the rest set to 0
                for (int t = r0; t < r1; t++) {
                    float* row = P + long(t) * T;
                    const float rmax = lane_max(row, t + 1);
                    for (int s = 0; s <= t; s++) row[s] = exp_fast(row[s] - rmax);
                    const float inv_sum = 1.0f / lane_sum(row, t + 1);
                    for (int s = 0; s <= t; s++) row[s] *= inv_sum;
                    for (int s = t + 1; s < T; s++) row[s] = 0.0f;
                }
                // 3. O[r0:r1] = P[r0:r1, 0:r1] V[0:r1]
                gemm(false, false, r1 - r0, hs, r1, 1.0f, P + long(r0) * T, T, V, C3, 0.0f, O + long(r0) * C, C);
            }
        }
}

void attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv, const float* att, int B,
                        int T, int C, int NH) {
    check_shape(C, NH);
    const int hs = C / NH;
    const long C3 = 3L * C;
    const float scale = 1.0f / std::sqrt(float(hs));
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            const long qkv_off = long(b) * T * C3 + long(h) * hs;
            const float *Q = qkv + qkv_off, *K = Q + C, *V = Q + 2L * C;
            float *dQ = dqkv + qkv_off, *dK = dQ + C, *dV = dQ + 2L * C;
            const float* P = att + (long(b) * NH + h) * T * T;
            float* dS = scratch + (long(b) * NH + h) * T * T;  // holds dP, then dS in place
            const float* dO = dout + long(b) * T * C + long(h) * hs;
            for (int r0 = 0; r0 < T; r0 += kBlock) {
                const int r1 = std::min(T, r0 + kBlock);
                // 1. dP[r0:r1, 0:r1] = dO[r0:r1] V[0:r1]^T
                gemm(false, true, r1 - r0, r1, hs, 1.0f, dO + long(r0) * C, C, V, C3, 0.0f, dS + long(r0) * T, T);
                // 2. softmax backward, scaled: dS = scale P (dP - rowsum(P dP)); 0 above the diagonal
                for (int t = r0; t < r1; t++) {
                    const float* p = P + long(t) * T;
                    float* d = dS + long(t) * T;
                    const float pdp = lane_dot(p, d, t + 1);
                    for (int s = 0; s <= t; s++) d[s] = scale * p[s] * (d[s] - pdp);
                    for (int s = t + 1; s < T; s++) d[s] = 0.0f;
                }
                // 3. dQ[r0:r1] += dS[r0:r1, 0:r1] K[0:r1]
                gemm(false, false, r1 - r0, hs, r1, 1.0f, dS + long(r0) * T, T, K, C3, 1.0f, dQ + r0 * C3, C3);
            }
            // 4. key/value side, by blocks of keys [s0, s1): only queries t >= s0 see them
            //    dV[s0:s1] += P[s0:T, s0:s1]^T dO[s0:T],   dK[s0:s1] += dS[s0:T, s0:s1]^T Q[s0:T]
            for (int s0 = 0; s0 < T; s0 += kBlock) {
                const int s1 = std::min(T, s0 + kBlock);
                const long at = long(s0) * T + s0;
                gemm(true, false, s1 - s0, hs, T - s0, 1.0f, P + at, T, dO + long(s0) * C, C, 1.0f, dV + s0 * C3, C3);
                gemm(true, false, s1 - s0, hs, T - s0, 1.0f, dS + at, T, Q + s0 * C3, C3, 1.0f, dK + s0 * C3, C3);
            }
        }
}

// ---- plain loops, for the tests and for reading ----------------------------------
// Dot products and row sums in double, so the reference is the more accurate
// side when the tests compare it with the sgemm path.

void attention_forward_reference(float* out, float* att, const float* qkv, int B, int T, int C, int NH) {
    check_shape(C, NH);
    const int hs = C / NH;
    const long C3 = 3L * C;
    const double scale = 1.0 / std::sqrt(double(hs));
    std::vector<double> e(T);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < NH; h++) {
                const float* q = qkv + (long(b) * T + t) * C3 + long(h) * hs;
                float* p = att + ((long(b) * NH + h) * T + t) * T;
                // scores against keys s <= t, and their max
                double smax = -INFINITY;
                for (int s = 0; s <= t; s++) {
                    const float* k = qkv + (long(b) * T + s) * C3 + C + long(h) * hs;
                    double dot = 0.0;
                    for (int i = 0; i < hs; i++) dot += double(q[i]) * k[i];
                    e[s] = dot * scale;
                    smax = std::max(smax, e[s]);
                }
                // softmax over s <= t; masked entries are 0
                double sum = 0.0;
                for (int s = 0; s <= t; s++) {
                    e[s] = std::exp(e[s] - smax);
                    sum += e[s];
                }
                for (int s = 0; s < T; s++) p[s] = s <= t ? float(e[s] / sum) : 0.0f;
                // out = sum_s p[s] v_s
                float* o = out + (long(b) * T + t) * C + long(h) * hs;
                for (int i = 0; i < hs; i++) {
                    double acc = 0.0;
                    for (int s = 0; s <= t; s++) acc += e[s] / sum * qkv[(long(b) * T + s) * C3 + 2L * C + h * hs + i];
                    o[i] = float(acc);
                }
            }
}

void attention_backward_reference(float* dqkv, float* scratch, const float* dout, const float* qkv, const float* att,
                                  int B, int T, int C, int NH) {
    check_shape(C, NH);
    const int hs = C / NH;
    const long C3 = 3L * C;
    const double scale = 1.0 / std::sqrt(double(hs));
    std::vector<double> dp(T), dq_acc(hs);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < NH; h++) {
                const float* p = att + ((long(b) * NH + h) * T + t) * T;
                float* ds = scratch + ((long(b) * NH + h) * T + t) * T;
                const float* dO = dout + (long(b) * T + t) * C + long(h) * hs;
                const float* q = qkv + (long(b) * T + t) * C3 + long(h) * hs;
                float* dq = dqkv + (long(b) * T + t) * C3 + long(h) * hs;
                // dP[s] = dO . v_s, and dV_s += p[s] dO
                double pdp = 0.0;
                for (int s = 0; s <= t; s++) {
                    const long vo = (long(b) * T + s) * C3 + 2L * C + long(h) * hs;
                    double dot = 0.0;
                    for (int i = 0; i < hs; i++) {
                        dot += double(dO[i]) * qkv[vo + i];
                        dqkv[vo + i] += p[s] * dO[i];
                    }
                    dp[s] = dot;
                    pdp += p[s] * dot;
                }
                // dS[s] = scale p[s] (dP[s] - sum_s' p dP); dQ += dS[s] k_s; dK_s += dS[s] q
                std::fill(dq_acc.begin(), dq_acc.end(), 0.0);
                for (int s = 0; s < T; s++) ds[s] = 0.0f;
                for (int s = 0; s <= t; s++) {
                    const double d = scale * p[s] * (dp[s] - pdp);
                    ds[s] = float(d);
                    const long ko = (long(b) * T + s) * C3 + C + long(h) * hs;
                    for (int i = 0; i < hs; i++) {
                        dq_acc[i] += d * qkv[ko + i];
                        dqkv[ko + i] += float(d * q[i]);
                    }
                }
                for (int i = 0; i < hs; i++) dq[i] += float(dq_acc[i]);
            }
}

}  // namespace ss::cpu
