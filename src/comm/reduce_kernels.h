// reduce_kernels.h — the element-wise arithmetic of the reductions.
//
// Plain loops over contiguous arrays that the compiler vectorises (no call per
// element). Every backend that reduces by hand uses these, so threads and a
// future CPU-side MPI bf16 reduction round the same way.
//
// bf16 is reduced in fp32: each rank widens its bf16 values to fp32 (exact),
// partial sums stay fp32, and the owner of an element rounds it to bf16 once
// at the end (round to nearest even). So a bf16 all_reduce over n ranks
// rounds once, not n-1 times.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace ss::reduce {

/// dst[i] += src[i]
inline void add_into(float* __restrict dst, const float* __restrict src, size_t n) {
    for (size_t i = 0; i < n; ++i) dst[i] += src[i];
}

/// x[i] /= d  (the "avg" of ReduceOp::avg: the sum divided by n, once)
inline void divide(float* x, size_t n, float d) {
    for (size_t i = 0; i < n; ++i) x[i] /= d;
}

/// dst[i] = fp32(src[i]) (exact)
inline void widen_bf16(float* __restrict dst, const uint16_t* __restrict src, size_t n) {
    for (size_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(src[i]);
}

/// dst[i] = bf16(src[i] / d), rounded to nearest even (d = 1 for a sum)
inline void narrow_to_bf16(uint16_t* __restrict dst, const float* __restrict src, size_t n, float d) {
    if (d == 1.0f) {
        for (size_t i = 0; i < n; ++i) dst[i] = f32_to_bf16(src[i]);
    } else {
        for (size_t i = 0; i < n; ++i) dst[i] = f32_to_bf16(src[i] / d);
    }
}

}  // namespace ss::reduce
