// attention_block.cpp — one key block of causal attention with the online
// softmax; the math is in attention_block.h. The sgemm forms come first, the
// plain loops (*_reference) after them.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")  // vectorize the softmax loops at -O2; see simd.h
#endif

#include "kernels/cpu/attention_block.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/simd.h"

namespace ss::cpu {

namespace {

// Rows per block where the causal mask cuts the key block (as kBlock in attention.cpp).
constexpr int kBlock = 64;

// row-major sgemm: Cm[M,N] = alpha op(A) op(B) + beta Cm, with leading dimensions given
void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, long lda, const float* Bm,
          long ldb, float beta, float* Cm, long ldc) {
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, M, N, K,
                alpha, A, int(lda), Bm, int(ldb), beta, Cm, int(ldc));
}

// How many keys of the block (0..Tk) query i may see: those at positions <= q_pos + i.
int visible_keys(int i, int Tk, int q_pos, int k_pos) {
    const int n = q_pos + i - k_pos + 1;
    return n < 0 ? 0 : (n > Tk ? Tk : n);
}

// Rows per product: all of them when every query sees the whole block (an earlier
// block), else kBlock, so that each row block stops at the keys its last row sees.
int row_block(int Tq, int Tk, int q_pos, int k_pos) { return visible_keys(0, Tk, q_pos, k_pos) == Tk ? Tq : kBlock; }

}  // namespace


void attention_block_init(float* m, float* l, float* acc, int B, int Tq, int C, int NH) {
    for (long i = 0; i < long(B) * NH * Tq; ++i) {
        m[i] = -INFINITY;
        l[i] = 0.0f;
    }
    for (long i = 0; i < long(B) * Tq * C; ++i) acc[i] = 0.0f;
}

void attention_block_forward(float* m, float* l, float* acc, const float* q_rows, const float* k_rows,
                             const float* v_rows, int kv_stride, int B, int Tq, int Tk, int q_pos, int k_pos, int C,
                             int NH, int q_seq, int k_seq) {
    const int qs = q_seq ? q_seq : Tq, ks = k_seq ? k_seq : Tk;  // rows per sequence
    const int hs = C / NH;
    const long C3 = 3L * C;
    const float scale = 1.0f / std::sqrt(float(hs));
    const int rb = row_block(Tq, Tk, q_pos, k_pos);
    std::vector<float> S(size_t(std::min(rb, Tq)) * Tk);  // scores, then probabilities, of one row block
    for (int b = 0; b < B; ++b)
        for (int h = 0; h < NH; ++h) {
            const float* Q = q_rows + long(b) * qs * C3 + long(h) * hs;
            const float* K = k_rows + long(b) * ks * kv_stride + long(h) * hs;
            const float* V = v_rows + long(b) * ks * kv_stride + long(h) * hs;
            float* A = acc + long(b) * qs * C + long(h) * hs;
            float* mh = m + (long(b) * NH + h) * qs;
            float* lh = l + (long(b) * NH + h) * qs;
            for (int r0 = 0; r0 < Tq; r0 += rb) {
                const int r1 = std::min(Tq, r0 + rb);
                const int n_hi = visible_keys(r1 - 1, Tk, q_pos, k_pos);  // keys [0, n_hi) seen by some row
                if (n_hi == 0) continue;  // this row block (and every earlier one) sees none of the block
                // 1. S = scale Q[r0:r1] K[0:n_hi]^T
                gemm(false, true, r1 - r0, n_hi, hs, scale, Q + r0 * C3, C3, K, kv_stride, 0.0f, S.data(), Tk);
                // 2. online softmax, row by row: P = e^(S - m'), masked keys 0; acc and l rescaled by e^(m - m')
                for (int i = r0; i < r1; ++i) {
                    float* row = S.data() + long(i - r0) * Tk;
                    const int n = visible_keys(i, Tk, q_pos, k_pos);
                    float rescale = 1.0f;
                    if (n > 0) {
                        const float mx = lane_max(row, n), m_new = mh[i] > mx ? mh[i] : mx;
                        rescale = std::exp(mh[i] - m_new);  // 0 on the first block (m = -inf)
                        for (int k = 0; k < n; ++k) row[k] = exp_fast(row[k] - m_new);
                        lh[i] = lh[i] * rescale + lane_sum(row, n);
                        mh[i] = m_new;
                    }
                    for (int k = n; k < n_hi; ++k) row[k] = 0.0f;
                    float* a = A + long(i) * C;
                    for (int d = 0; d < hs; ++d) a[d] *= rescale;
                }
                // 3. acc[r0:r1] += P V[0:n_hi]
                gemm(false, false, r1 - r0, hs, n_hi, 1.0f, S.data(), Tk, V, kv_stride, 1.0f, A + long(r0) * C, C);
            }
        }
}

