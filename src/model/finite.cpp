// finite.cpp — find the first nan or inf in a model's tensors (see finite.h).
#include "model/finite.h"

#include <cmath>
#include <sstream>

namespace ss {

std::string NonFinite::str() const {
    std::ostringstream os;
    os << tensor << "[" << element << "] = " << value;
    return os.str();
}

int64_t first_nonfinite(const float* v, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
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
