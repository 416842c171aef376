// reduce_kernels.h — the element-wise arithmetic of the reductions.
//
// Plain loops over contiguous arrays, no call per element. Each loop runs in
// blocks of kBlock elements with a fixed-length inner loop: at -O2 GCC only
// vectorises loops whose trip count it knows ("very cheap" cost model), and a
// 16-float block is one AVX-512 or two AVX2 instructions. Every backend that reduces by hand uses these, so threads and a
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

/// Elements per vectorised block.
constexpr size_t kBlock = 16;

/// dst[i] += src[i]
inline void add_into(float* __restrict dst, const float* __restrict src, size_t n) {
    size_t i = 0;
    for (; i + kBlock <= n; i += kBlock)
        for (size_t k = 0; k < kBlock; ++k) dst[i + k] += src[i + k];
    for (; i < n; ++i) dst[i] += src[i];
}

/// fp32 value of an element: fp32 as it is, bf16 bits widened (exact).
inline float as_f32(float x) { return x; }
/// fp32 value of an element: fp32 as it is, bf16 bits widened (exact).
inline float as_f32(uint16_t h) { return bf16_to_f32(h); }

/// dst[i] = a[i] + b[i] in fp32, where a and b hold fp32 or bf16 bits.
template <class A, class B>
inline void sum(float* __restrict dst, const A* __restrict a, const B* __restrict b, size_t n) {
    size_t i = 0;
    for (; i + kBlock <= n; i += kBlock)
        for (size_t k = 0; k < kBlock; ++k) dst[i + k] = as_f32(a[i + k]) + as_f32(b[i + k]);
    for (; i < n; ++i) dst[i] = as_f32(a[i]) + as_f32(b[i]);
}

/// dst[i] = a[i] + b[i] on fp32; dst may be a itself (an in-place all_reduce).
inline void sum(float* dst, const float* a, const float* b, size_t n) {
    if (dst == a)
        add_into(dst, b, n);
    else
        sum<float, float>(dst, a, b, n);
}

/// x[i] /= d  (the "avg" of ReduceOp::avg: the sum divided by n, once)
inline void divide(float* x, size_t n, float d) {
    size_t i = 0;
    for (; i + kBlock <= n; i += kBlock)
        for (size_t k = 0; k < kBlock; ++k) x[i + k] /= d;
    for (; i < n; ++i) x[i] /= d;
}

/// dst[i] = fp32(src[i]) (exact)
inline void widen_bf16(float* __restrict dst, const uint16_t* __restrict src, size_t n) {
    size_t i = 0;
    for (; i + kBlock <= n; i += kBlock)
        for (size_t k = 0; k < kBlock; ++k) dst[i + k] = bf16_to_f32(src[i + k]);
    for (; i < n; ++i) dst[i] = bf16_to_f32(src[i]);
}

/// dst[i] = bf16(src[i] / d), rounded to nearest even (d = 1 for a sum)
inline void narrow_to_bf16(uint16_t* __restrict dst, const float* __restrict src, size_t n, float d) {
    size_t i = 0;
    for (; i + kBlock <= n; i += kBlock)
        for (size_t k = 0; k < kBlock; ++k) dst[i + k] = f32_to_bf16(src[i + k] / d);
    for (; i < n; ++i) dst[i] = f32_to_bf16(src[i] / d);
}

}  // namespace ss::reduce