void attention_block_finish(float* out, float* lse, const float* m, const float* l, const float* acc, int B, int Tq,
                            int C, int NH) {
    const int hs = C / NH;
    for (int b = 0; b < B; ++b)
        for (int h = 0; h < NH; ++h)
            for (int i = 0; i < Tq; ++i) {
                const long row = (long(b) * NH + h) * Tq + i;
                const float inv = 1.0f / l[row];  // every query sees at least itself, so l > 0
                const long o = (long(b) * Tq + i) * C + h * hs;
                for (int d = 0; d < hs; ++d) out[o + d] = acc[o + d] * inv;
                lse[row] = m[row] + std::log(l[row]);
            }
}

void attention_block_delta(float* D, const float* dout, const float* out, int B, int Tq, int C, int NH) {
    const int hs = C / NH;
    for (int b = 0; b < B; ++b)
        for (int h = 0; h < NH; ++h)
            for (int i = 0; i < Tq; ++i) {
                const long o = (long(b) * Tq + i) * C + h * hs;
                D[(long(b) * NH + h) * Tq + i] = lane_dot(dout + o, out + o, hs);
            }
}

void attention_block_backward(float* dq_rows, float* dk_rows, float* dv_rows, const float* dout, const float* q_rows,
                              const float* k_rows, const float* v_rows, int kv_stride, const float* lse,
                              const float* D, int B, int Tq, int Tk, int q_pos, int k_pos, int C, int NH,
                              int q_seq, int k_seq) {
    const int qs = q_seq ? q_seq : Tq, ks = k_seq ? k_seq : Tk;  // rows per sequence
    const int hs = C / NH;
    const long C3 = 3L * C;
    const float scale = 1.0f / std::sqrt(float(hs));
    const int rb = row_block(Tq, Tk, q_pos, k_pos);
    std::vector<float> P(size_t(std::min(rb, Tq)) * Tk), dS(P.size());  // of one row block
    for (int b = 0; b < B; ++b)
        for (int h = 0; h < NH; ++h) {
            const long qo = long(b) * qs * C3 + long(h) * hs, ko = long(b) * ks * kv_stride + long(h) * hs;
            const float *Q = q_rows + qo, *K = k_rows + ko, *V = v_rows + ko;
            float *dQ = dq_rows + qo, *dK = dk_rows + ko, *dV = dv_rows + ko;
            const float* dO = dout + long(b) * qs * C + long(h) * hs;
            const float* lse_h = lse + (long(b) * NH + h) * qs;
            const float* D_h = D + (long(b) * NH + h) * qs;
            for (int r0 = 0; r0 < Tq; r0 += rb) {
                const int r1 = std::min(Tq, r0 + rb), rows = r1 - r0;
                const int n_hi = visible_keys(r1 - 1, Tk, q_pos, k_pos);
                if (n_hi == 0) continue;
                // 1. S = scale Q K^T (into P) and dP = dO V^T (into dS), rows [r0, r1), keys [0, n_hi)
                gemm(false, true, rows, n_hi, hs, scale, Q + r0 * C3, C3, K, kv_stride, 0.0f, P.data(), Tk);
                gemm(false, true, rows, n_hi, hs, 1.0f, dO + long(r0) * C, C, V, kv_stride, 0.0f, dS.data(), Tk);
                // 2. P = e^(S - lse), dS = scale P (dP - D); both 0 where masked
                for (int i = r0; i < r1; ++i) {
                    float* p = P.data() + long(i - r0) * Tk;
                    float* d = dS.data() + long(i - r0) * Tk;
                    const int n = visible_keys(i, Tk, q_pos, k_pos);
                    const float lse_i = lse_h[i], D_i = D_h[i];
                    for (int k = 0; k < n; ++k) {
                        p[k] = exp_fast(p[k] - lse_i);
                        d[k] = scale * p[k] * (d[k] - D_i);
                    }
                    for (int k = n; k < n_hi; ++k) p[k] = d[k] = 0.0f;
                }
                // 3. dQ[r0:r1] += dS K[0:n_hi];  dV[0:n_hi] += P^T dO[r0:r1];  dK[0:n_hi] += dS^T Q[r0:r1]
                gemm(false, false, rows, hs, n_hi, 1.0f, dS.data(), Tk, K, kv_stride, 1.0f, dQ + r0 * C3, C3);
                gemm(true, false, n_hi, hs, rows, 1.0f, P.data(), Tk, dO + long(r0) * C, C, 1.0f, dV, kv_stride);
                gemm(true, false, n_hi, hs, rows, 1.0f, dS.data(), Tk, Q + r0 * C3, C3, 1.0f, dK, kv_stride);
            }
        }
}

