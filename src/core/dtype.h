// dtype.h — element types and bf16 conversion.
//
// bf16 ("brain float") keeps fp32's 8 exponent bits and the top 7 mantissa
// bits, so converting is a matter of keeping the high 16 bits of an fp32,
// rounded to nearest even. It is what the ZeRO paper's "2 bytes per
// parameter" for fp16/bf16 weights and gradients refers to.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace ss {

/// Element type of a tensor.
/// u8: raw bytes, what ZeRO++'s quantized collectives put on the wire (parallel/zeropp.h);
/// it is moved (gather, all-to-all), never reduced.
enum class DType { f32, bf16, i32, u8 };

/// Bytes per element of @p dt.
inline size_t dtype_size(DType dt) { return dt == DType::bf16 ? 2 : dt == DType::u8 ? 1 : 4; }

/// Name as used on the command line and in files: "fp32", "bf16", "int32", "uint8".
const char* dtype_name(DType dt);

/// Parses "fp32" / "bf16" (throws ss::Error naming the accepted values).
DType parse_dtype(const std::string& s);

/// fp32 -> bf16 with round-to-nearest-even (NaN stays NaN).
inline uint16_t f32_to_bf16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // quiet NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    return uint16_t(u >> 16);
}

/// bf16 -> fp32 (exact).
inline float bf16_to_f32(uint16_t h) {
    uint32_t u = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

}  // namespace ss

namespace ss {

/// dst[i] = bf16(src[i]) for n elements.
void f32_to_bf16(uint16_t* dst, const float* src, size_t n);
/// dst[i] = float(src[i]) for n elements.
void bf16_to_f32(float* dst, const uint16_t* src, size_t n);

}  // namespace ss
