// test_values.h — the inputs the collective tests fill their buffers with: a
// value per (rank, index, salt), deterministic, in [-1, 1] with 3 decimals, so
// that a sum over a few ranks is exact in fp32 and every rank can compute what
// every other rank sent.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ss::test {

/// A deterministic value in [-1, 1] with 3 decimals for (@p rank, index @p i, @p salt).
inline float value(int rank, size_t i, int salt) {
    uint64_t h = uint64_t(rank) * 0x9E3779B97F4A7C15ull ^ (uint64_t(i) + 0x632BE59BD9B4E019ull * uint64_t(salt + 1));
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
    return float(int(h % 2001) - 1000) / 1000.0f;
}

}  // namespace ss::test
