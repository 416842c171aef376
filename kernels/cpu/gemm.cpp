// gemm.cpp — C = A B on register tiles (gemm.h has the layout and the reasons).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")  // vectorize the packing loops at -O2; see simd.h
// and keep the copy of a panel's row (kTileWidth floats) a loop, not a memcpy call per row (attention.cpp)
#pragma GCC optimize("no-tree-loop-distribute-patterns")
#endif
#include "kernels/cpu/gemm.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/check.h"

namespace ss::cpu {

namespace {

/// B(k0 + k, n) for k < kb into panels [panel][k][kTileWidth], zero past column N;
/// and, when @p column_sums is not null, column_sums[n] += B(k0 + k, n), k ascending.
void pack_panels(float* dst, MatrixView B, int k0, int kb, int N, float* column_sums) {
    const int panels = tile_padded(N) / kTileWidth;
    for (int p = 0; p < panels; ++p) {
        float* panel = dst + long(p) * kb * kTileWidth;
        const int n0 = p * kTileWidth, width = std::min(kTileWidth, N - n0);
        if (B.col == 1 && width == kTileWidth) {  // a whole panel of contiguous rows: kTileVecs vectors a row,
            // the column sums kept in registers across the K-block (the same adds, k ascending, as below)
            using detail::TileVec;
            TileVec sums[kTileVecs] = {};
            if (column_sums != nullptr)
                for (int v = 0; v < kTileVecs; ++v)
                    sums[v] = *reinterpret_cast<const TileVec*>(column_sums + n0 + v * kVecFloats);
            for (int k = 0; k < kb; ++k) {
                const float* src = B.data + long(k0 + k) * B.row + n0;
                for (int v = 0; v < kTileVecs; ++v) {
                    const TileVec x = *reinterpret_cast<const TileVec*>(src + v * kVecFloats);
                    *reinterpret_cast<TileVec*>(panel + k * kTileWidth + v * kVecFloats) = x;
                    sums[v] += x;
                }
            }
            if (column_sums != nullptr)
                for (int v = 0; v < kTileVecs; ++v)
                    *reinterpret_cast<TileVec*>(column_sums + n0 + v * kVecFloats) = sums[v];
        } else if (B.col == 1) {  // the last, partial panel: copy along the rows, zero past column N
            for (int k = 0; k < kb; ++k) {
                const float* src = B.data + long(k0 + k) * B.row + n0;
                for (int w = 0; w < width; ++w) panel[k * kTileWidth + w] = src[w];
                for (int w = width; w < kTileWidth; ++w) panel[k * kTileWidth + w] = 0.0f;
                if (column_sums != nullptr)
                    for (int w = 0; w < width; ++w) column_sums[n0 + w] += src[w];
            }
        } else if (B.row == 1 && width == kTileWidth) {  // B read by columns, each contiguous along k (dinp's W^T):
            // 8 x 8 blocks, 8 columns' runs of 8 k loaded as vectors and stored as 8 panel rows; then the k
            // past a multiple of 8 one at a time. The column sums, k ascending, as in the loop below.
            const int k8 = kb / 8 * 8;
            for (int k = 0; k < k8; k += 8)
                for (int w0 = 0; w0 < kTileWidth; w0 += 8) {
                    detail::Vec8 r[8];
#pragma GCC unroll 8
                    for (int i = 0; i < 8; ++i)
                        r[i] = *reinterpret_cast<const detail::Vec8*>(B.data + k0 + k + long(n0 + w0 + i) * B.col);
                    detail::transpose8(r);
#pragma GCC unroll 8
                    for (int j = 0; j < 8; ++j) {
                        *reinterpret_cast<detail::Vec8*>(panel + (k + j) * kTileWidth + w0) = r[j];
                        if (column_sums != nullptr) *reinterpret_cast<detail::Vec8*>(column_sums + n0 + w0) += r[j];
                    }
                }
            for (int w = 0; w < kTileWidth; ++w)
                for (int k = k8; k < kb; ++k) {
                    const float v = B.data[k0 + k + long(n0 + w) * B.col];
                    panel[k * kTileWidth + w] = v;
                    if (column_sums != nullptr) column_sums[n0 + w] += v;
                }
        } else {  // B read by columns (a transposed weight): walk each column along k
            for (int w = 0; w < kTileWidth; ++w)
                for (int k = 0; k < kb; ++k) {
                    const float v = w < width ? B.data[long(k0 + k) * B.row + long(n0 + w) * B.col] : 0.0f;
                    panel[k * kTileWidth + w] = v;
                    if (column_sums != nullptr && w < width) column_sums[n0 + w] += v;
                }
        }
    }
}

/// Asks for the rows [m, m + rows) of A's K-block [k0, k0 + kb) to be brought
/// into cache while the tiles of the rows before them run: A is read in place,
/// and a saved activation is usually in memory, not in cache. Rows along memory
/// only: for an A read by columns (dW's x^T) the next strip's 6 values of a k lie
/// mostly in the lines the strip just copied, and the kb prefetches a strip
/// (two a k, until 2026-12-03) saved nothing: the two forms called in turn, 80 pairs,
/// which goes first alternating, at `small`'s four dW shapes, hot and cold in cache, the
/// median time ratio with/without was 0.97-1.02 (2026-12-04). A first measurement that
/// always called the prefetching form first read 0.996-1.101: that was the order's bias
/// (the second call finds the shared inputs warmer; the same code on both sides read
/// up to 1.13 so). Left out as the simpler form, not as a faster one.
void prefetch_rows(MatrixView A, int m, int rows, int k0, int kb) {
    constexpr int kLineFloats = 16;  // 64-byte cache lines
    for (int r = 0; r < rows; ++r)
        for (int k = 0; k < kb; k += kLineFloats) __builtin_prefetch(A.data + long(m + r) * A.row + k0 + k);
}

}  // namespace

void gemm(int M, int N, int K, MatrixView A, MatrixView B, float* c, long ldc, TileStart start, const float* bias,
          float* b_column_sums) {
    SS_CHECK(M >= 0 && N >= 0 && K >= 0, "gemm: negative size " << M << " x " << N << " x " << K);
    SS_CHECK(start != TileStart::row || bias != nullptr, "gemm: TileStart::row needs a bias");
    if (N == 0 || (M == 0 && b_column_sums == nullptr)) return;
    thread_local std::vector<float> panels;    // B's panels, one K-block at a time
    thread_local std::vector<float> bias_row;  // the bias, zero-padded to whole panels
    thread_local std::vector<float> a_strip;   // 6 rows of a transposed A, one K-block: [k][kTileRows]
    const int n_pad = tile_padded(N);
    if (start == TileStart::row) {
        bias_row.assign(size_t(n_pad), 0.0f);
        std::copy(bias, bias + N, bias_row.begin());
    }
    if (K == 0) {  // C = start
        for (int m = 0; m < M; ++m)
            for (int n = 0; n < N; ++n)
                if (start != TileStart::add) c[long(m) * ldc + n] = start == TileStart::row ? bias[n] : 0.0f;
        return;
    }
    float tail[kTileRows * kTileWidth];  // the last panel's tile when N is not a whole number of panels
    for (int k0 = 0; k0 < K; k0 += kGemmKBlock) {
        const int kb = std::min(kGemmKBlock, K - k0);
        const TileStart s = k0 == 0 ? start : TileStart::add;  // later K-blocks add to the first's sums
        for (int nb0 = 0; nb0 < N; nb0 += kGemmNBlock) {
            const int nb = std::min(kGemmNBlock, N - nb0), n_panels = tile_padded(nb) / kTileWidth;
            const MatrixView B_block{B.data + long(nb0) * B.col, B.row, B.col};
            // grown, never shrunk: resize zero-fills what it adds, and the shapes of a step alternate
            if (panels.size() < size_t(n_panels) * kb * kTileWidth) panels.resize(size_t(n_panels) * kb * kTileWidth);
            pack_panels(panels.data(), B_block, k0, kb, nb,
                        b_column_sums != nullptr ? b_column_sums + nb0 : nullptr);
            for (int m = 0; m < M; m += kTileRows) {
                const int rows = std::min(kTileRows, M - m);
                const float* a = A.data + long(m) * A.row + long(k0) * A.col;
                long a_row = A.row, a_k = A.col;
                if (m + kTileRows < M && A.col == 1)
                    prefetch_rows(A, m + kTileRows, std::min(kTileRows, M - m - kTileRows), k0, kb);
                if (A.col != 1) {  // A read by columns: copy the strip so the tiles read it along memory
                    if (a_strip.size() < size_t(kTileRows) * kb) a_strip.resize(size_t(kTileRows) * kb);
                    if (rows == kTileRows && A.row == 1)  // a step's 6 values lie together: one 24-byte copy
                        for (int k = 0; k < kb; ++k)
                            std::memcpy(&a_strip[size_t(k) * kTileRows], a + k * A.col, kTileRows * sizeof(float));
                    else
                        for (int k = 0; k < kb; ++k)
                            for (int r = 0; r < rows; ++r)
                                a_strip[size_t(k) * kTileRows + r] = a[r * A.row + k * A.col];
                    a = a_strip.data();
                    a_row = 1;
                    a_k = kTileRows;
                }
                for (int p = 0; p < n_panels; ++p) {
                    const int n0 = nb0 + p * kTileWidth, width = std::min(kTileWidth, N - n0);
                    const float* b = panels.data() + long(p) * kb * kTileWidth;
                    float* cm = c + long(m) * ldc + n0;
                    const float* start_row = s == TileStart::row ? bias_row.data() + n0 : nullptr;
                    if (width == kTileWidth)
                        tile_product_onto(s, rows, kb, a, a_row, a_k, b, kTileWidth, cm, ldc, start_row);
                    else  // the last, partial panel: through `tail`, started as a whole panel's tile is,
                          // so C's bits do not depend on the tile's width (tile_product_staged)
                        tile_product_staged(s, rows, kb, a, a_row, a_k, b, kTileWidth, cm, ldc, width, start_row,
                                            tail, kTileWidth);
                }
            }
        }
    }
}

void gemm_reference(int M, int N, int K, MatrixView A, MatrixView B, float* c, long ldc, TileStart start,
                    const float* bias) {
    for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) {
            double acc = start == TileStart::add ? c[long(m) * ldc + n] : start == TileStart::row ? bias[n] : 0.0;
            for (int k = 0; k < K; ++k)
                acc += double(A.data[long(m) * A.row + long(k) * A.col]) * B.data[long(k) * B.row + long(n) * B.col];
            c[long(m) * ldc + n] = float(acc);
        }
}

}  // namespace ss::cpu
