// finite.h — where a nan or an inf sits in a model's tensors.
//
// One nan spreads: it reaches the loss in the next forward, every gradient in
// the backward and, through AdamW, every weight in the step. A run that saves
// after that replaces a good model with garbage. So the training loop checks
// the loss and the gradients of every step, every save checks what it writes,
// and --init checks what it reads (src/train/train.cpp, model/checkpoint.cpp,
// train/sharded_checkpoint.cpp). These functions only find the place, so that
// the error can name the tensor and the element.
#pragma once

#include <cstdint>
#include <string>

#include "model/params.h"
#include "model/safetensors.h"

namespace ss {

/// Where the first non-finite value is: the tensor's name, the element's index
/// in it (flat, row-major) and the value itself. An empty name means none.
struct NonFinite {
    std::string tensor;   ///< the tensor's name; empty when every value is finite
    int64_t element = 0;  ///< the index of the first non-finite element in it
    float value = 0;      ///< that element: nan, inf or -inf
    /// True when a non-finite value was found.
    explicit operator bool() const { return !tensor.empty(); }
    /// "h.0.attn.c_attn.weight[17] = nan"
    std::string str() const;
};

/// The first non-finite value of @p n floats at @p v, or -1 when all are finite.
int64_t first_nonfinite(const float* v, int64_t n);

/// The first non-finite value among the tensors of @p layout in the flat buffer @p flat.
NonFinite find_nonfinite(const ParamLayout& layout, const float* flat);

/// The first non-finite value among the floating-point tensors of @p f (in name order).
NonFinite find_nonfinite(const StFile& f);

}  // namespace ss
