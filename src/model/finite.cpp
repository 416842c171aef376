// finite.cpp — find the first nan or inf in a model's tensors (see finite.h).
#include "model/finite.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <sstream>

namespace ss {

std::string NonFinite::str() const {
    std::ostringstream os;
    os << tensor << "[" << element << "] = " << value;
    return os.str();
}

// A float is nan or +-inf exactly when its 8 exponent bits are all ones, so a
// block of 16 is all finite when the largest of their exponent fields is not
// 0x7f800000: an integer max over the block, with no branch per element, which
// GCC turns into vector code (the loop of isfinite with an early return per
// element stayed scalar, about 0.5% of a training step of `small`: it runs over
// every gradient every step). Only a block that fails is searched element by
// element.
int64_t first_nonfinite(const float* v, int64_t n) {
    constexpr int kBlock = 16;
    constexpr uint32_t kExponent = 0x7f800000u;
    int64_t i = 0;
    for (; i + kBlock <= n; i += kBlock) {
        uint32_t top = 0;
        for (int j = 0; j < kBlock; ++j) {
            uint32_t bits;
            std::memcpy(&bits, v + i + j, sizeof bits);
            const uint32_t e = bits & kExponent;
            top = e > top ? e : top;
        }
        if (top == kExponent) break;
    }
    for (; i < n; ++i)  // the failing block (its first non-finite element) or the tail
        if (!std::isfinite(v[i])) return i;
    return -1;
}

NonFinite find_nonfinite(const ParamLayout& layout, const float* flat) {
    for (const ParamSpec& s : layout.specs) {
        const int64_t i = first_nonfinite(flat + s.offset, s.numel);
        if (i >= 0) return NonFinite{s.name, i, flat[s.offset + i]};
    }
    return {};
}

NonFinite find_nonfinite(const StFile& f) {
    for (const auto& [name, t] : f.tensors) {
        if (t.dtype != DType::f32 && t.dtype != DType::bf16) continue;  // integers are always finite
        const std::vector<float> v = st_to_f32(t);
        const int64_t i = first_nonfinite(v.data(), int64_t(v.size()));
        if (i >= 0) return NonFinite{name, i, v[size_t(i)]};
    }
    return {};
}

}  // namespace ss
