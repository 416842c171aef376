#include "core/dtype.h"

#include "core/check.h"

namespace ss {

const char* dtype_name(DType dt) {
    switch (dt) {
        case DType::f32: return "fp32";
        case DType::bf16: return "bf16";
        case DType::i32: return "int32";
        case DType::u8: return "uint8";
    }
    return "?";
}

DType parse_dtype(const std::string& s) {
    if (s == "fp32" || s == "f32" || s == "float32") return DType::f32;
    if (s == "bf16" || s == "bfloat16") return DType::bf16;
    if (s == "fp16" || s == "f16" || s == "float16" || s == "half")
        SS_FAIL("unknown dtype '" << s << "'; use fp32 or bf16 (fp16 needs loss scaling, which ShardScope does not "
                                  << "implement; bf16 does not: tutorials/14-mixed-precision.md)");
    SS_FAIL("unknown dtype '" << s << "'; use fp32 or bf16");
}

}  // namespace ss

namespace ss {

void f32_to_bf16(uint16_t* dst, const float* src, size_t n) {
    for (size_t i = 0; i < n; ++i) dst[i] = f32_to_bf16(src[i]);
}

void bf16_to_f32(float* dst, const uint16_t* src, size_t n) {
    for (size_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(src[i]);
}

}  // namespace ss
