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
// The four products per (b, h) are register tiles (tile.h), kTileRows query
// (or key) rows at a time, so the causal mask is followed row tile by row
// tile: rows [r0, r0 + 6) need keys [0, r0 + 6) only, and about half the
// flops of the full T x T products are never done. Before the tiles, K^T and
// V (in backward Q, K, V^T, dO) of the head are copied into panels padded to
// the tile width with zeros, 2 to 4 T x hs copies against the T^2 hs
// products (K^T and V^T transposed straight from qkv, 8 x 8 floats at a time
// in registers); the other operand is read in place through its strides. The
// masked softmax and its backward are loops over each row. While a row tile
// computes, the next row tile's rows of P and the same rows of the next head's
// q, k, v (and dO) are prefetched (tile.h: they come from memory in a step;
// attention backward 1.2-1.3x faster, docs/performance.md).
//
// att keeps P with the masked entries 0, so backward needs no recomputation
// (the T x T matrix is saved: Korthikanti et al.'s 5as^2b term). The
// *_reference functions are the same math in plain loops (as llm.c's
// attention_forward), for the tests.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")  // vectorize the softmax loops at -O2; see simd.h
// and keep TilePanels::rows's copy of a head's row (32 or 64 floats) a loop: GCC otherwise makes it a
// memcpy call per row, whose call and dispatch were a tenth of the attention core's time (perf).
#pragma GCC optimize("no-tree-loop-distribute-patterns")
#endif

#include "kernels/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/check.h"
#include "kernels/cpu/simd.h"
#include "kernels/cpu/tile.h"

namespace ss::cpu {

namespace {

// The softmax loops pad a row to whole lane groups inside the S buffer, whose rows are
// padded to whole tiles.
static_assert(kTileWidth % kLanes == 0, "a tile's width is a whole number of lane groups");

void check_shape(int C, int NH) {
    SS_CHECK(NH > 0 && C % NH == 0, "attention: C=" << C << " is not divisible by NH=" << NH
                                                    << "; the head size C/NH must be a whole number");
}

}  // namespace

void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH) {
    check_shape(C, NH);
    const int hs = C / NH;
    const long C3 = 3L * C;
    const float scale = 1.0f / std::sqrt(float(hs));
    const TilePanels pan(T, hs);
    std::vector<float> Kt = pan.transposed_buffer(), V = pan.rows_buffer();
    std::vector<float> S(size_t(kTileRows) * pan.n_pad), O(size_t(kTileRows) * pan.ld);  // one row tile
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            const float* Q = qkv + long(b) * T * C3 + long(h) * hs;
            pan.transposed_rows(Kt, Q + C, C3);
            pan.rows(V, Q + 2L * C, C3);
            float* P = att + (long(b) * NH + h) * T * T;
            const NextHead next(b, h, B, NH);
            const float* next_q = qkv + next.offset(T, C3, hs);
            for (int r0 = 0; r0 < T; r0 += kTileRows) {
                const int rows = std::min(kTileRows, T - r0), keys = r0 + rows;  // keys [0, keys) seen
                for (int t = r0 + rows; t < std::min(T, r0 + 2 * rows); ++t) prefetch_span(P + long(t) * T, T, true);
                if (next.exists)
                    for (long part : {0L, long(C), 2L * C}) prefetch_head_rows(next_q + part, C3, r0, r0 + rows, hs);
                // 1. S = Q[r0:r0+rows] K[0:keys]^T, one tile of columns at a time
                for (int j = 0; j < keys; j += kTileWidth)
                    tile_product(rows, hs, Q + r0 * C3, C3, 1, Kt.data() + j, pan.n_pad, S.data() + j, pan.n_pad);
                // 2. masked softmax of scale S, row by row, written to P: keys s <= t kept, the rest 0.
                //    The loops over S run to a whole number of lane groups (n_lanes <= pan.n_pad, the
                //    row's length) and the one writing P to T, masking by index, so that none has a
                //    scalar tail.
                for (int i = 0; i < rows; i++) {
                    const int t = r0 + i, n_lanes = (t + kLanes) / kLanes * kLanes;
                    float* row = S.data() + long(i) * pan.n_pad;
                    float* p = P + long(t) * T;
                    for (int s = 0; s < n_lanes; s++) {
                        const float v = row[s] * scale;  // every lane computed, then selected: no masked loads
                        row[s] = s <= t ? v : -INFINITY;
                    }
                    const float rmax = lane_max_fast(row, n_lanes);
                    for (int s = 0; s < n_lanes; s++) {
                        const float e = exp_fast(row[s] - rmax);
                        row[s] = s <= t ? e : 0.0f;
                    }
                    const float inv_sum = 1.0f / lane_sum(row, n_lanes);
                    const int kept = std::min(n_lanes, T);
                    for (int s = 0; s < kept; s++) {
                        const float v = row[s] * inv_sum;
                        p[s] = s <= t ? v : 0.0f;
                    }
                    for (int s = kept; s < T; s++) p[s] = 0.0f;
                }
                // 3. O[r0:r0+rows] = P[r0:r0+rows, 0:keys] V[0:keys]
                tile_product_into(rows, keys, P + long(r0) * T, T, 1, V.data(), pan.ld,
                                  out + (long(b) * T + r0) * C + long(h) * hs, C, hs, false, O.data(), pan.ld);
            }
        }
}

void attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv, const float* att, int B,
                        int T, int C, int NH, bool overwrite) {
    const bool add = !overwrite;  // each element of dqkv is written by one tile: started from 0 or from dqkv
    check_shape(C, NH);
    const int hs = C / NH;
    const long C3 = 3L * C;
    const float scale = 1.0f / std::sqrt(float(hs));
    const TilePanels pan(T, hs);
    std::vector<float> Vt = pan.transposed_buffer(), K = pan.rows_buffer(), Q = pan.rows_buffer(),
                       dO = pan.rows_buffer();
    std::vector<float> D(size_t(kTileRows) * pan.n_pad), G(size_t(kTileRows) * pan.ld);  // one row tile
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            const long qkv_off = long(b) * T * C3 + long(h) * hs;
            const float* dO_rows = dout + long(b) * T * C + long(h) * hs;
            pan.rows(Q, qkv + qkv_off, C3);
            pan.rows(K, qkv + qkv_off + C, C3);
            pan.transposed_rows(Vt, qkv + qkv_off + 2L * C, C3);
            pan.rows(dO, dO_rows, C);
            float *dQ = dqkv + qkv_off, *dK = dQ + C, *dV = dQ + 2L * C;
            const float* P = att + (long(b) * NH + h) * T * T;
            float* dS = scratch;  // this head's dS, T x T: the same L2-sized piece for every head
            const NextHead next(b, h, B, NH);
            const long next_off = next.offset(T, C3, hs);
            const float* next_dO = dout + next.offset(T, C, hs);
            // Query side, by tiles of query rows [r0, r0 + rows): they see keys [0, keys).
            for (int r0 = 0; r0 < T; r0 += kTileRows) {
                const int rows = std::min(kTileRows, T - r0), keys = r0 + rows;
                for (int t = r0 + rows; t < std::min(T, r0 + 2 * rows); ++t)
                    prefetch_span(P + long(t) * T, t + 1, false);  // the part of the row read below
                if (next.exists) {
                    for (long part : {0L, long(C), 2L * C})
                        prefetch_head_rows(qkv + next_off + part, C3, r0, r0 + rows, hs);
                    prefetch_head_rows(next_dO, C, r0, r0 + rows, hs);
                }
                // 1. dP[r0:r0+rows, 0:keys] = dO[r0:r0+rows] V[0:keys]^T
                for (int j = 0; j < keys; j += kTileWidth)
                    tile_product(rows, hs, dO_rows + r0 * C, C, 1, Vt.data() + j, pan.n_pad, D.data() + j, pan.n_pad);
                // 2. softmax backward, scaled, written to dS: dS = scale P (dP - rowsum(P dP)); 0 above
                //    the diagonal. Only the columns s < keys are ever read (here by step 3; in step 4 the
                //    key tile [s0, s0 + 6) reads rows t >= s0, and s0 <= t means s0 <= r0): the loop runs
                //    to them, rounded up to whole lane groups so that it has no scalar tail.
                const int cols = std::min(T, (keys + kLanes - 1) / kLanes * kLanes);
                for (int i = 0; i < rows; i++) {
                    const int t = r0 + i;
                    const float* p = P + long(t) * T;
                    const float* d = D.data() + long(i) * pan.n_pad;
                    const float pdp = lane_dot(p, d, t + 1);
                    float* ds = dS + long(t) * T;
                    for (int s = 0; s < cols; s++) {  // every lane computed, then selected (cols <= pan.n_pad)
                        const float v = scale * p[s] * (d[s] - pdp);
                        ds[s] = s <= t ? v : 0.0f;
                    }
                }
                // 3. dQ[r0:r0+rows] += dS[r0:r0+rows, 0:keys] K[0:keys]
                tile_product_into(rows, keys, dS + long(r0) * T, T, 1, K.data(), pan.ld, dQ + r0 * C3, C3, hs, add,
                                  G.data(), pan.ld);
            }
            // 4. Key side, by tiles of key rows [s0, s0 + rows): only queries t >= s0 see them.
            //    dV[s0:] += P[s0:T, s0:]^T dO[s0:T],  dK[s0:] += dS[s0:T, s0:]^T Q[s0:T]
            //    (P and dS read down their columns: a_row = 1, a_k = T)
            for (int s0 = 0; s0 < T; s0 += kTileRows) {
                const int rows = std::min(kTileRows, T - s0), queries = T - s0;
                const long at = long(s0) * T + s0;
                tile_product_into(rows, queries, P + at, 1, T, dO.data() + long(s0) * pan.ld, pan.ld, dV + s0 * C3,
                                  C3, hs, add, G.data(), pan.ld);
                tile_product_into(rows, queries, dS + at, 1, T, Q.data() + long(s0) * pan.ld, pan.ld, dK + s0 * C3,
                                  C3, hs, add, G.data(), pan.ld);
            }
        }
}

// ---- plain loops, for the tests and for reading ----------------------------------
// Dot products and row sums in double, so the reference is the more accurate
// side when the tests compare it with the tiled path.

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
