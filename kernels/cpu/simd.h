// simd.h — plain C++ that the compiler turns into SIMD code, for the CPU kernels.
//
// The kernels keep their loops readable and let the compiler vectorize them
// (no intrinsics). These things stand in the way, and this file is how we
// get past each:
//
//  1. A float sum `s += x[i]` is a chain: every add waits for the one before,
//     and the compiler may not reorder float adds (that changes the rounding).
//     We reorder on purpose: lane j of kLanes partial sums takes i = j, j+16,
//     j+32, ..., and the lanes are added at the end. The inner loop of 16
//     independent adds is one AVX-512 (or two AVX2) vector add. PyTorch's CPU
//     reductions (at::vec) reorder the same way, so both differ from a
//     sequential sum by rounding only.
//
//  2. std::exp is a library call that the vectorizer cannot look into.
//     exp_fast below is Cephes' expf (S. Moshier, cephes/single/expf.c):
//
//        x = n ln2 + r,   n = round(x / ln2),  |r| <= ln2/2
//        e^x = 2^n * (1 + r + r^2 p(r)),       p a degree-5 minimax polynomial
//
//     written with no branches and no float->int conversion so that it
//     vectorizes. ln2 is split in two (0.693359375 is exact in 9 bits) so
//     n*ln2 is subtracted without rounding error. Measured relative error
//     on [-87, 87]: at most 8.5e-8, i.e. 0.7 ulp (ulp = 2^-23 relative);
//     tests/test_kernels.cpp holds it to 2 ulp against std::exp.
//
//  3. GCC 12 at -O2 uses its "very-cheap" vectorizer cost model: it vectorizes
//     a loop only when the trip count is a known multiple of the vector width,
//     so `for (i < n)` stays scalar. Each kernel .cpp therefore starts with
//         #pragma GCC optimize("vect-cost-model=dynamic")
//     (what -O3 uses), placed before any #include so that every function in
//     the file, inlined ones included, is compiled the same way. Clang ignores
//     it and vectorizes at -O2 anyway.
//
//  4. exp_fast's clamps are selects with a constant side. GCC's jump
//     threading turns such a select into a branch and specializes the code
//     after it for the constant: in GELU, x / (1 + e^87). Then
//       - -ftrapping-math (GCC's default) forbids running that division on
//         lanes that did not take the branch: AVX-512 masks them off, AVX2 has
//         no mask registers, so there the whole loop stayed scalar;
//       - with -fno-trapping-math both sides run on every lane, and the
//         constant side's x / 6.1e37 is a denormal for |x| < 0.7: each such
//         division takes a microcode assist, ~10x slower than a normal one.
//     Without jump threading (-fno-thread-jumps) the clamp stays a select
//     (a max and a min instruction) and neither happens.
//     Measured on one core of this project's Xeon, GELU over 1024 x 512 floats
//     (docs/performance.md, "Elementwise kernels"): with -fno-trapping-math
//     alone the forward took 7x longer than as GCC compiled it; with both
//     flags, compiled for x86-64-v3 (AVX2), forward and backward run 5.7-6.3x
//     faster than the scalar loops they were, and for -march=native (AVX-512)
//     1.1-1.6x faster than before. The kernels are compiled with both flags
//     (CMakeLists.txt); tests/vectorized.sh checks the object code of the
//     -march=native and x86-64-v3 builds, and `shardscope bench kernels` puts
//     each kernel's GB/s beside memcpy's.
//
//  5. A loop whose iterations are independent can still be bound by latency:
//     the out-of-order core holds only so many iterations in flight, and an
//     iteration cannot finish before its longest chain of dependent operations
//     does. exp_fast's polynomial is therefore evaluated by Estrin's scheme
//     (Knuth, TAOCP vol. 2, 4.6.4), not Horner's: the same coefficients, a
//     chain of 3 FMAs instead of 5. Measured on one core of the Zen 3 host,
//     GELU forward over 65,536 floats in L2: 0.67 -> 0.57 ns a float, with
//     gelu.cpp's argument in three operations instead of five. For the same
//     reason a kernel ends its lane sums with lane_fold_sum (a chain of 4
//     adds), not a loop over the 16 (a chain of 16): LayerNorm forward over
//     1024 rows of 128, 62 -> 48 us (docs/performance.md, "Packing, shorter chains,
//     the softmax's max").
//
//  6. Shorter chains were not enough for loops whose element is a chain of
//     ~20 dependent operations (exp_fast, then GELU's division): vectorized
//     one vector an iteration, the core's scheduler held too few iterations
//     to keep its pipes busy. for_each_chained below writes 4 AVX2 vectors'
//     worth of elements (2 AVX-512) an iteration, unrolled, so that four
//     chains sit side by side in the code. Measured on one core of the Zen 3
//     host, GELU forward over 1024 x 512 floats: 326 -> 274 us (8 vectors an
//     iteration: 328 us again).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace ss::cpu {

