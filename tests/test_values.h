// test_values.h — the inputs the collective tests fill their buffers with: a
// value per (rank, index, salt), deterministic, in [-1, 1] with 3 decimals, so
// that a sum over a few ranks is exact in fp32 and every rank can compute what
// every other rank sent; and the kernel tests' uniform inputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ss::test {

/// A deterministic value in [-1, 1] with 3 decimals for (@p rank, index @p i, @p salt).
inline float value(int rank, size_t i, int salt) {
    uint64_t h = uint64_t(rank) * 0x9E3779B97F4A7C15ull ^ (uint64_t(i) + 0x632BE59BD9B4E019ull * uint64_t(salt + 1));
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
    return float(int(h % 2001) - 1000) / 1000.0f;
}

/// @p n floats uniform in [@p lo, @p hi) from a 64-bit LCG (Knuth's MMIX constants) seeded by
/// @p seed: the same numbers on every platform, unlike std::uniform_real_distribution.
inline std::vector<float> uniform(long n, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
    std::vector<float> v(static_cast<size_t>(n));
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (auto& x : v) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x = lo + (hi - lo) * float((s >> 40) * (1.0 / 16777216.0));
    }
    return v;
}

}  // namespace ss::test
