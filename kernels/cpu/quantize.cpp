// quantize.cpp — block quantization (the format and its error bound are in quantize.h).
#include "kernels/cpu/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace ss::cpu {

namespace {

int q_max(int bits) { return (1 << (bits - 1)) - 1; }
size_t blocks(size_t n, int block) { return (n + size_t(block) - 1) / size_t(block); }

// Value i of a packed payload: int8, or a signed nibble (low nibble first).
int unpack(const uint8_t* q, size_t i, int bits) {
    if (bits == 8) return int(int8_t(q[i]));
    const int nib = (q[i / 2] >> (4 * (i % 2))) & 0xf;
    return nib >= 8 ? nib - 16 : nib;
}

template <bool Add>
void dequantize(const uint8_t* in, size_t n, int bits, int block, float* out) {
    const size_t nb = blocks(n, block);
    float scale = 0;
    const uint8_t* q = in + nb * 4;
    for (size_t b = 0; b < nb; ++b) {
        std::memcpy(&scale, in + b * 4, 4);
        const size_t lo = b * size_t(block), hi = std::min(n, lo + size_t(block));
        for (size_t i = lo; i < hi; ++i) {
            const float v = float(unpack(q, i, bits)) * scale;
            if (Add)
                out[i] += v;
            else
                out[i] = v;
        }
    }
}

}  // namespace

size_t quantized_bytes(size_t n, int bits, int block) { return blocks(n, block) * 4 + (n * size_t(bits) + 7) / 8; }

void quantize_blocks(const float* x, size_t n, int bits, int block, uint8_t* out) {
    const size_t nb = blocks(n, block);
    const int qm = q_max(bits);
    uint8_t* q = out + nb * 4;
    if (bits == 4 && n > 0) std::memset(q, 0, (n + 1) / 2);  // (n = 0: q may be null)
    for (size_t b = 0; b < nb; ++b) {
        const size_t lo = b * size_t(block), hi = std::min(n, lo + size_t(block));
        float amax = 0;
        bool finite = true;
        for (size_t i = lo; i < hi; ++i) {
            amax = std::max(amax, std::fabs(x[i]));
            finite = finite && std::isfinite(x[i]);
        }
        // A nan or inf makes the whole block nan (q * nan), so the receiver's
        // non-finite check still sees it (model/finite.h) instead of a clamped number.
        const float scale = finite ? amax / float(qm) : std::nanf("");
        std::memcpy(out + b * 4, &scale, 4);
        for (size_t i = lo; i < hi; ++i) {
            // nearbyint: round half to even, the same on every machine; clamp, since
            // amax / fl(amax / qm) may exceed qm by an ulp.
            const int v = finite && scale > 0 ? int(std::clamp(std::nearbyint(x[i] / scale), float(-qm), float(qm))) : 0;
            if (bits == 8)
                q[i] = uint8_t(int8_t(v));
            else
                q[i / 2] |= uint8_t((v & 0xf) << (4 * (i % 2)));
        }
    }
}

void dequantize_blocks(const uint8_t* in, size_t n, int bits, int block, float* out) {
    dequantize<false>(in, n, bits, block, out);
}

void dequantize_add_blocks(const uint8_t* in, size_t n, int bits, int block, float* acc) {
    dequantize<true>(in, n, bits, block, acc);
}

}  // namespace ss::cpu
