// test_quantize.cpp — block quantization (kernels/cpu/quantize.h), the arithmetic
// of ZeRO++'s qwZ and qgZ: the packed size, the error bound of every value
// against its own block's scale, int8 and int4, partial last blocks, zero blocks,
// and nan/inf blocks that stay non-finite.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "kernels/cpu/quantize.h"

using namespace ss::cpu;

namespace {

// Values over several magnitudes (so the blocks' scales differ), deterministic.
std::vector<float> values(size_t n) {
    std::vector<float> x(n);
    uint32_t r = 12345;
    for (size_t i = 0; i < n; ++i) {
        r = r * 1664525u + 1013904223u;
        const float u = float(r >> 8) / float(1u << 24) - 0.5f;  // [-0.5, 0.5)
        x[i] = u * std::ldexp(1.0f, int(i / 97 % 9) - 4);       // 2^-4 .. 2^4
    }
    return x;
}

}  // namespace

TEST_CASE("block quantization: the packed size and the per-block error bound, int8 and int4", "[kernels][quantize]") {
    for (int bits : {8, 4})
        for (int block : {1, 7, 64, 256})
            for (size_t n : {size_t(0), size_t(1), size_t(5), size_t(1000), size_t(4099)}) {
                const std::vector<float> x = values(n);
                const size_t nb = (n + size_t(block) - 1) / size_t(block);
                const size_t bytes = quantized_bytes(n, bits, block);
                REQUIRE(bytes == nb * 4 + (n * size_t(bits) + 7) / 8);  // fp32 scales, then the packed integers
                std::vector<uint8_t> q(bytes);
                quantize_blocks(x.data(), n, bits, block, q.data());
                std::vector<float> y(n), acc(n, 1.0f);
                dequantize_blocks(q.data(), n, bits, block, y.data());
                dequantize_add_blocks(q.data(), n, bits, block, acc.data());
                const float q_max = float((1 << (bits - 1)) - 1);
                INFO("bits " << bits << ", block " << block << ", n " << n);
                for (size_t b = 0; b < nb; ++b) {
                    float amax = 0;
                    for (size_t i = b * block; i < std::min(n, (b + 1) * block); ++i) amax = std::max(amax, std::fabs(x[i]));
                    // quantize.h: |x - q s| <= s (1/2 + 2 q_max 2^-24), s = amax / q_max as stored.
                    const float s = amax / q_max;
                    const double bound = double(s) * (0.5 + 2.0 * q_max * std::ldexp(1.0, -24));
                    for (size_t i = b * block; i < std::min(n, (b + 1) * block); ++i) {
                        REQUIRE(std::fabs(double(x[i]) - double(y[i])) <= bound);
                        // The add form adds the same value; -march=native may fuse its multiply and
                        // add (one rounding instead of two): within y's rounding and the sum's of 1 + y.
                        REQUIRE(std::fabs(double(acc[i]) - (1.0 + double(y[i]))) <=
                                std::ldexp(std::fabs(double(y[i])) + std::fabs(1.0 + double(y[i])), -24));
                    }
                }
            }
}

TEST_CASE("block quantization: a block of zeros is exact; a block with nan or inf comes back nan", "[kernels][quantize]") {
    for (int bits : {8, 4}) {
        std::vector<float> x(12, 0.0f);
        x[9] = 3.0f;
        x[5] = std::nanf("");
        x[1] = INFINITY;  // blocks of 4: [0..3] has inf, [4..7] nan, [8..11] finite
        std::vector<uint8_t> q(quantized_bytes(x.size(), bits, 4));
        quantize_blocks(x.data(), x.size(), bits, 4, q.data());
        std::vector<float> y(x.size());
        dequantize_blocks(q.data(), x.size(), bits, 4, y.data());
        for (int i = 0; i < 8; ++i) CHECK(std::isnan(y[size_t(i)]));
        CHECK(y[8] == 0.0f);
        CHECK(std::fabs(y[9] - 3.0f) <= 3.0f * std::ldexp(1.0f, -22));  // the maximum: q = q_max, q_max s to fp32's rounding
        std::vector<float> z(8, 0.0f);
        std::vector<uint8_t> qz(quantized_bytes(8, bits, 4));
        quantize_blocks(z.data(), 8, bits, 4, qz.data());
        dequantize_blocks(qz.data(), 8, bits, 4, y.data());
        for (int i = 0; i < 8; ++i) CHECK(y[size_t(i)] == 0.0f);
    }
}
