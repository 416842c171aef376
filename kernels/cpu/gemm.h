// gemm.h — C = A B on the register tiles of tile.h: the linear layers' matrix products.
//
//   C[M, N]  = start + sum_{k < K} A(m, k) B(k, n)
//
// A and B are read through two strides each (MatrixView), so a transposed
// operand is a view, not a copy: matmul.cpp's three products are
//
//   forward   out  = x W + b     A = x [N,C] rows         B = W [C,OC] rows        start = the bias row
//   dinp     += dout W^T         A = dout [N,OC] rows     B = W read by columns    start = add
//   dW       += x^T dout         A = x read by columns    B = dout [N,OC] rows     start = add
//
// How (Goto and van de Geijn 2008, section 6, with tile.h's 6 x kTileWidth tile
// as the micro-kernel): K is cut into blocks of kGemmKBlock and N into blocks
// of kGemmNBlock; for each pair,
// B's rows are copied once into panels kTileWidth columns wide, each panel
// contiguous (K-block x kTileWidth floats, zero past column N), so the tile's
// loads run along memory whatever B's strides, and a power-of-two leading
// dimension does not pile B's rows into a few L1 sets (a B read by columns,
// dinp's W^T, is transposed into them 8 x 8 floats at a time in registers).
// A is read in place (a tile broadcasts one value of it per row and step) when
// its rows run along memory; a transposed A (dW's x^T, the head's dlogits^T) is copied, 6 rows by
// one K-block, into a strip [k][6] first: read in place, a step's 6 values
// lie together but successive steps are C floats apart, and at C = 128 or 512
// the K-block's 256 lines fall into 2 to 8 of L1's 64 sets, so every panel
// read them again from L2 (measured on a Zen 3: c_fc's dW 63 -> 76 GFLOP/s, the
// train step 144 -> 136 ms; docs/performance.md). The copy is not free: on a Zen 4
// with AVX-512 it is 3-15% of dW's time, most where few panels share it (N = 128:
// 4 panels), and there reading in place was 2-7% faster at N = 128 and 0-2% slower
// at N = 384 and 512 (docs/performance.md, "One AVX-512 machine, both code paths").
// For each block of 6 rows of
// C, every panel in turn: the 6 rows of A stay in L1 while the panels stream
// from L2.
//
// Why not sgemm: OpenBLAS runs the kernel of the core it detects or is told
// (OPENBLAS_CORETYPE), and on a CPU with AVX-512 set to Haswell it multiplies
// 8 floats at a time where the tile multiplies 16; and it packs both operands,
// where here A is not copied. Measured at the model's shapes in
// docs/performance.md ("The linear layers on register tiles").
#pragma once

#include "kernels/cpu/tile.h"

namespace ss::cpu {

/// A matrix read in place: element (i, j) is data[i * row + j * col].
struct MatrixView {
    const float* data = nullptr;  ///< element (0, 0)
    long row = 0;                 ///< distance between rows (i)
    long col = 1;                 ///< distance between columns (j)
};

/// Rows of B copied into panels per block of K (see the top of this file).
constexpr int kGemmKBlock = 256;
/// Columns of B copied into panels at a time: bounds the panel buffer at
/// kGemmKBlock x kGemmNBlock floats (2 MiB) for any N, the head's 50,304 included.
constexpr int kGemmNBlock = 2048;
static_assert(kGemmNBlock % kTileWidth == 0, "N-blocks are whole panels");

/// C[M,N] = start + A[M,K] B[K,N], C row-major with leading dimension @p ldc.
/// start: TileStart::zero (C = A B), TileStart::add (C += A B) or
/// TileStart::row (C = bias + A B, @p bias holds N floats). M, N, K >= 0;
/// K = 0 leaves C = start. Uses a per-thread buffer of up to kGemmKBlock x
/// kGemmNBlock floats for B's panels and one of 6 x kGemmKBlock for a
/// transposed A's strip (kept between calls).
/// When @p b_column_sums is not null, also b_column_sums[n] += sum_k B(k, n),
/// k ascending, added while B is packed (the bias gradient of dW's product,
/// whose B is dout, without its own pass over dout; the same adds in the same
/// order as a loop over the rows of B).
void gemm(int M, int N, int K, MatrixView A, MatrixView B, float* c, long ldc, TileStart start,
          const float* bias = nullptr, float* b_column_sums = nullptr);

/// Plain loops, accumulated in double: the reference gemm is tested against.
void gemm_reference(int M, int N, int K, MatrixView A, MatrixView B, float* c, long ldc, TileStart start,
                    const float* bias = nullptr);

}  // namespace ss::cpu
