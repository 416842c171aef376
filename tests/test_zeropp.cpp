// test_zeropp.cpp — ZeRO++'s quantized collectives (parallel/zeropp.h). qgZ's
// quantized all-to-alls against the exact average of a reduce-scatter, within the
// bound derived below, for one and two levels and every node size; qwZ's gather is
// exactly the dequantized chunks, started or blocking; in training, the trace moves
// uint8 where ZeRO-3 moved fp32, overlap and hpZ change no bit of a quantized run,
// and clear errors for what cannot be. (How far the losses move: test_zeropp_slow.cpp.)
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <sstream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "comm/threads/threads_backend.h"
#include "comm/trace/trace.h"
#include "core/check.h"
#include "kernels/cpu/quantize.h"
#include "parallel/zeropp.h"
#include "same_bits.h"
#include "tiny_zero3.h"
#include "train/train.h"

using namespace ss;

namespace {

// Rank r's value of element e of a unit: several magnitudes, deterministic.
float grad_value(int r, int64_t e) {
    uint32_t h = uint32_t(r) * 2654435761u ^ uint32_t(e) * 40503u;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    return (float(h % 2001u) / 1000.0f - 1.0f) * float(1 + e % 5);  // |x| <= 5
}

std::vector<Unit> units_of(std::vector<int64_t> sizes) {
    std::vector<Unit> u;
    int64_t at = 0;
    for (int64_t n : sizes) {
        u.push_back(Unit{at, at + n, int(u.size())});
        at += n;
    }
    return u;
}

TrainOptions zero3(int ranks) { return test::tiny_zero3(ranks); }

}  // namespace

TEST_CASE("qgZ: the quantized all-to-alls give the reduce-scatter's average within the derived bound",
          "[zero][zeropp][qgz]") {
    const int N = 8;
    const std::vector<Unit> units = units_of({1000, 37, 4099});  // padding: 1000 and 4099 are not multiples of 8
    for (int bits : {4, 8})
        for (int K : {8, 4, 2, 1})
            for (int block : {256, 16}) {
                std::vector<std::vector<float>> got(N);
                run_threads(N, [&](Comm& comm) {
                    Ledger ledger;
                    std::vector<int> all;
                    for (int i = 0; i < N; ++i) all.push_back(i);
                    ShardGroup shard{comm, Group{"dp_shard", all}, make_shard_plan(units, N, comm.rank()), ledger};
                    Qgz q(shard, K, bits, block);
                    std::vector<float>& mine = got[size_t(comm.rank())];
                    mine.assign(size_t(shard.plan.shard_size), 0.0f);
                    for (int u = 0; u < int(units.size()); ++u) {
                        std::vector<float> g(size_t(shard.plan.padded(u)), 0.0f);
                        for (int64_t e = 0; e < units[size_t(u)].size(); ++e) g[size_t(e)] = grad_value(comm.rank(), units[size_t(u)].begin + e);
                        q.reduce_scatter_add(u, g.data(), mine.data() + shard.plan.units[size_t(u)].local, Label{});
                    }
                });
                // The bound, per element, with A = max |x| over every rank's gradient (5 here),
                // h = 1/2 + 2 q_max 2^-24 (kernels/cpu/quantize.h), M = N / K nodes:
                //   step 1 (K > 1): each of the N senders' values is off by <= A h / q_max;
                //     a node's partial sum is at most P = K A (1 + h / q_max) in size;
                //   step 2 (M > 1): each of the M partials is off by <= P h / q_max;
                //   the sum over N is divided by N; fp32's sums of at most N terms of at most
                //   P each add <= N P 2^-23 (with slack for the division).
                const double A = 5.0, q_max = double((1 << (bits - 1)) - 1), h = 0.5 + 2.0 * q_max * std::ldexp(1.0, -24);
                const int M = N / K;
                const double P = K > 1 ? K * A * (1.0 + h / q_max) : A;
                const double bound = ((K > 1 ? N * A * h / q_max : 0.0) + (M > 1 ? M * P * h / q_max : 0.0) +
                                      N * P * std::ldexp(1.0, -23)) / N;
                double worst = 0;
                for (int r = 0; r < N; ++r) {
                    const ShardPlan plan = make_shard_plan(units, N, r);
                    for (int u = 0; u < int(units.size()); ++u) {
                        const Piece p = plan.mine(u);
                        for (int64_t e = p.flat_begin; e < p.flat_end; ++e) {
                            double exact = 0;
                            for (int s = 0; s < N; ++s) exact += grad_value(s, e);
                            exact /= N;
                            const double err = std::fabs(got[size_t(r)][size_t(p.local + e - p.flat_begin)] - exact);
                            worst = std::max(worst, err);
                        }
                    }
                }
                INFO("bits " << bits << ", nodes of K = " << K << ", block " << block << ": worst " << worst
                             << ", bound " << bound);
                REQUIRE(worst <= bound);
                REQUIRE(worst > 0);  // it did quantize
            }
}