/// Number of partial sums in the lane reductions: 16 floats = one 512-bit register.
constexpr int kLanes = 16;

/// acc[0] + ... + acc[kLanes-1] by folding halves: lanes j and j + 8 are added,
/// then j and j + 4, j + 2, j + 1 (each fold one vector add). A sequential sum
/// of the 16 was a chain of 16 dependent scalar adds, which in the attention's
/// per-row softmax cost more than the row's exps. Overwrites acc.
inline float lane_fold_sum(float (&acc)[kLanes]) {
    static_assert(kLanes == 16, "four folds");
    for (int j = 0; j < 8; j++) acc[j] += acc[j + 8];
    for (int j = 0; j < 4; j++) acc[j] += acc[j + 4];
    for (int j = 0; j < 2; j++) acc[j] += acc[j + 2];
    return acc[0] + acc[1];
}

/// sum_i x[i], accumulated in float over kLanes partial sums (see 1. above).
inline float lane_sum(const float* x, long n) {
    float acc[kLanes] = {};
    long i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (int j = 0; j < kLanes; j++) acc[j] += x[i + j];
    float s = lane_fold_sum(acc);
    for (; i < n; i++) s += x[i];
    return s;
}

/// sum_i x[i] * y[i], accumulated in float over kLanes partial sums.
inline float lane_dot(const float* x, const float* y, long n) {
    float acc[kLanes] = {};
    long i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (int j = 0; j < kLanes; j++) acc[j] += x[i + j] * y[i + j];
    // The tail (n - i < kLanes terms) goes into the lanes, one explicit FMA each, before the
    // fold. Written after the fold as s += x y, GCC vectorized the tail's products where it
    // could, 16 at a time with AVX-512 and 8 with AVX2 (each product rounded, then added in
    // order), and fused the rest into FMAs, so the two paths rounded different terms and
    // their sums differed in the last bit (objdump: vmulps + vaddss beside vfmadd231ss).
    // One FMA per lane is the same rounding however it is vectorized, and not a chain.
    for (long j = 0; j < n - i; j++) acc[j] = std::fma(x[i + j], y[i + j], acc[j]);
    return lane_fold_sum(acc);
}

/// max_i x[i] (n >= 1), over kLanes partial maxima. Written as a select, not
/// std::max, so a NaN in x propagates instead of being skipped.
inline float lane_max(const float* x, long n) {
    float acc[kLanes];
    for (int j = 0; j < kLanes; j++) acc[j] = x[0];
    long i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (int j = 0; j < kLanes; j++) acc[j] = (x[i + j] > acc[j] || x[i + j] != x[i + j]) ? x[i + j] : acc[j];
    // Fold the halves, as lane_fold_sum: the larger of lanes j and j + w, NaN kept.
    for (int j = 0; j < 8; j++) acc[j] = (acc[j + 8] > acc[j] || acc[j + 8] != acc[j + 8]) ? acc[j + 8] : acc[j];
    for (int j = 0; j < 4; j++) acc[j] = (acc[j + 4] > acc[j] || acc[j + 4] != acc[j + 4]) ? acc[j + 4] : acc[j];
    for (int j = 0; j < 2; j++) acc[j] = (acc[j + 2] > acc[j] || acc[j + 2] != acc[j + 2]) ? acc[j + 2] : acc[j];
    acc[0] = (acc[1] > acc[0] || acc[1] != acc[1]) ? acc[1] : acc[0];
    float m = acc[0];
    for (; i < n; i++) m = (x[i] > m || x[i] != x[i]) ? x[i] : m;
    return m;
}

