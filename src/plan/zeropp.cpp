// zeropp.cpp — the planner's ZeRO++ byte counts (the formulas: zeropp.h).
#include "plan/zeropp.h"

#include "kernels/cpu/quantize.h"

namespace ss {

namespace {

constexpr int kQwzBits = 8;  // qwZ's int8 weights (parallel/zeropp.cpp)

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

int64_t quantized_bytes(int64_t n, int bits, int block) {
    // The engine's own count, so that the planner and the wire agree by construction.
    return int64_t(cpu::quantized_bytes(size_t(n), bits, block));
}

int64_t qwz_gather_bytes(int64_t unit, int n, int block) {
    return int64_t(n) * quantized_bytes(ceil_div(unit, n), kQwzBits, block);
}

QgzHops qgz_hops(int64_t unit, int n, int k, int bits, int block) {
    QgzHops h;
    h.k = k;
    h.m = n / k;
    const int64_t c = ceil_div(unit, n);
    if (h.k > 1) h.node_bytes = int64_t(h.k) * quantized_bytes(int64_t(h.m) * c, bits, block);
    if (h.m > 1) h.cross_bytes = int64_t(h.m) * quantized_bytes(c, bits, block);
    return h;
}

int qgz_node_size(int hpz, int gpus_per_node, int n) {
    if (hpz > 0) return hpz;
    if (gpus_per_node > 0 && gpus_per_node < n) return gpus_per_node;
    return n;
}

std::string zeropp_name(const PlanLayout& l, int qgz_bits) {
    std::string s;
    auto add = [&](const std::string& part) { s += (s.empty() ? "" : ", ") + part; };
    if (l.hpz > 0) add("hpZ " + std::to_string(l.hpz));
    if (l.qwz) add("qwZ");
    if (l.qgz) add("qgZ int" + std::to_string(qgz_bits));
    return s;
}

}  // namespace ss
