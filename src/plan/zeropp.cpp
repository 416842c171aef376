// zeropp.cpp — the planner's ZeRO++ byte counts (the formulas: zeropp.h).
#include "plan/zeropp.h"

#include "core/check.h"

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

void check_zeropp_flags(int zero, bool qwz, bool qgz, int shard_n, int qgz_node, int qgz_bits, int quant_block) {
    if (qwz)
        SS_CHECK(zero == 3, "--qwz quantizes ZeRO-3's parameter all-gathers, and --zero " << zero << " gathers "
                            << "no parameters in forward; give --zero 3 too");
    if (qgz) {
        SS_CHECK(zero == 2 || zero == 3,
                 "--qgz replaces the gradient reduce-scatter of ZeRO-2 and ZeRO-3, and --zero "
                     << zero << (zero == 0 ? " all-reduces" : " all-reduces (ZeRO-1 keeps whole gradients)")
                     << " gradients instead; give --zero 2 or --zero 3");
        SS_CHECK(shard_n > 1, "--qgz averages gradients over the ZeRO shard group, and this layout's has 1 rank; "
                              "give --dp-shard 2 or more");
        SS_CHECK(qgz_node >= 1 && qgz_node <= shard_n && shard_n % qgz_node == 0,
                 "--qgz's node of " << qgz_node << " ranks (--hpz, else --gpus-per-node) must divide the ZeRO "
                                    << "shard group of " << shard_n << " ranks (dp_shard x sp); choose "
                                    << "--gpus-per-node to divide it");
    }
    SS_CHECK(qgz_bits == 4 || qgz_bits == 8, "--qgz-bits " << qgz_bits << " is not a choice; choose 4 (ZeRO++'s int4) or 8");
    SS_CHECK(quant_block >= 1 && quant_block <= (1 << 20),
             "--quant-block " << quant_block << " must lie in [1, 1048576] elements per fp32 scale");
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