TEST_CASE("qwZ: the gather is every member's chunk dequantized, started or blocking, fp32 and bf16",
          "[zero][zeropp][qwz]") {
    const int N = 4, block = 64;
    const std::vector<Unit> units = units_of({999, 64});
    for (DType dt : {DType::f32, DType::bf16})
        run_threads(N, [&](Comm& comm) {
            Ledger ledger;
            ShardGroup g{comm, Group{"dp_shard", {0, 1, 2, 3}}, make_shard_plan(units, N, comm.rank()), ledger};
            for (int u = 0; u < 2; ++u) {
                const int64_t c = g.plan.units[size_t(u)].chunk;
                // Every member's chunk, as each quantizes it: fp32, or bf16 widened.
                std::vector<std::vector<float>> chunks(N, std::vector<float>(size_t(c)));
                for (int r = 0; r < N; ++r)
                    for (int64_t e = 0; e < c; ++e) {
                        const float v = grad_value(r, e) * 0.01f;
                        chunks[size_t(r)][size_t(e)] = dt == DType::bf16 ? bf16_to_f32(f32_to_bf16(v)) : v;
                    }
                Tensor mine(ledger, Mem::params, {c}, dt, false);
                for (int64_t e = 0; e < c; ++e) {
                    if (dt == DType::bf16)
                        mine.bf16()[e] = f32_to_bf16(chunks[size_t(comm.rank())][size_t(e)]);
                    else
                        mine.f32()[e] = chunks[size_t(comm.rank())][size_t(e)];
                }
                Tensor whole = qwz_all_gather(g, u, mine.data(), dt, block, Label{});
                UnitInFlight f = start_qwz_all_gather(g, u, mine.data(), dt, block, Label{});
                finish_qwz_all_gather(g, f, block);
                REQUIRE(whole.bytes() == f.whole.bytes());
                REQUIRE(std::memcmp(whole.data(), f.whole.data(), whole.bytes()) == 0);
                for (int r = 0; r < N; ++r) {
                    std::vector<uint8_t> q(cpu::quantized_bytes(size_t(c), 8, block));
                    std::vector<float> y(static_cast<size_t>(c));
                    cpu::quantize_blocks(chunks[size_t(r)].data(), size_t(c), 8, block, q.data());
                    cpu::dequantize_blocks(q.data(), size_t(c), 8, block, y.data());
                    for (int64_t e = 0; e < c; ++e) {
                        const float want = dt == DType::bf16 ? bf16_to_f32(f32_to_bf16(y[size_t(e)])) : y[size_t(e)];
                        const float have = dt == DType::bf16 ? bf16_to_f32(whole.bf16()[r * c + e]) : whole.f32()[r * c + e];
                        REQUIRE(have == want);
                    }
                }
            }
        });
}

