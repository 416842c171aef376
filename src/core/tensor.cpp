#include "core/tensor.h"

#include <cstdlib>
#include <cstring>
#include <sstream>
#include <utility>

#include "core/check.h"

namespace ss {

int64_t numel(const Shape& s) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    return n;
}

std::string shape_str(const Shape& s) {
    std::ostringstream os;
    os << "[";
    for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
    os << "]";
    return os.str();
}

Tensor::Tensor(Ledger& ledger, Mem cat, Shape shape, DType dt, bool zero)
    : shape_(std::move(shape)), numel_(ss::numel(shape_)), dtype_(dt), cat_(cat), ledger_(&ledger) {
    for (int64_t d : shape_) SS_CHECK(d >= 0, "tensor: negative dimension in shape " << shape_str(shape_));
    const size_t n = bytes();
    device_ = current_device();
    try {
        data_ = device_alloc(device_, n);
    } catch (const Error& e) {
        SS_FAIL(e.what() << " (allocating " << n << " bytes for " << mem_name(cat) << ")");
    }
    if (zero) device_zero(device_, data_, n);
    ledger_->alloc(cat_, n);
}

Tensor::~Tensor() { reset(); }

Tensor::Tensor(Tensor&& o) noexcept { *this = std::move(o); }

Tensor& Tensor::operator=(Tensor&& o) noexcept {
    if (this != &o) {
        reset();
        data_ = std::exchange(o.data_, nullptr);
        device_ = o.device_;
        shape_ = std::move(o.shape_);
        numel_ = std::exchange(o.numel_, 0);
        dtype_ = o.dtype_;
        cat_ = o.cat_;
        ledger_ = std::exchange(o.ledger_, nullptr);
    }
    return *this;
}

void Tensor::reset() {
    if (data_) {
        device_free(device_, data_, bytes());
        if (ledger_) ledger_->release(cat_, bytes());
    }
    data_ = nullptr;
    numel_ = 0;
    shape_.clear();
    ledger_ = nullptr;
}

float* Tensor::f32() {
    SS_CHECK(dtype_ == DType::f32, "tensor is " << dtype_name(dtype_) << ", not fp32");
    return static_cast<float*>(data_);
}
const float* Tensor::f32() const { return const_cast<Tensor*>(this)->f32(); }
uint16_t* Tensor::bf16() {
    SS_CHECK(dtype_ == DType::bf16, "tensor is " << dtype_name(dtype_) << ", not bf16");
    return static_cast<uint16_t*>(data_);
}
const uint16_t* Tensor::bf16() const { return const_cast<Tensor*>(this)->bf16(); }
int32_t* Tensor::i32() {
    SS_CHECK(dtype_ == DType::i32, "tensor is " << dtype_name(dtype_) << ", not int32");
    return static_cast<int32_t*>(data_);
}
const int32_t* Tensor::i32() const { return const_cast<Tensor*>(this)->i32(); }

void Tensor::zero() {
    if (data_) device_zero(device_, data_, bytes());
}

}  // namespace ss
