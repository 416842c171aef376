// zeropp.cpp — the planner's ZeRO++ byte counts (the formulas: zeropp.h).
#include "plan/zeropp.h"

#include <algorithm>

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

int shard_members_per_node(int gpus_per_node, int tp) { return std::max(1, gpus_per_node / std::max(1, tp)); }

int qgz_node_size(int hpz, int gpus_per_node, int tp, int n) {
    if (hpz > 0) return hpz;
    if (gpus_per_node > 0) {
        const int k = shard_members_per_node(gpus_per_node, tp);
        if (k < n) return k;
    }
    return n;
}

bool groups_inside_nodes(int k, int tp, int world, int gpus_per_node) {
    if (gpus_per_node <= 0 || world <= gpus_per_node) return true;
    return gpus_per_node % (int64_t(k) * tp) == 0;
}

void check_hpz_flag(int zero, int hpz, int dp_shard, int sp, const NodeShape& nodes) {
    if (hpz == 0) return;
    const int n = dp_shard * sp;  // ZeRO's shard group (sp ranks hold the same parameters)
    SS_CHECK(zero == 3, "--hpz " << hpz << " is ZeRO++'s secondary partition of ZeRO-3's parameters: give "
                                 << "--zero 3 too (this layout has --zero " << zero << ")");
    SS_CHECK(hpz >= 2, "--hpz " << hpz << ": give K >= 2, the ranks of a node that keep the secondary "
                                << "partition (DeepSpeed's zero_hpz_partition_size; 1 is hpZ off: leave --hpz out)");
    const std::string usual = nodes.gpus_per_node > 0
                                  ? "the shard group's ranks in one node, " + std::to_string(nodes.gpus_per_node) +
                                        " per node / tp " + std::to_string(nodes.tp) + " = " +
                                        std::to_string(shard_members_per_node(nodes.gpus_per_node, nodes.tp))
                                  : std::string("the shard group's ranks in one node: GPUs per node / tp");
    SS_CHECK(n % hpz == 0 && hpz < n, "--hpz " << hpz << " must divide the ZeRO shard group of " << n
                                               << " ranks (dp_shard " << dp_shard << " x sp " << sp
                                               << ") and be smaller than it; usually K is " << usual);
    SS_CHECK(groups_inside_nodes(hpz, nodes.tp, nodes.world, nodes.gpus_per_node),
             "--hpz " << hpz << ": a group of " << hpz << " shard-group members spans " << hpz << " x tp "
                      << nodes.tp << " = " << int64_t(hpz) * nodes.tp << " ranks, which do not lie inside one node of "
                      << nodes.gpus_per_node << ", so the backward's gathers would cross nodes, which hpZ exists "
                      << "to avoid; choose K dividing " << usual);
}

void check_zeropp_flags(int zero, bool qwz, bool qgz, int shard_n, int qgz_node, int qgz_bits, int quant_block,
                        const NodeShape& nodes) {
    if (qwz)
        SS_CHECK(zero == 3, "--qwz quantizes ZeRO-3's parameter all-gathers, and --zero " << zero << " gathers "
                            << "no parameters in forward; give --zero 3 too");
    if (qgz) {
        SS_CHECK(zero != 0, "--qgz replaces the gradient reduce-scatter of ZeRO-2 and ZeRO-3, and --zero 0 (DDP) "
                            "all-reduces gradients instead; give --zero 2 or --zero 3");
        SS_CHECK(zero != 1, "--qgz replaces the reduce-scatter that ZeRO-2 and ZeRO-3 run during backward; ZeRO-1 "
                            "reduce-scatters its whole gradients in the step, and this engine keeps that one in "
                            "full precision (as DeepSpeed, whose qgZ is in ZeRO-3 only); give --zero 2 or --zero 3");
        SS_CHECK(shard_n > 1, "--qgz averages gradients over the ZeRO shard group, and this layout's has 1 rank; "
                              "give --dp-shard 2 or more");
        SS_CHECK(qgz_node >= 1 && qgz_node <= shard_n && shard_n % qgz_node == 0,
                 "--qgz's node of " << qgz_node << " ranks (--hpz, else --gpus-per-node / tp) must divide the ZeRO "
                                    << "shard group of " << shard_n << " ranks (dp_shard x sp); choose "
                                    << "--gpus-per-node to divide it");
        SS_CHECK(groups_inside_nodes(qgz_node, nodes.tp, nodes.world, nodes.gpus_per_node),
                 "--qgz's in-node all-to-all over groups of " << qgz_node << " shard-group members spans "
                     << int64_t(qgz_node) * nodes.tp << " ranks (x tp " << nodes.tp << "), which do not lie inside "
                     << "one node of " << nodes.gpus_per_node << "; choose --gpus-per-node a multiple of tp "
                     << nodes.tp);
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