// ---- plain loops, for the tests and for reading ----------------------------------

void attention_block_forward_reference(float* m, float* l, float* acc, const float* q_rows, const float* k_rows,
                                       const float* v_rows, int kv_stride, int B, int Tq, int Tk, int q_pos,
                                       int k_pos, int C, int NH, int q_seq, int k_seq) {
    const int qs = q_seq ? q_seq : Tq, ks = k_seq ? k_seq : Tk;  // rows per sequence
    const int hs = C / NH, C3 = 3 * C;
    const float scale = 1.0f / std::sqrt(float(hs));
    std::vector<float> s(static_cast<size_t>(Tk));  // scores of one query against the block
    for (int b = 0; b < B; ++b)
        for (int h = 0; h < NH; ++h)
            for (int i = 0; i < Tq; ++i) {
                const int visible = q_pos + i - k_pos + 1;  // keys 0 .. visible-1 of this block are allowed
                const int n = visible < 0 ? 0 : (visible > Tk ? Tk : visible);
                if (n == 0) continue;
                const float* q = q_rows + (long(b) * qs + i) * C3 + h * hs;
                float mx = -INFINITY;
                for (int k = 0; k < n; ++k) {
                    const float* key = k_rows + (long(b) * ks + k) * kv_stride + h * hs;
                    float dot = 0.0f;
                    for (int d = 0; d < hs; ++d) dot += q[d] * key[d];
                    s[k] = dot * scale;
                    mx = s[k] > mx ? s[k] : mx;
                }
                const long row = (long(b) * NH + h) * qs + i;
                const float m_new = m[row] > mx ? m[row] : mx;
                const float rescale = std::exp(m[row] - m_new);  // 0 on the first block (m = -inf)
                float* a = acc + (long(b) * qs + i) * C + h * hs;
                for (int d = 0; d < hs; ++d) a[d] *= rescale;
                float sum = 0.0f;
                for (int k = 0; k < n; ++k) {
                    const float p = std::exp(s[k] - m_new);
                    sum += p;
                    const float* v = v_rows + (long(b) * ks + k) * kv_stride + h * hs;
                    for (int d = 0; d < hs; ++d) a[d] += p * v[d];
                }
                l[row] = l[row] * rescale + sum;
                m[row] = m_new;
            }
}

void attention_block_backward_reference(float* dq_rows, float* dk_rows, float* dv_rows, const float* dout,
                                        const float* q_rows, const float* k_rows, const float* v_rows, int kv_stride,
                                        const float* lse, const float* D, int B, int Tq, int Tk, int q_pos,
                                        int k_pos, int C, int NH, int q_seq, int k_seq) {
    const int qs = q_seq ? q_seq : Tq, ks = k_seq ? k_seq : Tk;  // rows per sequence
    const int hs = C / NH, C3 = 3 * C;
    const float scale = 1.0f / std::sqrt(float(hs));
    for (int b = 0; b < B; ++b)
        for (int h = 0; h < NH; ++h)
            for (int i = 0; i < Tq; ++i) {
                const int visible = q_pos + i - k_pos + 1;
                const int n = visible < 0 ? 0 : (visible > Tk ? Tk : visible);
                const long row = (long(b) * NH + h) * qs + i;
                const float* q = q_rows + (long(b) * qs + i) * C3 + h * hs;
                float* dq = dq_rows + (long(b) * qs + i) * C3 + h * hs;
                const float* dO = dout + (long(b) * qs + i) * C + h * hs;
                for (int k = 0; k < n; ++k) {
                    const long r = (long(b) * ks + k) * kv_stride + h * hs;
                    const float* key = k_rows + r;
                    const float* v = v_rows + r;
                    float* dkey = dk_rows + r;
                    float* dv = dv_rows + r;
                    float dot = 0.0f, dp = 0.0f;
                    for (int d = 0; d < hs; ++d) {
                        dot += q[d] * key[d];
                        dp += dO[d] * v[d];
                    }
                    const float p = std::exp(dot * scale - lse[row]);
                    const float ds = p * (dp - D[row]) * scale;
                    for (int d = 0; d < hs; ++d) {
                        dv[d] += p * dO[d];
                        dq[d] += ds * key[d];
                        dkey[d] += ds * q[d];
                    }
                }
            }
}

}  // namespace ss::cpu
