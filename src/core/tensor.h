// tensor.h — a block of memory with a shape, booked in a rank's Ledger.
//
// Deliberately small: kernels take raw pointers and sizes (as llm.c does), so
// the math never depends on this class. A Tensor only owns memory, knows its
// shape and dtype, and tells the Ledger when it is born and when it dies.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/dtype.h"
#include "core/ledger.h"

namespace ss {

/// Shape of a tensor, outermost dimension first.
using Shape = std::vector<int64_t>;

/// Number of elements of @p s (1 for an empty shape).
int64_t numel(const Shape& s);

/// "[2, 3, 4]".
std::string shape_str(const Shape& s);

/// An owned, 64-byte aligned buffer of numel(shape) elements, zero-filled,
/// booked in a Ledger under one category, on the device of the thread that
/// makes it (core/device.h). Move-only.
class Tensor {
public:
    Tensor() = default;
    /// Allocates and books numel(@p shape) elements of @p dt in @p ledger under @p cat,
    /// zero-filled unless @p zero is false (for buffers that are written before they are read).
    Tensor(Ledger& ledger, Mem cat, Shape shape, DType dt = DType::f32, bool zero = true);
    ~Tensor();
    /// Takes @p o's memory and booking; @p o is left empty.
    Tensor(Tensor&& o) noexcept;
    /// Frees this tensor's memory, then takes @p o's; @p o is left empty.
    Tensor& operator=(Tensor&& o) noexcept;
    Tensor(const Tensor&) = delete;
    Tensor& operator=(const Tensor&) = delete;

    /// Frees the memory (the Ledger sees it go) and leaves an empty tensor.
    void reset();

    /// True when no memory is held (default-constructed, moved from or reset).
    bool empty() const { return data_ == nullptr; }
    /// Dimensions, outermost first.
    const Shape& shape() const { return shape_; }
    /// Element type.
    DType dtype() const { return dtype_; }
    /// Where the memory lives: the device of the thread that made the tensor
    /// (core/device.h; GPU memory is managed, so host code may read it too).
    Device device() const { return device_; }
    /// The Ledger category the bytes are booked under.
    Mem category() const { return cat_; }
    /// Number of elements.
    int64_t numel() const { return numel_; }
    /// Size in bytes: numel() * dtype_size(dtype()).
    size_t bytes() const { return numel_ * dtype_size(dtype_); }

    /// The raw buffer, whatever the dtype (nullptr when empty).
    void* data() { return data_; }
    /// The raw buffer, read-only.
    const void* data() const { return data_; }
    /// The elements as fp32 (checks the dtype).
    float* f32();
    /// The elements as fp32, read-only (checks the dtype).
    const float* f32() const;
    /// The elements as raw bf16 bits (checks the dtype).
    uint16_t* bf16();
    /// The elements as raw bf16 bits, read-only (checks the dtype).
    const uint16_t* bf16() const;
    /// The elements as int32 (checks the dtype).
    int32_t* i32();
    /// The elements as int32, read-only (checks the dtype).
    const int32_t* i32() const;

    /// Sets every byte to zero.
    void zero();

private:
    void* data_ = nullptr;
    Shape shape_;
    int64_t numel_ = 0;
    DType dtype_ = DType::f32;
    Mem cat_ = Mem::workspace;
    Ledger* ledger_ = nullptr;
    Device device_ = Device::cpu;
};

}  // namespace ss
