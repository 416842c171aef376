#include "core/rng.h"

#include <cmath>

namespace ss {

uint64_t hash_name(std::string_view name) {
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : name) {
        h ^= c;
        h *= 1099511628211ull;
    }
    return h;
}

static uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint64_t counter_hash(uint64_t seed, uint64_t stream, uint64_t index) {
    return splitmix64(splitmix64(splitmix64(seed) ^ stream) ^ index);
}

float counter_uniform(uint64_t seed, uint64_t stream, uint64_t index) {
    return float(counter_hash(seed, stream, index) >> 40) * (1.0f / 16777216.0f);  // 24 bits
}

float counter_normal(uint64_t seed, uint64_t stream, uint64_t index) {
    uint64_t h = counter_hash(seed, stream, index);
    // Two uniforms from the two halves; u1 in (0, 1] so the log is finite.
    double u1 = (double((h >> 32) & 0xffffffffu) + 1.0) / 4294967296.0;
    double u2 = double(h & 0xffffffffu) / 4294967296.0;
    return float(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
}

}  // namespace ss
