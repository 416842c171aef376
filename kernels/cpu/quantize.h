// quantize.h — symmetric block quantization, the arithmetic of ZeRO++'s qwZ and
// qgZ (Wang et al. 2023, arXiv:2306.10209, sec. 3.1 and 3.3).
//
// n values are cut into blocks of B; each block keeps one fp32 scale and one
// signed integer of b bits per value:
//
//   s = max_i |x_i| / q_max          q_max = 2^(b-1) - 1   (127 for int8, 7 for int4)
//   q_i = round(x_i / s)             in [-q_max, q_max]    (a block of zeros: s = 0, q = 0)
//   x_i ~ q_i * s
//
//   packed:  [ s_0 s_1 ... s_{nb-1} : fp32 ] [ q_0 q_1 ... q_{n-1} : int8, or two int4 per byte, low nibble first ]
//
// A block with a nan or inf gets scale nan, so all its values come back nan.
//
// Error bound, per value of a block with scale s (docs/formulas.md, "qwZ and qgZ"):
//   |x_i - q_i s| <= s (1/2 + 2 q_max 2^-24)
// the 1/2 from rounding to an integer, the rest from fp32's x / s and q * s,
// each exact to 2^-24 relative of a value at most q_max (s's own rounding
// does not matter: both sides use the stored s).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ss::cpu {

/// Bytes that n values take packed in blocks of @p block at @p bits (8 or 4) each.
size_t quantized_bytes(size_t n, int bits, int block);
/// Packs @p n values of @p x into @p out (quantized_bytes(n, bits, block) bytes).
void quantize_blocks(const float* x, size_t n, int bits, int block, uint8_t* out);
/// Unpacks what quantize_blocks wrote: @p n values into @p out.
void dequantize_blocks(const uint8_t* in, size_t n, int bits, int block, float* out);
/// The same, added into @p acc (acc[i] += value i): the sum of several senders' pieces.
void dequantize_add_blocks(const uint8_t* in, size_t n, int bits, int block, float* acc);

}  // namespace ss::cpu