TEST_CASE("ZeRO++ in training: the trace moves uint8 on the axes zeropp.h draws; the Ledger books the rest",
          "[zero][zeropp][trace]") {
    TrainOptions o = zero3(8);
    o.hpz = 4;
    o.qwz = true;
    o.qgz = true;
    o.trace = std::string(SS_BINARY_DIR) + "/test_zeropp_trace.json";
    train(o, nullptr);
    const Trace t = read_chrome_trace(o.trace);
    // (op, axis, payload, phase, dtype, group size) of rank 0's calls in step 2.
    std::map<std::tuple<std::string, std::string, std::string, std::string, std::string, size_t>, int> calls;
    for (const TraceEvent& e : t.events)
        if (e.rank == 0 && e.kind == TraceEvent::Kind::collective && e.label.step == 2 &&
            (e.label.payload == Payload::param || e.label.payload == Payload::grad))
            ++calls[{e.name, e.axis, payload_name(e.label.payload), phase_name(e.label.phase), e.dtype, e.group.size()}];
    const int units = int(model_preset("tiny").L) + 2;
    CHECK(calls[{"all_gather", "dp_shard", "param", "fwd", "uint8", 8}] == units);  // qwZ: int8 over all 8
    CHECK(calls[{"all_gather", "hpz", "param", "bwd", "fp32", 4}] == units);        // hpZ: exact, inside the node
    CHECK(calls[{"all_to_all", "qgz_node", "grad", "bwd", "uint8", 4}] == units);   // qgZ step 1
    CHECK(calls[{"all_to_all", "qgz_cross", "grad", "bwd", "uint8", 2}] == units);  // qgZ step 2
    CHECK(calls.size() == 4);  // and no reduce-scatter
}

TEST_CASE("ZeRO++ quantized runs: overlap on and off, prefetch, and hpZ change no bit", "[zero][zeropp]") {
    TrainOptions o = zero3(8);
    o.qwz = true;
    o.qgz = true;
    o.overlap = false;
    TrainOptions on = o;
    on.overlap = true;
    on.prefetch = 2;
    test::require_same_bits(o, on, "test_zeropp", "qwZ + qgZ, overlap off vs on with prefetch 2");
    // hpZ's secondary partition keeps the weights forward dequantized; without it, the
    // backward's quantized gather dequantizes the same chunks again: the same weights.
    // (qgZ's node is hpZ's K when hpZ is on, the whole shard group here without it: no
    // --gpus-per-node, so the two runs differ in hpZ alone.)
    o.hpz = 0;
    o.qgz = false;
    TrainOptions h = o;
    h.hpz = 4;
    test::require_same_bits(o, h, "test_zeropp", "qwZ without and with hpZ 4");
    o = zero3(4);
    o.dtype = DType::bf16;
    o.zero = 2;
    o.qgz = true;
    on = o;
    on.overlap = true;
    o.overlap = false;
    test::require_same_bits(o, on, "test_zeropp", "ZeRO-2 + qgZ, bf16, overlap off vs on");
}

TEST_CASE("ZeRO++: --qwz without ZeRO-3, --qgz without a reduce-scatter, bad bits and blocks are refused",
          "[zero][zeropp][errors]") {
    TrainOptions o = zero3(8);
    o.zero = 2;
    o.qwz = true;
    REQUIRE_THROWS_WITH(check_train_options(o), Catch::Matchers::Contains("give --zero 3 too"));
    o.qwz = false;
    o.qgz = true;
    o.zero = 1;
    REQUIRE_THROWS_WITH(check_train_options(o), Catch::Matchers::Contains("give --zero 2 or --zero 3"));
    o.zero = 0;
    REQUIRE_THROWS_WITH(check_train_options(o), Catch::Matchers::Contains("give --zero 2 or --zero 3"));
    o.zero = 3;
    o.qgz_bits = 5;
    REQUIRE_THROWS_WITH(check_train_options(o), Catch::Matchers::Contains("choose 4 (ZeRO++'s int4) or 8"));
    o.qgz_bits = 4;
    o.quant_block = 0;
    REQUIRE_THROWS_WITH(check_train_options(o), Catch::Matchers::Contains("--quant-block 0 must lie in"));
    o.quant_block = 256;
    o.gpus_per_node = 3;
    o.link_intra = "100,1";
    o.link_inter = "10,5";
    REQUIRE_THROWS_WITH(check_train_options(o), Catch::Matchers::Contains("must divide the ZeRO shard group of 8"));
    o = zero3(8);
    o.dp_rep = 8;  // dp_shard 1
    o.qgz = true;
    REQUIRE_THROWS_WITH(check_train_options(o), Catch::Matchers::Contains("--dp-shard 2 or more"));
    REQUIRE_NOTHROW(check_train_options(zero3(8)));
}

