// tile.h — the register tile: one small matrix product held in vector
// registers, the piece the attention core is built from (attention.cpp).
//
//   C[rows, W] = sum_{k < K} A(r, k) B[k, 0:W]        rows <= kTileRows, W = kTileWidth
//
//   A(r, k) = a[r * a_row + k * a_k]   any two strides: rows of Q (a_row = 3C, a_k = 1),
//                                      or columns of P (a_row = 1, a_k = T), read in place
//   B       row-major, leading dimension ldb, kTileWidth columns readable (zero-padded)
//   C       row-major, leading dimension ldc, written (not added to)
//
// Why not sgemm: the attention core is 4 products per head in forward and
// backward, each tiny (K = hs = 32 or 64, a few dozen rows under the causal
// mask). OpenBLAS packs both operands and splits the work on every call;
// at these sizes that overhead, not the arithmetic, is most of the time
// (docs/performance.md, "The attention core"). This tile packs nothing: each
// step k broadcasts one value of A per row and multiplies one row of B, kept
// in kTileVecs vector registers, into rows x kTileVecs accumulators, the
// shape of BLIS's and OpenBLAS's own micro-kernels (Goto and van de Geijn
// 2008, "Anatomy of high-performance matrix multiplication", section 6).
//
//   k --->            B[k, 0:W]  = [ b b b b | b b b b ]   kTileVecs registers
//   A(0,k) broadcast  acc row 0 += a0 * B[k]               kTileRows x kTileVecs
//   A(1,k) broadcast  acc row 1 += a1 * B[k]               accumulators
//   ...
//
// kTileRows = 6 and kTileVecs = 2 give 12 accumulators, 2 registers of B and
// one broadcast: 15 of the 16 AVX2 ymm registers (AVX-512 has 32 zmm), and 12
// independent FMA chains, enough to keep two FMA units busy through a 4-cycle
// latency. Measured on one core of this project's AMD EPYC at K = 32 (best
// of R = 4, 6, 8): 6 x 2 was the fastest for both vector widths.
//
// The vectors are GCC's vector extension (also Clang's): plain arithmetic on
// a fixed-width type, no intrinsics, and the same source for AVX2 (8 floats)
// and AVX-512 (16). A loop over scalars in their place is not what GCC 12
// turns into this code: it keeps the accumulators in memory (measured 10
// GFLOP/s, against 115-220 here).
#pragma once

#include <vector>

#include "core/check.h"

