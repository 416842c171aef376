// test_links.cpp — emulated links (comm/links.h): every collective's alpha-beta
// time against a hand computation, the two tiers, the time scale, the flags'
// errors, the one-line description, the presets, and the CPU matmul rate
// (kernels/cpu/matmul_rate.h; positive and finite, never timed against a bound).
#include <catch2/catch.hpp>

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "comm/links.h"
#include "core/check.h"
#include "kernels/cpu/matmul_rate.h"
#include "plan/comm.h"
#include "plan/hardware.h"
#include "train/plan_for_run.h"

using namespace ss;

namespace {

std::vector<int> ranks_from(int first, int n) {
    std::vector<int> r(static_cast<size_t>(n));
    std::iota(r.begin(), r.end(), first);
    return r;
}

// One tier of B GB/s and alpha us.
EmulatedLinks one_tier(double gbps, double us) {
    EmulatedLinks e;
    e.on = true;
    e.intra = e.inter = EmulatedLink{gbps, us};
    return e;
}

// The error make_emulated_links (or parse_link) throws, "" if none.
template <class F>
std::string error_of(F f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

EmulatedLinks flags(const std::string& link, const std::string& intra, const std::string& inter, int gpn,
                    const std::string& emulate, int world, double gflops = 100) {
    return make_emulated_links(link, intra, inter, gpn, emulate, world, gflops);
}

}  // namespace

TEST_CASE("every collective's time is the ring's alpha-beta formula") {
    // 10 GB/s and 5 us: S/B = S * 1e-10 s, a = 5e-6 s. Written out per op as
    // Thakur et al. 2005 give them (links.h), not through busbw_factor.
    const double B = 10e9, a = 5e-6;
    const EmulatedLinks e = one_tier(10, 5);
    for (int n : {2, 4, 8}) {
        const std::vector<int> g = ranks_from(0, n);
        for (double S : {0.0, 4.0, 1e6, 3.0e8}) {
            const uint64_t bytes = uint64_t(S);
            const double k = double(n - 1) / n;
            INFO("n = " << n << ", S = " << S);
            // Relative 1e-12: the hand formula and the code sum the same few doubles in another order.
            CHECK(e.seconds("all_reduce", bytes, g) == Approx(2 * k * S / B + 2 * (n - 1) * a).epsilon(1e-12));
            CHECK(e.seconds("all_gather", bytes, g) == Approx(k * S / B + (n - 1) * a).epsilon(1e-12));
            CHECK(e.seconds("reduce_scatter", bytes, g) == Approx(k * S / B + (n - 1) * a).epsilon(1e-12));
            CHECK(e.seconds("all_to_all", bytes, g) == Approx(k * S / B + (n - 1) * a).epsilon(1e-12));
            CHECK(e.seconds("broadcast", bytes, g) == Approx(S / B + (n - 1) * a).epsilon(1e-12));
            CHECK(e.seconds("barrier", 0, g) == Approx(2 * (n - 1) * a).epsilon(1e-12));
        }
    }
    // send and recv: the group is [src, dst].
    CHECK(e.seconds("send", 1000000, {3, 5}) == Approx(1e6 / B + a).epsilon(1e-12));
    CHECK(e.seconds("recv", 1000000, {5, 3}) == Approx(1e6 / B + a).epsilon(1e-12));
    // One worked number: 1 MB all_reduce over 4 ranks = 1.5 x 1e6 / 1e10 + 6 x 5e-6 = 150 us + 30 us.
    CHECK(e.seconds("all_reduce", 1000000, ranks_from(0, 4)) == Approx(180e-6).epsilon(1e-12));
}

TEST_CASE("a group of one, or links off, take no time; an unknown op is an error") {
    const EmulatedLinks e = one_tier(1, 6);
    for (const char* op : {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "barrier"})
        CHECK(e.seconds(op, 1 << 20, {3}) == 0);
    EmulatedLinks off;
    CHECK(off.seconds("all_reduce", 1 << 20, ranks_from(0, 4)) == 0);
    CHECK(off.describe().empty());
    CHECK_THROWS_WITH(e.seconds("allreduce", 8, {0, 1}), Catch::Contains("allreduce") && Catch::Contains("all_reduce"));
}

TEST_CASE("two tiers: a group inside a node uses intra, one across nodes inter") {
    EmulatedLinks e;
    e.on = true;
    e.intra = {100, 1};
    e.inter = {10, 10};
    e.gpus_per_node = 4;
    CHECK(e.slowest({0, 1, 2, 3}).gbps == 100);
    CHECK(e.slowest({4, 5, 6, 7}).gbps == 100);
    CHECK(e.slowest({3, 4}).gbps == 10);        // the last of node 0 and the first of node 1
    CHECK(e.slowest({1, 5}).gbps == 10);        // a dp pair across nodes
    CHECK(e.slowest(ranks_from(0, 8)).us == 10);
    // 4 MB all_gather over 2 ranks: (1/2) 4e6 / B + 1 hop.
    CHECK(e.seconds("all_gather", 4000000, {0, 1}) == Approx(0.5 * 4e6 / 100e9 + 1e-6).epsilon(1e-12));
    CHECK(e.seconds("all_gather", 4000000, {0, 4}) == Approx(0.5 * 4e6 / 10e9 + 10e-6).epsilon(1e-12));
    // One tier: every group uses intra (== inter), whatever its ranks.
    CHECK(one_tier(7, 1).slowest({0, 100}).gbps == 7);
    // A ring with k members in each node it spans crosses at k x inter, at most intra
    // (nics_in_use: NCCL's channels leave each node through k NICs); the fewest count.
    CHECK(e.group_link("all_gather", {0, 1, 4, 5}).gbps == 20);
    CHECK(e.group_link("all_reduce", ranks_from(0, 8)).gbps == 40);
    CHECK(e.group_link("all_reduce", {0, 1, 2, 4}).gbps == 10);  // node 1 has one member: one NIC
    CHECK(e.group_link("all_to_all", ranks_from(0, 8)).gbps == 10);
    CHECK(e.group_link("send", {3, 4}).gbps == 10);
    CHECK(e.group_link("all_gather", {0, 1, 2, 3}).gbps == 100);  // inside a node: intra
    CHECK(e.group_link("all_gather", {0, 4}).us == 10);
    CHECK(e.seconds("all_gather", 4000000, {0, 1, 4, 5}) == Approx(0.75 * 4e6 / 20e9 + 3 * 10e-6).epsilon(1e-12));
    EmulatedLinks fat = e;
    fat.inter = {60, 10};  // 4 x 60 would pass the node's own 100
    CHECK(fat.group_link("all_reduce", ranks_from(0, 8)).gbps == 100);
}

TEST_CASE("time_scale multiplies every time") {
    EmulatedLinks e = one_tier(10, 5);
    const double t = e.seconds("all_reduce", 123456, ranks_from(0, 4));
    e.time_scale = 3000;
    CHECK(e.seconds("all_reduce", 123456, ranks_from(0, 4)) == Approx(3000 * t).epsilon(1e-12));
    CHECK(e.seconds("send", 1000, {0, 1}) == Approx(3000 * (1000 / 10e9 + 5e-6)).epsilon(1e-12));
}

TEST_CASE("parse_link reads GBPS[,US] and names the flag in every error") {
    CHECK(parse_link("--link", "1,6").gbps == 1);
    CHECK(parse_link("--link", "1,6").us == 6);
    CHECK(parse_link("--link", "1").us == 0);
    CHECK(parse_link("--link-intra", "360, 2.5").us == 2.5);
    CHECK(parse_link("--link", "0.5,0").gbps == 0.5);
    CHECK(error_of([] { parse_link("--link", "0,6"); }) ==
          "--link 0,6: the bandwidth must be a positive number of GB/s, e.g. --link 1,6 (1 GB/s, 6 us)");
    for (const char* bad : {"0", "-1,6", "nan,6", "inf", "abc", "1x,6", "", " ", ",6", "1,", "1,-6", "1,nan",
                            "1,6,7", "1,6us", "1e999,6"}) {
        INFO("--link-inter '" << bad << "'");
        const std::string msg = error_of([&] { parse_link("--link-inter", bad); });
        CHECK_THAT(msg, Catch::StartsWith("--link-inter") && Catch::Contains("e.g. --link-inter 1,6"));
    }
    CHECK_THAT(error_of([] { parse_link("--link", "1,-6"); }), Catch::Contains("latency"));
    CHECK_THAT(error_of([] { parse_link("--link", "1,6,7"); }), Catch::Contains("at most two numbers"));
}

TEST_CASE("make_emulated_links: off, one tier, two tiers, a preset") {
    CHECK_FALSE(flags("", "", "", 0, "", 8).on);

    const EmulatedLinks one = flags("1,6", "", "", 0, "", 8);
    CHECK(one.on);
    CHECK(one.gpus_per_node == 0);
    CHECK(one.time_scale == 1);
    CHECK(one.describe() == "emulated links (not measured): 1 GB/s, 6 us on every link");

    const EmulatedLinks two = flags("", "450,3", "50,5", 8, "", 16);
    CHECK(two.intra.gbps == 450);
    CHECK(two.inter.us == 5);
    CHECK(two.describe() == "emulated links (not measured): intra 450 GB/s 3 us, inter 50 GB/s 5 us, 8 ranks per node");

    const EmulatedLinks h = flags("", "", "", 0, "h100x8-ib400", 16, 317);
    CHECK(h.gpus_per_node == 8);
    CHECK(h.preset == "h100x8-ib400");
    CHECK(h.time_scale == Approx(989.4e12 / 317e9).epsilon(1e-12));
    CHECK(h.describe() == "emulated links (not measured): intra 360 GB/s 2 us, inter 40 GB/s 6 us, 8 ranks per node, "
                          "time-scaled x 3121 (h100x8-ib400 on this CPU's 317 GFLOP/s)");
    // 8 ranks as 2 nodes of 4 (issue 16, section 6).
    const EmulatedLinks h4 = flags("", "", "", 0, "h100x4-ib400", 8, 100);
    CHECK(h4.slowest({0, 1, 2, 3}).gbps == 360);
    CHECK(h4.slowest({0, 4}).gbps == 40);
}

TEST_CASE("make_emulated_links: every wrong combination names the flag and what to type") {
    auto err = [](const std::string& link, const std::string& intra, const std::string& inter, int gpn,
                  const std::string& emulate, int world, double gflops = 100) {
        return error_of([&] { flags(link, intra, inter, gpn, emulate, world, gflops); });
    };
    CHECK_THAT(err("0,6", "", "", 0, "", 8), Catch::StartsWith("--link 0,6: the bandwidth"));
    CHECK_THAT(err("0x10,5", "", "", 0, "", 8), Catch::StartsWith("--link 0x10,5: the bandwidth"));  // not hex's 16
    CHECK_THAT(err("1,6", "450,3", "50,5", 8, "", 8), Catch::StartsWith("--link 1,6") && Catch::Contains("--link-intra"));
    CHECK_THAT(err("1,6", "", "", 4, "", 8), Catch::StartsWith("--link 1,6") && Catch::Contains("--gpus-per-node"));
    CHECK_THAT(err("", "450,3", "", 4, "", 8), Catch::StartsWith("--link-intra 450,3 needs --link-inter"));
    CHECK_THAT(err("", "", "50,5", 4, "", 8), Catch::StartsWith("--link-inter 50,5 needs --link-intra"));
    CHECK_THAT(err("", "450,3", "50,5", 0, "", 8), Catch::Contains("need --gpus-per-node N") && Catch::Contains("8"));
    CHECK_THAT(err("", "450,3", "50,5", 3, "", 8),
               Catch::StartsWith("--gpus-per-node 3 does not divide the world size 8"));
    CHECK_THAT(err("", "450,-3", "50,5", 4, "", 8), Catch::StartsWith("--link-intra 450,-3: the latency"));
    CHECK_THAT(err("", "", "", -1, "", 8), Catch::StartsWith("--gpus-per-node -1"));
    CHECK_THAT(err("", "", "", 4, "", 8), Catch::StartsWith("--gpus-per-node 4") && Catch::Contains("--link-intra"));
    CHECK_THAT(err("1,6", "", "", 0, "h100x8-ib400", 8), Catch::StartsWith("--emulate h100x8-ib400 brings its own links"));
    CHECK_THAT(err("", "450,3", "50,5", 8, "h100x8-ib400", 8), Catch::StartsWith("--emulate h100x8-ib400 brings"));
    CHECK_THAT(err("", "", "", 8, "h100x8-ib400", 8), Catch::Contains("leave out --gpus-per-node"));
    CHECK(err("", "", "", 0, "h100x8-ib400", 4) ==
          "--emulate h100x8-ib400: h100x8-ib400 has 8 GPUs per node and this run has 4 ranks; run 8, 16, ... ranks "
          "or use --link");
    CHECK_THAT(err("", "", "", 0, "dgx", 8),
               Catch::StartsWith("--emulate dgx: no such cluster") && Catch::Contains("h100x8-ib400") &&
                   Catch::Contains("h100x4-ib400") && Catch::Contains("a100x8-ib200"));
    CHECK_THAT(err("", "", "", 0, "a100x8-ib200", 8, 0), Catch::StartsWith("--emulate a100x8-ib200") &&
                                                              Catch::Contains("matmul rate"));
    CHECK_THAT(err("", "", "", 0, "a100x8-ib200", 8, NAN), Catch::Contains("matmul rate"));
}

TEST_CASE("cluster presets: node sizes, peaks, and the planner's figures") {
    REQUIRE(cluster_presets().size() >= 3);
    auto find = [](const std::string& name) {
        for (const ClusterPreset& p : cluster_presets())
            if (p.name == name) return p;
        FAIL("no preset " << name);
        return ClusterPreset{};
    };
    CHECK(find("h100x8-ib400").gpus_per_node == 8);
    CHECK(find("h100x4-ib400").gpus_per_node == 4);
    CHECK(find("a100x8-ib200").gpus_per_node == 8);
    CHECK(find("a100x8-ib200").peak_tflops == 312);
    // One cluster, one set of numbers: the emulated links are the planner's
    // (plan/hardware.cpp), so an emulated run and `plan --hw` agree.
    for (auto [preset, hw] : {std::pair{"h100x8-ib400", "h100"}, {"h100x4-ib400", "h100"}, {"a100x8-ib200", "a100"}}) {
        INFO(preset << " vs plan --hw " << hw);
        const ClusterPreset p = find(preset);
        const Hardware h = hardware_preset(hw, "");
        CHECK(p.peak_tflops * 1e12 == Approx(h.flops).epsilon(1e-12));
        CHECK(p.intra.gbps * 1e9 == Approx(h.intra.busbw).epsilon(1e-12));
        CHECK(p.intra.us * 1e-6 == Approx(h.intra.alpha).epsilon(1e-12));
        CHECK(p.inter.gbps * 1e9 == Approx(h.inter.busbw).epsilon(1e-12));
        CHECK(p.inter.us * 1e-6 == Approx(h.inter.alpha).epsilon(1e-12));
        CHECK_FALSE(p.source.empty());
    }
    for (const ClusterPreset& p : cluster_presets()) {
        INFO(p.name);
        CHECK(flags("", "", "", 0, p.name, 2 * p.gpus_per_node).on);  // every preset builds for two nodes
    }
}

TEST_CASE("measure_cpu_matmul_gflops returns a positive, finite rate") {
    // No bound on the value: the machine is shared, and a timing assertion would fail at random.
    const double gflops = cpu::measure_cpu_matmul_gflops(0.05);
    CHECK(std::isfinite(gflops));
    CHECK(gflops > 0);
}

TEST_CASE("measure_fma_peak_gflops returns a positive, finite rate") {
    // No bound on the value, and no comparison with a GEMM's rate: both are timings on a shared machine.
    const double gflops = cpu::measure_fma_peak_gflops(0.02);
    CHECK(std::isfinite(gflops));
    CHECK(gflops > 0);
}

TEST_CASE("the planner's cpu-local takes a run's emulated links, in the CPU's time", "[links][plan]") {
    const Hardware cpu = hardware_preset("cpu-local", "");
    // Off: unchanged.
    REQUIRE(emulated_hardware(cpu, EmulatedLinks{}, 8).intra.busbw == cpu.intra.busbw);
    // Two tiers by hand: GB/s and us as given, latency counted on a ring, 4 ranks a node.
    Hardware hw = emulated_hardware(cpu, make_emulated_links("", "100,2", "10,5", 4, "", 8, 0), 8);
    CHECK(hw.intra.busbw == Approx(100e9));
    CHECK(hw.intra.alpha == Approx(2e-6));
    CHECK(hw.inter.busbw == Approx(10e9));
    CHECK(hw.inter.alpha == Approx(5e-6));
    CHECK(hw.intra.ring);
    CHECK(hw.gpus_per_node == 4);
    // --emulate: every time x scale, so bandwidth / scale and latency x scale.
    const EmulatedLinks e = make_emulated_links("", "", "", 0, "h100x4-ib400", 8, 30);
    const double scale = 989.4e12 / 30e9;
    REQUIRE(e.time_scale == Approx(scale));
    hw = emulated_hardware(cpu, e, 8);
    CHECK(hw.intra.busbw == Approx(360e9 / scale));
    CHECK(hw.inter.alpha == Approx(6e-6 * scale));
    // The planner's time of a call is then the emulation's, for every op.
    for (const char* op : {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send"}) {
        const int n = std::string(op) == "send" ? 2 : 4;
        std::vector<int> ranks(static_cast<size_t>(n), 0);
        for (int i = 0; i < n; ++i) ranks[size_t(i)] = 4 + i;  // inside node 1
        INFO(op);
        CHECK(collective_seconds(op, 1 << 20, 1, n, hw.intra) == Approx(e.seconds(op, 1 << 20, ranks)));
    }
}