TEST_CASE("ZeRO++ nodes: --gpus-per-node alone places the nodes; hpZ and qgZ groups stay inside one; TP counts",
          "[zero][zeropp][errors]") {
    TrainOptions o = zero3(8);
    o.gpus_per_node = 4;  // no link flags: where the nodes are, nothing emulated
    REQUIRE_NOTHROW(check_train_options(o));
    CHECK_FALSE(check_train_options(o).emulated_links);
    CHECK(ranks_per_node(o) == 4);
    o.hpz = 8;  // hpZ over the whole group of 8 is refused as before (K < N)
    REQUIRE_THROWS_WITH(check_train_options(o), Catch::Matchers::Contains("be smaller than it"));
    o.hpz = 2;
    REQUIRE_NOTHROW(check_train_options(o));
    o.hpz = 8;  // K divides the group of 8, but 8 ranks span two nodes of 4
    o.ranks = 16;
    REQUIRE_THROWS_WITH(check_train_options(o), Catch::Matchers::Contains("do not lie inside one node of 4"));
    o.tp = 2;  // dp_shard 8 x tp 2: a group of hpZ 4 is 4 x 2 = 8 ranks, two nodes of 4
    o.hpz = 4;
    REQUIRE_THROWS_WITH(check_train_options(o), Catch::Matchers::Contains("do not lie inside one node of 4"));
    o.hpz = 2;  // 2 members x tp 2 = 4 ranks: one node
    REQUIRE_NOTHROW(check_train_options(o));
    o.hpz = 0;
    o.qgz = true;  // qgZ's node: 4 per node / tp 2 = 2 members of the shard group of 8
    CHECK(qgz_node_size(o, check_train_options(o).mesh) == 2);
    o.gpus_per_node = 2;  // one member a node: qgZ's first hop is gone, the second crosses every node
    CHECK(qgz_node_size(o, check_train_options(o).mesh) == 1);
    o.gpus_per_node = 0;
    o.emulate = "h100x4-ib400";  // the preset's nodes of 4
    CHECK(ranks_per_node(o) == 4);
    CHECK(qgz_node_size(o, fill_dp(8, MeshShape{1, 1, 0, 1, 2})) == 2);
}

TEST_CASE("ZeRO++ in checkpoints: the manifest records the settings; resuming with or without them works and says so",
          "[zero][zeropp][checkpoint]") {
    namespace fs = std::filesystem;
    const std::string dir = std::string(SS_BINARY_DIR) + "/test_zeropp_ckpt";
    fs::remove_all(dir);
    TrainOptions a = zero3(4);
    a.hpz = 2;
    a.qwz = true;
    a.qgz = true;
    a.steps = 2;
    a.save_every = 2;
    a.checkpoint_dir = dir;
    train(a, nullptr);
    const nlohmann::json man = nlohmann::json::parse(test::file_bytes(dir + "/step-00000002/manifest.json"));
    CHECK(man.at("zeropp").at("hpz") == 2);
    CHECK(man.at("zeropp").at("qwz") == true);
    CHECK(man.at("zeropp").at("qgz") == true);
    CHECK(man.at("zeropp").at("qgz_bits") == 4);
    // ZeRO++ keeps no state: plain ZeRO-3 (and ZeRO-2) continue from it, and are told the steps change.
    for (int zero : {3, 2}) {
        TrainOptions b = zero3(4);
        b.zero = zero;
        b.steps = 3;
        b.resume = dir;
        std::ostringstream out;
        const TrainReport r = train(b, &out);
        INFO(out.str());
        CHECK(r.steps.size() == 1);
        CHECK(out.str().find("note: the checkpoint's steps were quantized (ZeRO++ qwZ/qgZ) and this run's are not") !=
              std::string::npos);
    }
    // The reverse: a plain checkpoint into a quantized run.
    fs::remove_all(dir);
    TrainOptions p = zero3(4);
    p.steps = 2;
    p.save_every = 2;
    p.checkpoint_dir = dir;
    train(p, nullptr);
    a.steps = 3;
    a.save_every = 0;
    a.checkpoint_dir.clear();
    a.resume = dir;
    std::ostringstream out;
    train(a, &out);
    CHECK(out.str().find("were not quantized (ZeRO++ qwZ/qgZ) and this run's are") != std::string::npos);
}