/// max_i x[i] over kLanes partial maxima, for a softmax's shift: as lane_max, but
/// a NaN in x may be skipped (the select is `x > m ? x : m`, one vmaxps, where
/// lane_max's NaN test is a compare, an or and a blend). The softmax loses no NaN
/// by it: each x[i] goes through e^(x[i] - max) into the row's sum, so a NaN
/// there still makes the whole row NaN. Each row's max begins a chain the rest
/// of the row waits on (5. above): in attention forward at `small` the NaN
/// test was a tenth of the kernel's time. Returns -inf for n = 0.
inline float lane_max_fast(const float* x, long n) {
    float acc[kLanes];
    for (int j = 0; j < kLanes; j++) acc[j] = -INFINITY;
    long i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (int j = 0; j < kLanes; j++) acc[j] = x[i + j] > acc[j] ? x[i + j] : acc[j];
    // The folds as lane_fold_sum's, each a loop of constant length: written as one loop over
    // w = 8, 4, 2, 1, GCC made the last three a scalar loop through the stack, 7% of attention
    // forward at `small` (perf). The same selects in the same order, so the same bits; attention
    // forward old/new 1.04-1.08, 80 pairs, which goes first alternating, hot and cold (2026-12-04).
    for (int j = 0; j < 8; j++) acc[j] = acc[j + 8] > acc[j] ? acc[j + 8] : acc[j];
    for (int j = 0; j < 4; j++) acc[j] = acc[j + 4] > acc[j] ? acc[j + 4] : acc[j];
    for (int j = 0; j < 2; j++) acc[j] = acc[j + 2] > acc[j] ? acc[j + 2] : acc[j];
    float m = acc[1] > acc[0] ? acc[1] : acc[0];
    for (; i < n; i++) m = x[i] > m ? x[i] : m;
    return m;
}

/// Floats an iteration of for_each_chained: 4 AVX2 vectors, 2 AVX-512 ones.
constexpr long kChainFloats = 32;

/// f(i) for i < n, kChainFloats elements an iteration with the loop body unrolled, then
/// the rest one by one (see 6. above). For long loops whose element is a long chain of
/// dependent operations (exp_fast, a division); the same operations on the same
/// elements as the plain loop, so the same bits. Not for short ones: GCC leaves the rest
/// scalar, and on the attention softmax's rows (a few dozen floats) the loop was 2x slower.
template <typename F>
inline void for_each_chained(long n, F f) {
    long i = 0;
    for (; i + kChainFloats <= n; i += kChainFloats)
#pragma GCC unroll 32
        for (long j = 0; j < kChainFloats; j++) f(i + j);
    for (; i < n; i++) f(i);
}

/// e^x for float x, vectorizable (see 2. above). Inputs are clamped to
/// [-87, 87]: e^-100 returns e^-87 ~ 1.6e-38 rather than a denormal, and
/// e^100 returns e^87 ~ 6.1e37 rather than inf, so that 1 / (1 + e^x) is
/// never a denormal either (denormals are slow on many CPUs). A NaN stays NaN.
inline float exp_fast(float x) {
    // Clamp as selects that let NaN through: (NaN < lo) is false.
    x = (x < -87.0f) ? -87.0f : x;
    x = (x > 87.0f) ? 87.0f : x;
    // n = round(x / ln2) by the 1.5*2^23 shifter trick: adding it pushes the
    // fraction bits out, leaving n + 127 (the biased exponent) in the low
    // mantissa bits of j; subtracting it again gives n exactly as a float.
    const float shifter = 12582912.0f + 127.0f;  // 1.5 * 2^23 + exponent bias
    const float j = x * 1.44269504088896341f + shifter;
    const float n = j - shifter;
    const float r = (x - n * 0.693359375f) + n * 2.12194440e-4f;  // x - n ln2, ln2 = 0.693359375 - 2.12194440e-4
    // p(r) = c0 + c1 r + ... + c5 r^5 by Estrin's scheme: three pairs side by side, then two
    // steps in r^2, so the chain of dependent FMAs is 3 long, not Horner's 5 (see 5. above).
    const float r2 = r * r;
    const float p01 = 5.0000001201e-1f + 1.6666665459e-1f * r;
    const float p23 = 4.1665795894e-2f + 8.3334519073e-3f * r;
    const float p45 = 1.3981999507e-3f + 1.9875691500e-4f * r;
    const float p = p01 + r2 * (p23 + r2 * p45);
    // e^r = 1 + (r + r^2 p): the small terms first, so r keeps its low bits (adding r + 1 first,
    // one step shorter, measured 1.0 ulp instead of 0.7)
    const float er = (p * r2 + r) + 1.0f;
    // 2^n: move the biased exponent n + 127 from the low mantissa bits of j
    // into the exponent field (the high bits of j fall off the left end).
    uint32_t jbits;
    std::memcpy(&jbits, &j, sizeof jbits);
    const uint32_t sbits = jbits << 23;
    float two_n;
    std::memcpy(&two_n, &sbits, sizeof two_n);
    return er * two_n;
}

}  // namespace ss::cpu
