// links.cpp — the alpha-beta time of a collective on emulated links, the link
// flags' checks and the cluster presets (the model and its sources: links.h).
#include "comm/links.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>

#include "comm/trace/trace.h"
#include "core/check.h"

namespace ss {

namespace {

// Numbers as a person writes them: 1, 6, 2.5, 370 (at most 4 significant digits).
std::string num(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", x);
    return buf;
}

std::string example(const std::string& flag) { return "e.g. " + flag + " 1,6 (1 GB/s, 6 us)"; }

std::string trim(const std::string& s) {
    size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
    return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// The whole of @p text as a finite decimal number, or false (strtod would also read hex,
// "0x10" as 16, which nobody means by GB/s).
bool finite_number(const std::string& text, double& out) {
    if (text.empty() || text.find_first_of("xX") != std::string::npos) return false;
    char* end = nullptr;
    out = std::strtod(text.c_str(), &end);
    return end == text.c_str() + text.size() && std::isfinite(out);
}

// Ring hops of each op: the latency term is hops x alpha (Thakur et al. 2005).
double hops(const std::string& op, int n) {
    if (op == "all_reduce" || op == "barrier") return 2.0 * (n - 1);
    if (op == "all_gather" || op == "reduce_scatter" || op == "all_to_all" || op == "broadcast") return n - 1;
    if (op == "send" || op == "recv") return 1;
    SS_FAIL("emulated links: no time for the collective '"
            << op << "'; known: all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send, recv, barrier");
}

std::string preset_names() {
    std::string s;
    for (const ClusterPreset& p : cluster_presets()) s += (s.empty() ? "" : ", ") + p.name;
    return s;
}

// "run 8, 16, ... ranks"
std::string multiples(int n) { return std::to_string(n) + ", " + std::to_string(2 * n) + ", ..."; }

}  // namespace

// ---- the model ---------------------------------------------------------------------

EmulatedLink EmulatedLinks::slowest(const std::vector<int>& ranks) const {
    if (gpus_per_node <= 0 || ranks.empty()) return intra;
    const int node = ranks.front() / gpus_per_node;
    for (int r : ranks)
        if (r / gpus_per_node != node) return inter;
    return intra;
}

int nics_in_use(const std::string& op, int per_node) {
    const bool ring = op == "all_reduce" || op == "all_gather" || op == "reduce_scatter" || op == "broadcast";
    return ring ? std::max(1, per_node) : 1;
}

double across_nodes(const std::string& op, int per_node, double intra, double inter) {
    return std::min(inter * nics_in_use(op, per_node), std::max(intra, inter));
}

EmulatedLink EmulatedLinks::group_link(const std::string& op, const std::vector<int>& ranks) const {
    if (gpus_per_node <= 0 || ranks.empty()) return intra;
    std::map<int, int> members;  // node -> the group's ranks in it
    for (int r : ranks) ++members[r / gpus_per_node];
    if (members.size() == 1) return intra;
    int fewest = int(ranks.size());
    for (const auto& node : members) fewest = std::min(fewest, node.second);
    EmulatedLink link = inter;
    link.gbps = across_nodes(op, fewest, intra.gbps, inter.gbps);
    return link;
}

double EmulatedLinks::seconds(const std::string& op, uint64_t bytes, const std::vector<int>& ranks) const {
    const int n = int(ranks.size());
    const double h = hops(op, n < 2 ? 2 : n);  // checks the name even where the answer is 0
    if (!on || n < 2) return 0;
    const EmulatedLink link = group_link(op, ranks);
    const double B = link.gbps * 1e9;  // bytes/s
    const double alpha = link.us * 1e-6;  // s
    return (busbw_factor(op, n) * double(bytes) / B + h * alpha) * time_scale;
}

std::string EmulatedLinks::describe() const {
    if (!on) return "";
    std::string s = "emulated links (not measured): ";
    if (gpus_per_node <= 0) {
        s += num(intra.gbps) + " GB/s, " + num(intra.us) + " us on every link";
    } else {
        s += "intra " + num(intra.gbps) + " GB/s " + num(intra.us) + " us, inter " + num(inter.gbps) + " GB/s " +
             num(inter.us) + " us, " + std::to_string(gpus_per_node) + " ranks per node";
    }
    if (!preset.empty()) {
        char scale[32];
        std::snprintf(scale, sizeof scale, time_scale >= 100 ? "%.0f" : "%.3g", time_scale);
        char rate[32];
        std::snprintf(rate, sizeof rate, "%.0f", cpu_gflops);
        s += std::string(", time-scaled x ") + scale + " (" + preset + " on this CPU's " + rate + " GFLOP/s)";
    }
    return s;
}

// ---- the flags ---------------------------------------------------------------------

EmulatedLink parse_link(const std::string& flag, const std::string& text) {
    const std::string t = trim(text);
    SS_CHECK(!t.empty(), flag << ": give the link as GBPS[,US], " << example(flag));
    const size_t comma = t.find(',');
    SS_CHECK(comma == std::string::npos || t.find(',', comma + 1) == std::string::npos,
             flag << " " << text << ": give at most two numbers, GB/s and us, " << example(flag));
    EmulatedLink link;
    SS_CHECK(finite_number(trim(t.substr(0, comma)), link.gbps) && link.gbps > 0,
             flag << " " << text << ": the bandwidth must be a positive number of GB/s, " << example(flag));
    if (comma != std::string::npos)
        SS_CHECK(finite_number(trim(t.substr(comma + 1)), link.us) && link.us >= 0,
                 flag << " " << text << ": the latency must be a number of microseconds >= 0, " << example(flag));
    return link;
}

EmulatedLinks make_emulated_links(const std::string& link, const std::string& link_intra,
                                  const std::string& link_inter, int gpus_per_node, const std::string& emulate,
                                  int world, double cpu_gflops) {
    SS_CHECK(world >= 1, "emulated links: the world size must be at least 1, not " << world);
    SS_CHECK(gpus_per_node >= 0, "--gpus-per-node " << gpus_per_node << ": give a number of ranks >= 1");
    const bool tiers = !link_intra.empty() || !link_inter.empty();
    EmulatedLinks e;
    if (link.empty() && !tiers && emulate.empty()) {
        SS_CHECK(gpus_per_node == 0, "--gpus-per-node " << gpus_per_node
                                                        << " splits the links into two tiers: give --link-intra "
                                                           "GBPS[,US] and --link-inter GBPS[,US] too");
        return e;  // off
    }
    e.on = true;

    if (!emulate.empty()) {
        SS_CHECK(link.empty() && !tiers,
                 "--emulate " << emulate << " brings its own links: leave out --link, --link-intra and --link-inter "
                              << "(or drop --emulate to give the links yourself)");
        SS_CHECK(gpus_per_node == 0, "--emulate " << emulate << " brings its own node size: leave out --gpus-per-node "
                                                  << gpus_per_node << " (or choose another preset: "
                                                  << preset_names() << ")");
        const ClusterPreset* p = nullptr;
        for (const ClusterPreset& c : cluster_presets())
            if (c.name == emulate) p = &c;
        SS_CHECK(p, "--emulate " << emulate << ": no such cluster; choose one of " << preset_names());
        SS_CHECK(world % p->gpus_per_node == 0,
                 "--emulate " << p->name << ": " << p->name << " has " << p->gpus_per_node
                              << " GPUs per node and this run has " << world << " rank" << (world == 1 ? "" : "s") << "; run "
                              << multiples(p->gpus_per_node) << " ranks or use --link");
        SS_CHECK(std::isfinite(cpu_gflops) && cpu_gflops > 0,
                 "--emulate " << p->name << ": this CPU's matmul rate is needed for the time scale, got "
                              << cpu_gflops << " GFLOP/s (measure it with cpu::measure_cpu_matmul_gflops)");
        e.intra = p->intra;
        e.inter = p->inter;
        e.gpus_per_node = p->gpus_per_node;
        e.preset = p->name;
        e.cpu_gflops = cpu_gflops;
        e.time_scale = p->peak_tflops * 1e12 / (cpu_gflops * 1e9);
        return e;
    }

    if (!link.empty()) {
        SS_CHECK(!tiers, "--link " << link << " sets every link; for two tiers leave it out and give --link-intra "
                                   << "and --link-inter with --gpus-per-node");
        SS_CHECK(gpus_per_node == 0, "--link " << link << " sets every link alike, so --gpus-per-node "
                                               << gpus_per_node << " changes nothing; for two tiers use "
                                               << "--link-intra and --link-inter instead of --link");
        e.intra = e.inter = parse_link("--link", link);
        return e;
    }

    SS_CHECK(!link_intra.empty(), "--link-inter " << link_inter << " needs --link-intra too (the link inside a "
                                                  << "node), e.g. --link-intra 360,2 --link-inter " << link_inter);
    SS_CHECK(!link_inter.empty(), "--link-intra " << link_intra << " needs --link-inter too (the link between "
                                                  << "nodes), e.g. --link-intra " << link_intra
                                                  << " --link-inter 40,6");
    e.intra = parse_link("--link-intra", link_intra);
    e.inter = parse_link("--link-inter", link_inter);
    SS_CHECK(gpus_per_node >= 1, "--link-intra and --link-inter need --gpus-per-node N, the ranks of one node "
                                 << "(N dividing the world size " << world << ")");
    SS_CHECK(world % gpus_per_node == 0, "--gpus-per-node " << gpus_per_node << " does not divide the world size "
                                                            << world << "; choose N with " << world
                                                            << " % N == 0");
    e.gpus_per_node = gpus_per_node;
    return e;
}

// ---- the presets -------------------------------------------------------------------
//
// The same figures as the planner's hardware presets (plan/hardware.cpp; the
// table in docs/formulas.md, "Hardware"), so that an emulated run and
// `shardscope plan --hw` describe one cluster; tests/test_links.cpp checks it.
// Links are what NCCL reaches, ~80% of the per-direction line rate: NVLink 4
// runs at 450 GB/s and NCCL gets ~370 GB/s busbw with a ring (S. Jeaugey,
// NVIDIA/nccl-tests issue 212); one NIC per GPU (ConnectX-7 NDR 400 Gb/s =
// 50 GB/s, HDR 200 Gb/s = 25 GB/s).

const std::vector<ClusterPreset>& cluster_presets() {
    static const std::vector<ClusterPreset> presets = {
        {"h100x8-ib400", "H100 SXM", 989.4, {360, 2}, {40, 6}, 8,
         "NVIDIA H100 Tensor Core GPU datasheet (989.4 TFLOP/s dense BF16; NVLink 4, 900 GB/s both directions); "
         "DGX H100: 8 GPUs, one 400 Gb/s ConnectX-7 NIC each; links at ~80% of line rate (nccl-tests issue 212)"},
        {"h100x4-ib400", "H100 SXM", 989.4, {360, 2}, {40, 6}, 4,
         "as h100x8-ib400 with 4 GPUs a node (HGX H100 4-GPU), so 8 ranks are 2 nodes of 4"},
        {"a100x8-ib200", "A100 SXM", 312, {240, 2}, {20, 6}, 8,
         "NVIDIA A100 Tensor Core GPU datasheet (312 TFLOP/s dense BF16; NVLink 3, 600 GB/s both directions); "
         "the DGX A100 cluster of Narayanan et al. 2021 (arXiv:2104.04473, section 5: 8 GPUs a node, "
         "200 Gb/s HDR InfiniBand per GPU); links at ~80% of line rate"},
    };
    return presets;
}

}  // namespace ss
