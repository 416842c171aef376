// attention_block.cpp — one key block of causal attention with the online
// softmax; the math is in attention_block.h. The register-tile forms
// (tile.h) come first, the plain loops (*_reference) after them.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")  // vectorize the softmax loops at -O2; see simd.h
// and keep TilePanels::rows's copy of a head's row (32 or 64 floats) a loop: GCC otherwise makes it a
// memcpy call per row, whose call and dispatch were a tenth of the attention core's time (perf).
#pragma GCC optimize("no-tree-loop-distribute-patterns")
#endif

#include "kernels/cpu/attention_block.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/check.h"
#include "kernels/cpu/simd.h"
#include "kernels/cpu/tile.h"

namespace ss::cpu {

namespace {

// The tiles rely on the mask's shape: each query sees a prefix of the block
// (at most Tk keys), and a later query no fewer keys than an earlier one.
void check_visible(const int* visible, int Tq, int Tk) {
    for (int i = 0; i < Tq; ++i)
        SS_CHECK(visible[i] >= 0 && visible[i] <= Tk && (i == 0 || visible[i] >= visible[i - 1]),
                 "attention block: visible[" << i << "] = " << visible[i] << " (Tk " << Tk << ", the row before "
                                            << (i ? visible[i - 1] : 0)
                                            << "): each query must see a prefix of the block's keys, no shorter "
                                               "than the query before it's (queries and keys in position order)");
}

// A row's loops run to a whole number of lane groups (lanes(n) <= the row's padded length,
// a whole number of tiles) and select by index, so that none has a scalar tail: a tail's
// exp_fast per element cost more than the row's vector part (up to 15 of them a row).
static_assert(kTileWidth % kLanes == 0, "a tile's width is a whole number of lane groups");
int lanes(int n) { return (n + kLanes - 1) / kLanes * kLanes; }

// The next head's key and value rows that row tile [r0, r0 + rows) of Tq asks for
// (tile.h): keys [0, seen) in proportion, so that the tiles together ask for them all.
void prefetch_next_keys(const float* k_rows, const float* v_rows, long kv_stride, int r0, int rows, int Tq, int seen,
                        int hs) {
    const int k0 = int(long(r0) * seen / Tq), k1 = r0 + rows == Tq ? seen : int(long(r0 + rows) * seen / Tq);
    prefetch_head_rows(k_rows, kv_stride, k0, k1, hs);
    prefetch_head_rows(v_rows, kv_stride, k0, k1, hs);
}

}  // namespace

std::vector<int> causal_visible(int Tq, int Tk, int q_pos, int k_pos) {
    std::vector<int> v(size_t(Tq > 0 ? Tq : 0));
    for (int i = 0; i < Tq; ++i) {
        const int n = q_pos + i - k_pos + 1;  // keys at positions k_pos .. q_pos + i
        v[size_t(i)] = n < 0 ? 0 : (n > Tk ? Tk : n);
    }
    return v;
}

void attention_block_init(float* m, float* l, float* acc, int B, int Tq, int C, int NH) {
    for (long i = 0; i < long(B) * NH * Tq; ++i) {
        m[i] = -INFINITY;
        l[i] = 0.0f;
    }
    for (long i = 0; i < long(B) * Tq * C; ++i) acc[i] = 0.0f;
}

void attention_block_forward(float* m, float* l, float* acc, const float* q_rows, int q_stride, const float* k_rows,
                             const float* v_rows, int kv_stride, int B, int Tq, int Tk, const int* visible, int C,
                             int NH) {
    check_visible(visible, Tq, Tk);
    const int hs = C / NH;
    const long qs = q_stride;
    const float scale = 1.0f / std::sqrt(float(hs));
    // Keys [0, seen) are seen by some query (the last sees most); only those are packed. The
    // panels start zeroed, so a tile's columns past them read 0, and the mask drops them.
    const int seen = Tq > 0 ? visible[Tq - 1] : 0;
    if (seen == 0) return;  // the whole block is in my queries' future
    const TilePanels keys(Tk, hs);
    std::vector<float> Kt = keys.transposed_buffer(), V = keys.rows_buffer();
    std::vector<float> S(size_t(kTileRows) * keys.n_pad), G(size_t(kTileRows) * keys.ld);  // one row tile
    for (int b = 0; b < B; ++b)
        for (int h = 0; h < NH; ++h) {
            const float* Q = q_rows + long(b) * Tq * qs + long(h) * hs;
            keys.transposed_rows(Kt, k_rows + long(b) * Tk * kv_stride + long(h) * hs, kv_stride, seen);
            keys.rows(V, v_rows + long(b) * Tk * kv_stride + long(h) * hs, kv_stride, 0, seen);
            float* A = acc + long(b) * Tq * C + long(h) * hs;
            float* mh = m + (long(b) * NH + h) * Tq;
            float* lh = l + (long(b) * NH + h) * Tq;
            const NextHead next(b, h, B, NH);
            const float* next_q = q_rows + next.offset(Tq, qs, hs);
            const long next_kv = next.offset(Tk, kv_stride, hs);
            for (int r0 = 0; r0 < Tq; r0 += kTileRows) {
                const int rows = std::min(kTileRows, Tq - r0);
                if (next.exists) {  // the next head's rows of this tile's share (tile.h): its queries, its keys in proportion
                    prefetch_head_rows(next_q, qs, r0, r0 + rows, hs);
                    prefetch_next_keys(k_rows + next_kv, v_rows + next_kv, kv_stride, r0, rows, Tq, seen, hs);
                }
                const int n_hi = visible[r0 + rows - 1];  // keys [0, n_hi) seen by some row (the last sees most)
                if (n_hi == 0) continue;  // this row tile (and every earlier one) sees none of the block
                // 1. S = Q[r0:r0+rows] K[0:n_hi]^T, a tile of columns at a time (scaled in 2.)
                for (int j = 0; j < n_hi; j += kTileWidth)
                    tile_product(rows, hs, Q + r0 * qs, qs, 1, Kt.data() + j, keys.n_pad, S.data() + j, keys.n_pad);
                // 2. online softmax, row by row: P = e^(scale S - m'), masked keys 0; acc and l rescaled by e^(m - m')
                for (int i = 0; i < rows; ++i) {
                    const int q = r0 + i;
                    float* row = S.data() + long(i) * keys.n_pad;
                    const int n = visible[q];
                    float rescale = 1.0f;
                    const bool acc_zero = lh[q] == 0.0f;  // no block has added to this row yet
                    if (n > 0) {
                        const int nl = lanes(n);
                        for (int k = 0; k < nl; ++k) {
                            const float v = row[k] * scale;
                            row[k] = k < n ? v : -INFINITY;
                        }
                        const float mx = lane_max_fast(row, nl), m_new = mh[q] > mx ? mh[q] : mx;
                        rescale = std::exp(mh[q] - m_new);  // 0 on the first block (m = -inf)
                        for (int k = 0; k < nl; ++k) {
                            const float e = exp_fast(row[k] - m_new);
                            row[k] = k < n ? e : 0.0f;
                        }
                        lh[q] = lh[q] * rescale + lane_sum(row, nl);
                        mh[q] = m_new;
                    }
                    for (int k = n; k < n_hi; ++k) row[k] = 0.0f;
                    // acc *= rescale, skipped where it changes nothing: the row's first block
                    // (acc and l still 0) or a max that did not move (e^0 = 1). Reading acc from
                    // memory here was a third of this function's time outside the tiles (perf).
                    if (rescale != 1.0f && !acc_zero) {
                        float* a = A + long(q) * C;
                        for (int d = 0; d < hs; ++d) a[d] *= rescale;
                    }
                }
                // 3. acc[r0:r0+rows] += P V[0:n_hi]
                tile_product_into(rows, n_hi, S.data(), keys.n_pad, 1, V.data(), keys.ld, A + long(r0) * C, C, hs, true,
                                  G.data(), keys.ld);
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

void attention_block_backward(float* dq_rows, float* dk_rows, float* dv_rows, int dkv_stride, const float* dout,
                              const float* q_rows, int q_stride, const float* k_rows, const float* v_rows, int kv_stride, const float* lse,
                              const float* D, int B, int Tq, int Tk, const int* visible, int C, int NH,
                              bool overwrite) {
    check_visible(visible, Tq, Tk);
    SS_CHECK(!overwrite || Tq == 0 || (visible[0] >= 1 && visible[Tq - 1] == Tk),
             "attention block backward, overwrite: every query must see a key and every key be seen (visible[0] = "
                 << (Tq ? visible[0] : 0) << ", visible[Tq-1] = " << (Tq ? visible[Tq - 1] : 0) << ", Tk " << Tk
                 << "), or rows of the gradients would be left unwritten: add into zeroed ones instead");
    const bool add = !overwrite;
    const int hs = C / NH;
    const long C3 = 3L * C, qs = q_stride;
    const float scale = 1.0f / std::sqrt(float(hs));
    // Only what some product reads is packed: keys [0, seen), which some query sees, and
    // queries [first, Tq), which see some key (visible is nondecreasing). The panels start
    // zeroed; a tile's columns past `seen` read 0 and the mask drops them.
    const int seen = Tq > 0 ? visible[Tq - 1] : 0;
    if (seen == 0) return;  // the whole block is in my queries' future: nothing to add
    const int first = int(std::upper_bound(visible, visible + Tq, 0) - visible);
    const TilePanels keys(Tk, hs), queries(Tq, hs);
    std::vector<float> K = keys.rows_buffer(), Kt = keys.transposed_buffer(), Vt = keys.transposed_buffer(),
                       Qr = queries.rows_buffer(), dOr = queries.rows_buffer();
    // P and dS of one (b, h): Tq x Tk, recomputed here and dropped after it (never saved)
    std::vector<float> P(size_t(Tq) * keys.n_pad), dS(P.size()), G(size_t(kTileRows) * keys.ld);
    const long ld = keys.n_pad;
    for (int b = 0; b < B; ++b)
        for (int h = 0; h < NH; ++h) {
            const long qo = long(b) * Tq * C3 + long(h) * hs, ko = long(b) * Tk * kv_stride + long(h) * hs;
            const float* Q = q_rows + long(b) * Tq * qs + long(h) * hs;
            const long dko = long(b) * Tk * dkv_stride + long(h) * hs;
            float *dQ = dq_rows + qo, *dK = dk_rows + dko, *dV = dv_rows + dko;
            const float* dO = dout + long(b) * Tq * C + long(h) * hs;
            const float* lse_h = lse + (long(b) * NH + h) * Tq;
            const float* D_h = D + (long(b) * NH + h) * Tq;
            keys.rows(K, k_rows + ko, kv_stride, 0, seen);
            keys.transposed(Kt, K, seen);
            keys.transposed_rows(Vt, v_rows + ko, kv_stride, seen);
            queries.rows(Qr, Q, qs, first, Tq);
            queries.rows(dOr, dO, C, first, Tq);
            const NextHead next(b, h, B, NH);
            const float* next_q = q_rows + next.offset(Tq, qs, hs);
            const float* next_dO = dout + next.offset(Tq, C, hs);
            const long next_kv = next.offset(Tk, kv_stride, hs);
            // Query side, by tiles of query rows [r0, r0 + rows): they see keys [0, n_hi).
            for (int r0 = 0; r0 < Tq; r0 += kTileRows) {
                const int rows = std::min(kTileRows, Tq - r0);
                if (next.exists) {  // as in forward, and the next head's rows of dO
                    prefetch_head_rows(next_q, qs, r0, r0 + rows, hs);
                    prefetch_head_rows(next_dO, C, r0, r0 + rows, hs);
                    prefetch_next_keys(k_rows + next_kv, v_rows + next_kv, kv_stride, r0, rows, Tq, seen, hs);
                }
                const int n_hi = visible[r0 + rows - 1];
                if (n_hi == 0) continue;  // rows that see no key: nothing to add, and step 4 never reads them
                float *p0 = P.data() + long(r0) * ld, *d0 = dS.data() + long(r0) * ld;
                // 1. S = Q K^T (into P) and dP = dO V^T (into dS), rows [r0, r0+rows), keys [0, n_hi)
                for (int j = 0; j < n_hi; j += kTileWidth) {
                    tile_product(rows, hs, Q + r0 * qs, qs, 1, Kt.data() + j, ld, p0 + j, ld);
                    tile_product(rows, hs, dO + long(r0) * C, C, 1, Vt.data() + j, ld, d0 + j, ld);
                }
                // 2. P = e^(scale S - lse), dS = scale P (dP - D); both 0 where masked, up to Tk
                for (int i = 0; i < rows; ++i) {
                    const int q = r0 + i;
                    float* p = p0 + long(i) * ld;
                    float* d = d0 + long(i) * ld;
                    const int n = visible[q];
                    const float lse_i = lse_h[q], D_i = D_h[q];
                    const int nl = n > 0 ? lanes(n) : 0;
                    for (int k = 0; k < nl; ++k) {
                        const float pk = exp_fast(scale * p[k] - lse_i), dk = scale * pk * (d[k] - D_i);
                        p[k] = k < n ? pk : 0.0f;
                        d[k] = k < n ? dk : 0.0f;
                    }
                    for (int k = nl; k < Tk; ++k) p[k] = d[k] = 0.0f;
                }
                // 3. dQ[r0:r0+rows] += dS K[0:n_hi]
                tile_product_into(rows, n_hi, d0, ld, 1, K.data(), keys.ld, dQ + r0 * C3, C3, hs, add, G.data(),
                                  keys.ld);
            }
            // 4. Key side, by tiles of key rows [s0, s0 + rows): the queries from q_lo on see them.
            //    dV[s0:] += P[q_lo:Tq, s0:]^T dO[q_lo:Tq],  dK[s0:] += dS[q_lo:Tq, s0:]^T Q[q_lo:Tq]
            //    (P and dS read down their columns: a_row = 1, a_k = ld)
            int q_lo = 0;  // the first query that sees key s0: it only moves down as s0 grows
            for (int s0 = 0; s0 < Tk; s0 += kTileRows) {
                const int rows = std::min(kTileRows, Tk - s0);
                while (q_lo < Tq && visible[q_lo] <= s0) ++q_lo;
                if (q_lo >= Tq) break;  // no query sees this key, nor any later one
                const long at = long(q_lo) * ld + s0;
                tile_product_into(rows, Tq - q_lo, P.data() + at, 1, ld, dOr.data() + long(q_lo) * queries.ld,
                                  queries.ld, dV + long(s0) * dkv_stride, dkv_stride, hs, add, G.data(), keys.ld);
                tile_product_into(rows, Tq - q_lo, dS.data() + at, 1, ld, Qr.data() + long(q_lo) * queries.ld,
                                  queries.ld, dK + long(s0) * dkv_stride, dkv_stride, hs, add, G.data(), keys.ld);
            }
        }
}

// ---- plain loops, for the tests and for reading ----------------------------------

void attention_block_forward_reference(float* m, float* l, float* acc, const float* q_rows, int q_stride,
                                       const float* k_rows, const float* v_rows, int kv_stride, int B, int Tq, int Tk,
                                       const int* visible, int C, int NH) {
    const int hs = C / NH;
    const float scale = 1.0f / std::sqrt(float(hs));
    std::vector<float> s(static_cast<size_t>(Tk));  // scores of one query against the block
    for (int b = 0; b < B; ++b)
        for (int h = 0; h < NH; ++h)
            for (int i = 0; i < Tq; ++i) {
                const int n = visible[i];  // keys 0 .. n-1 of this block are allowed
                if (n == 0) continue;
                const float* q = q_rows + (long(b) * Tq + i) * q_stride + h * hs;
                float mx = -INFINITY;
                for (int k = 0; k < n; ++k) {
                    const float* key = k_rows + (long(b) * Tk + k) * kv_stride + h * hs;
                    float dot = 0.0f;
                    for (int d = 0; d < hs; ++d) dot += q[d] * key[d];
                    s[k] = dot * scale;
                    mx = s[k] > mx ? s[k] : mx;
                }
                const long row = (long(b) * NH + h) * Tq + i;
                const float m_new = m[row] > mx ? m[row] : mx;
                const float rescale = std::exp(m[row] - m_new);  // 0 on the first block (m = -inf)
                float* a = acc + (long(b) * Tq + i) * C + h * hs;
                for (int d = 0; d < hs; ++d) a[d] *= rescale;
                float sum = 0.0f;
                for (int k = 0; k < n; ++k) {
                    const float p = std::exp(s[k] - m_new);
                    sum += p;
                    const float* v = v_rows + (long(b) * Tk + k) * kv_stride + h * hs;
                    for (int d = 0; d < hs; ++d) a[d] += p * v[d];
                }
                l[row] = l[row] * rescale + sum;
                m[row] = m_new;
            }
}

void attention_block_backward_reference(float* dq_rows, float* dk_rows, float* dv_rows, int dkv_stride,
                                        const float* dout, const float* q_rows, int q_stride, const float* k_rows,
                                        const float* v_rows, int kv_stride, const float* lse, const float* D, int B, int Tq, int Tk, const int* visible,
                                        int C, int NH) {
    const int hs = C / NH, C3 = 3 * C;
    const float scale = 1.0f / std::sqrt(float(hs));
    for (int b = 0; b < B; ++b)
        for (int h = 0; h < NH; ++h)
            for (int i = 0; i < Tq; ++i) {
                const int n = visible[i];
                const long row = (long(b) * NH + h) * Tq + i;
                const float* q = q_rows + (long(b) * Tq + i) * q_stride + h * hs;
                float* dq = dq_rows + (long(b) * Tq + i) * C3 + h * hs;
                const float* dO = dout + (long(b) * Tq + i) * C + h * hs;
                for (int k = 0; k < n; ++k) {
                    const long r = (long(b) * Tk + k) * kv_stride + h * hs;
                    const float* key = k_rows + r;
                    const float* v = v_rows + r;
                    const long dr = (long(b) * Tk + k) * dkv_stride + h * hs;
                    float* dkey = dk_rows + dr;
                    float* dv = dv_rows + dr;
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