namespace ss::cpu {

#if defined(SS_TILE_VEC_FLOATS)  // forced by the build (CMake's SHARDSCOPE_TILE_FLOATS) to test the other width
constexpr int kVecFloats = SS_TILE_VEC_FLOATS;  ///< floats in one vector: as the build was told
static_assert(kVecFloats == 8 || kVecFloats == 16, "SS_TILE_VEC_FLOATS: 8 (AVX2's width) or 16 (AVX-512's)");
#elif defined(__AVX512F__)
constexpr int kVecFloats = 16;  ///< floats in one vector register: 16 with AVX-512
#else
constexpr int kVecFloats = 8;   ///< floats in one vector register: 8 with AVX2 (two halves on SSE-only CPUs)
#endif
constexpr int kTileVecs = 2;                        ///< vector registers per row of the tile
constexpr int kTileRows = 6;                        ///< rows of the tile
constexpr int kTileWidth = kTileVecs * kVecFloats;  ///< columns of the tile: 16 (AVX2) or 32 (AVX-512)

/// n rounded up to a multiple of kTileWidth: the padded width of a B operand.
constexpr int tile_padded(int n) { return (n + kTileWidth - 1) / kTileWidth * kTileWidth; }

/// What a tile's accumulators start from before the K products are added.
enum class TileStart {
    zero,  ///< C = A B
    add,   ///< C = C + A B: C's kTileWidth columns are read first
    row,   ///< C = s + A B in every row, s a row of kTileWidth floats (a bias)
};

namespace detail {

/// Eight floats: the unit of transpose8 (AVX2 and AVX-512 both have 8-float registers).
typedef float Vec8 __attribute__((vector_size(8 * sizeof(float)), aligned(4)));

/// r[0..8) = the rows of an 8 x 8 block, returned as its columns: r[j][i] = old r[i][j].
/// Three rounds of two-vector shuffles (interleave pairs of rows, then pairs of pairs,
/// then the 128-bit halves): the classic AVX transpose, written without intrinsics
/// (__builtin_shufflevector: GCC 12 and Clang); GCC gives each shuffle one instruction
/// (vunpcklps/vunpckhps, vshufps, vperm2f128 or vinsertf128).
inline void transpose8(Vec8 r[8]) {
    Vec8 t[8], u[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i += 2) {  // t[i]: rows i, i + 1 interleaved, columns 0, 1 (and 4, 5); t[i + 1]: 2, 3 (6, 7)
        t[i] = __builtin_shufflevector(r[i], r[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
        t[i + 1] = __builtin_shufflevector(r[i], r[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
    }
#pragma GCC unroll 8
    for (int i = 0; i < 8; i += 4) {  // u[i + j]: column j (and j + 4) of rows i .. i + 3
        u[i] = __builtin_shufflevector(t[i], t[i + 2], 0, 1, 8, 9, 4, 5, 12, 13);
        u[i + 1] = __builtin_shufflevector(t[i], t[i + 2], 2, 3, 10, 11, 6, 7, 14, 15);
        u[i + 2] = __builtin_shufflevector(t[i + 1], t[i + 3], 0, 1, 8, 9, 4, 5, 12, 13);
        u[i + 3] = __builtin_shufflevector(t[i + 1], t[i + 3], 2, 3, 10, 11, 6, 7, 14, 15);
    }
#pragma GCC unroll 8
    for (int j = 0; j < 4; ++j) {  // the halves joined: column j of rows 0 .. 7, and column j + 4
        r[j] = __builtin_shufflevector(u[j], u[j + 4], 0, 1, 2, 3, 8, 9, 10, 11);
        r[j + 4] = __builtin_shufflevector(u[j], u[j + 4], 4, 5, 6, 7, 12, 13, 14, 15);
    }
}

/// One vector of floats; aligned(4) lets it load from any float address.
typedef float TileVec __attribute__((vector_size(kVecFloats * sizeof(float)), aligned(4)));

template <int R, TileStart S>
inline void tile_product_rows(int K, const float* a, long a_row, long a_k, const float* b, long ldb, float* c,
                              long ldc, const float* start_row) {
    TileVec acc[R][kTileVecs];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int v = 0; v < kTileVecs; ++v) {
            if constexpr (S == TileStart::zero) acc[r][v] = TileVec{};
            if constexpr (S == TileStart::add) acc[r][v] = *reinterpret_cast<const TileVec*>(c + r * ldc + v * kVecFloats);
            if constexpr (S == TileStart::row) acc[r][v] = *reinterpret_cast<const TileVec*>(start_row + v * kVecFloats);
        }
    for (int k = 0; k < K; ++k) {
        TileVec bk[kTileVecs];
#pragma GCC unroll 4
        for (int v = 0; v < kTileVecs; ++v) bk[v] = *reinterpret_cast<const TileVec*>(b + k * ldb + v * kVecFloats);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const float ar = a[r * a_row + k * a_k];  // broadcast
#pragma GCC unroll 4
            for (int v = 0; v < kTileVecs; ++v) acc[r][v] += ar * bk[v];
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int v = 0; v < kTileVecs; ++v) *reinterpret_cast<TileVec*>(c + r * ldc + v * kVecFloats) = acc[r][v];
}

template <TileStart S>
inline void tile_product_start(int rows, int K, const float* a, long a_row, long a_k, const float* b, long ldb,
                               float* c, long ldc, const float* start_row) {
    switch (rows) {  // one instantiation per row count, so the last, partial tile needs no padding of A or C
        case 1: return tile_product_rows<1, S>(K, a, a_row, a_k, b, ldb, c, ldc, start_row);
        case 2: return tile_product_rows<2, S>(K, a, a_row, a_k, b, ldb, c, ldc, start_row);
        case 3: return tile_product_rows<3, S>(K, a, a_row, a_k, b, ldb, c, ldc, start_row);
        case 4: return tile_product_rows<4, S>(K, a, a_row, a_k, b, ldb, c, ldc, start_row);
        case 5: return tile_product_rows<5, S>(K, a, a_row, a_k, b, ldb, c, ldc, start_row);
        case 6: return tile_product_rows<6, S>(K, a, a_row, a_k, b, ldb, c, ldc, start_row);
        default: SS_FAIL("tile_product: " << rows << " rows; a tile has 1 to " << kTileRows);
    }
}

}  // namespace detail

static_assert(kTileRows == 6, "tile_product_start's switch has one case per row count");

/// C[rows, kTileWidth] = sum_{k<K} A(r,k) B[k, 0:kTileWidth] with A(r,k) = a[r*a_row + k*a_k]
/// (see the top of this file). 1 <= rows <= kTileRows; K >= 0 (K = 0 writes zeros).
inline void tile_product(int rows, int K, const float* a, long a_row, long a_k, const float* b, long ldb, float* c,
                         long ldc) {
    detail::tile_product_start<TileStart::zero>(rows, K, a, a_row, a_k, b, ldb, c, ldc, nullptr);
}

/// As tile_product, with the accumulators starting from @p start: C itself
/// (TileStart::add, C += A B) or @p start_row in every row (TileStart::row,
/// C = s + A B; start_row has kTileWidth readable floats).
inline void tile_product_onto(TileStart start, int rows, int K, const float* a, long a_row, long a_k, const float* b,
                              long ldb, float* c, long ldc, const float* start_row) {
    switch (start) {
        case TileStart::zero:
            return detail::tile_product_start<TileStart::zero>(rows, K, a, a_row, a_k, b, ldb, c, ldc, start_row);
        case TileStart::add:
            return detail::tile_product_start<TileStart::add>(rows, K, a, a_row, a_k, b, ldb, c, ldc, start_row);
        case TileStart::row:
            return detail::tile_product_start<TileStart::row>(rows, K, a, a_row, a_k, b, ldb, c, ldc, start_row);
    }
}

/// Prefetching a head's rows. A step's saved activations outgrow the caches,
/// so the attention kernels find qkv, dout and P in memory, and the loads that
/// first touch them stall: in one rank's backward the first read of a P row
/// and the copies of a head's rows into panels were three fifths of
/// attention_backward's own time (perf, Zen 5, 2026-12-05). So while one row
/// tile of a head computes, the kernels ask for the lines the next will read
/// (attention.cpp, attention_block.cpp). A prefetch is a hint: no value changes.
constexpr int kCacheLineFloats = 16;  ///< floats in a 64-byte cache line

/// Asks for the lines holding p[0, n): for reading, or with @p write for writing.
/// It asks at every 16th float from p, which reaches each line where p starts
/// one (the kernels' rows do when the head size and T are multiples of 16:
/// tensors are 64-byte aligned, core/tensor.h); where p does not, the last line
/// may go unasked. Also asking for the last float (one more request a span)
/// made attention backward 1.3x slower (docs/performance.md): a request costs
/// even when its line is already on its way.
inline void prefetch_span(const float* p, int n, bool write) {
    for (int i = 0; i < n; i += kCacheLineFloats) {
        if (write)
            __builtin_prefetch(p + i, 1);
        else
            __builtin_prefetch(p + i);
    }
}

/// Asks (for reading) for @p n floats of each of a head's rows [t0, t1): rows + t * stride onwards.
inline void prefetch_head_rows(const float* rows, long stride, int t0, int t1, int n) {
    for (int t = t0; t < t1; ++t) prefetch_span(rows + t * stride, n, false);
}

/// The head after (b, h) in the attention kernels' loops (h fastest, then b),
/// whose rows the kernels ask for while (b, h) computes; none after the last.
struct NextHead {
    int b;        ///< the next head's sequence
    int h;        ///< the next head's index within its sequence
    bool exists;  ///< false after the last head (b = B-1, h = NH-1)
    /// The head after (@p b0, @p h0) of @p B sequences of @p NH heads.
    NextHead(int b0, int h0, int B, int NH)
        : b(h0 + 1 < NH ? b0 : b0 + 1), h(h0 + 1 < NH ? h0 + 1 : 0), exists(b < B) {}
    /// Where its rows start in an array of sequences of @p T rows, @p stride floats apart,
    /// whose head h starts at float h * @p hs of a row (qkv, dout, a block's k|v).
    long offset(long T, long stride, int hs) const { return long(b) * T * stride + long(h) * hs; }
};

/// One head's operands copied out of their rows (of qkv, dout, a block of k|v)
/// into the layouts the tiles read as B; the padding is written 0 once and stays 0.
///
///   rows(dst, src, stride):             dst[t, 0:width] = src[t*stride + 0:width]   [n, tile_padded(width)]
///   transposed_rows(dst, src, stride):  dst[i, t]       = src[t*stride + i]         [width, tile_padded(n)]
///   transposed(dst, panel):             the same from a rows() panel
///
/// The transpose runs 8 x 8 floats at a time in registers, so each row's
/// lines are read once, along memory (a scalar gather straight from qkv was
/// a quarter of attention backward's time outside the tiles; copied as rows
/// first and then transposed one float at a time, the transpose was most of
/// a head's forward outside the tiles: attention forward of one `small`
/// layer hot in cache, 0.88 -> 0.83 ms on the Zen 3 host).
struct TilePanels {
    int n;      ///< rows of the operand (tokens)
    int width;  ///< columns of the operand (the head size)
    int n_pad;  ///< tile_padded(n): the row length of a transposed panel
    int ld;     ///< tile_padded(width): the row length of a rows panel
    /// Panels for an operand of @p n_ rows and @p width_ columns.
    TilePanels(int n_, int width_) : n(n_), width(width_), n_pad(tile_padded(n_)), ld(tile_padded(width_)) {}
    /// A zeroed buffer for rows().
    std::vector<float> rows_buffer() const { return std::vector<float>(size_t(n) * ld); }
    /// A zeroed buffer for transposed().
    std::vector<float> transposed_buffer() const { return std::vector<float>(size_t(width) * n_pad); }
    /// dst[t, 0:width] = src[t*stride + 0:width] for t < n.
    void rows(std::vector<float>& dst, const float* src, long stride) const { rows(dst, src, stride, 0, n); }
    /// The same for rows first <= t < last only; the others keep what they held (a block's
    /// queries that see none of its keys are never read).
    void rows(std::vector<float>& dst, const float* src, long stride, int first, int last) const {
        for (int t = first; t < last; ++t)
            for (int i = 0; i < width; ++i) dst[long(t) * ld + i] = src[t * stride + i];
    }
    /// dst[i, t] = panel[t, i]: the transpose of a rows() panel, its first @p count rows.
    void transposed(std::vector<float>& dst, const std::vector<float>& panel, int count) const {
        transposed_rows(dst, panel.data(), ld, count);
    }
    /// dst[i, t] = src[t*stride + i] for t < n, i < width: the operand's rows, transposed
    /// (straight from a saved activation, or from a rows() panel). In 8 x 8 blocks through
    /// registers (detail::transpose8), 8 rows' runs of 8 floats loaded and stored as 8 runs
    /// of dst; the rows and columns past a multiple of 8 one float at a time. A scalar
    /// gather was most of the time outside the tiles in a head's forward (perf), and read
    /// from qkv, each row's two lines came from memory once per column.
    void transposed_rows(std::vector<float>& dst, const float* src, long stride) const {
        transposed_rows(dst, src, stride, n);
    }
    /// The same for the first @p count rows only (t < count <= n): dst's columns t >= count
    /// keep what they held (a block's keys that no query sees are never read).
    void transposed_rows(std::vector<float>& dst, const float* src, long stride, int count) const {
        using detail::Vec8;
        const int n8 = count / 8 * 8, w8 = width / 8 * 8;
        for (int t0 = 0; t0 < n8; t0 += 8)
            for (int i0 = 0; i0 < w8; i0 += 8) {
                Vec8 r[8];
#pragma GCC unroll 8
                for (int j = 0; j < 8; ++j) r[j] = *reinterpret_cast<const Vec8*>(src + (t0 + j) * stride + i0);
                detail::transpose8(r);
#pragma GCC unroll 8
                for (int j = 0; j < 8; ++j) *reinterpret_cast<Vec8*>(&dst[long(i0 + j) * n_pad + t0]) = r[j];
            }
        for (int i = 0; i < width; ++i)  // the edges: columns past w8 (every row), rows past n8
            for (int t = i < w8 ? n8 : 0; t < count; ++t) dst[long(i) * n_pad + t] = src[t * stride + i];
    }
};

/// out[r, 0:n) = G[r, 0:n) for r < rows: a tile's result into its destination rows.
inline void tile_store_rows(float* out, long ld_out, const float* G, long ldg, int rows, int n) {
    for (int r = 0; r < rows; ++r)
        for (int i = 0; i < n; ++i) out[r * ld_out + i] = G[r * ldg + i];
}

/// out[r, 0:n) = start + sum_k A(r,k) B[k, 0:n) for r < rows, through @p G (rows x @p ldg floats,
/// ldg >= tile_padded(n)): for an n that is not a whole number of tiles. The tiles start in G
/// from what they would start from in out (out's rows, @p start_row, or 0; zero past column n),
/// so that each element is the same chain of FMAs as a tile straight into out, and so the same
/// bits at either tile width (a head size of 16 is whole tiles of 16 columns, not of 32).
inline void tile_product_staged(TileStart start, int rows, int K, const float* a, long a_row, long a_k,
                                const float* b, long ldb, float* out, long ld_out, int n, const float* start_row,
                                float* G, long ldg) {
    if (start != TileStart::zero)
        for (int r = 0; r < rows; ++r)
            for (int i = 0; i < tile_padded(n); ++i)
                G[r * ldg + i] = i >= n                    ? 0.0f
                                 : start == TileStart::add ? out[r * ld_out + i]
                                                           : start_row[i];
    const TileStart in_G = start == TileStart::zero ? TileStart::zero : TileStart::add;
    for (int j = 0; j < n; j += kTileWidth)
        tile_product_onto(in_G, rows, K, a, a_row, a_k, b + j, ldb, G + j, ldg, nullptr);
    tile_store_rows(out, ld_out, G, ldg, rows, n);
}

/// out[r, 0:n) = sum_k A(r,k) B[k, 0:n), or += when @p add, for r < rows: the tiles of one
/// row block across n columns (B has tile_padded(n) readable columns). Straight into out when
/// n is a whole number of tiles (to add, the tile starts from out); otherwise through @p G
/// (rows x @p ldg floats, ldg >= tile_padded(n)) by tile_product_staged.
inline void tile_product_into(int rows, int K, const float* a, long a_row, long a_k, const float* b, long ldb,
                              float* out, long ld_out, int n, bool add, float* G, long ldg) {
    const TileStart start = add ? TileStart::add : TileStart::zero;
    if (n % kTileWidth != 0)
        return tile_product_staged(start, rows, K, a, a_row, a_k, b, ldb, out, ld_out, n, nullptr, G, ldg);
    for (int j = 0; j < n; j += kTileWidth)
        tile_product_onto(start, rows, K, a, a_row, a_k, b + j, ldb, out + j, ld_out, nullptr);
}

}  // namespace ss::cpu
