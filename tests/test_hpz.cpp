// test_hpz.cpp — ZeRO++ hpZ (--hpz K, parallel/zero3.cpp) is ZeRO-3 with the
// backward's gathers kept inside groups of K: the same bits as --zero 3 (hpZ
// changes where parameters come from, not what is computed), forward gathers over
// the whole shard group and backward ones over K ranks in the trace, the secondary
// partition booked in the Ledger's hpz row, and clear errors for what cannot be.
// (Under mpirun: tests/test_zero_mpirun.cpp.)
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <tuple>

#include "comm/trace/trace.h"
#include "core/check.h"
#include "same_bits.h"
#include "tiny_zero3.h"
#include "train/train.h"

using namespace ss;

namespace {

std::string out_path(const std::string& name) { return std::string(SS_BINARY_DIR) + "/test_hpz_" + name; }

TrainOptions zero3(int ranks) { return test::tiny_zero3(ranks); }

// Runs @p o without and with --hpz @p k and requires the same bits (same_bits.h).
void require_zero3_bits(TrainOptions o, int k, const std::string& what) {
    TrainOptions h = o;
    h.hpz = k;
    test::require_same_bits(o, h, "test_hpz", what + " --hpz " + std::to_string(k));
}

}  // namespace

TEST_CASE("hpZ gives ZeRO-3's bits: fp32 and bf16, overlap on and off, prefetch, GA, SP, TP", "[zero][hpz]") {
    for (DType dt : {DType::f32, DType::bf16})
        for (bool overlap : {true, false}) {
            TrainOptions o = zero3(8);
            o.dtype = dt;
            o.overlap = overlap;
            require_zero3_bits(o, 4, std::string("8 ranks, ") + dtype_name(dt) + (overlap ? ", overlap" : ""));
        }
    TrainOptions o = zero3(4);
    o.ga = 2;
    o.prefetch = 2;
    require_zero3_bits(o, 2, "4 ranks, GA 2, prefetch 2");
    o = zero3(4);
    o.sp = 2;  // the shard group is dp_shard x sp = 4
    require_zero3_bits(o, 2, "DP 2 x SP 2 (Ulysses)");
    o = zero3(8);
    o.tp = 2;  // the shard group is the 4 ranks of dp
    require_zero3_bits(o, 2, "DP 4 x TP 2");
}

TEST_CASE("hpZ: forward gathers over the shard group, backward over K ranks; the secondary partition booked",
          "[zero][hpz][trace]") {
    TrainOptions o = zero3(8);
    o.hpz = 4;
    o.trace = out_path("trace.json");
    const TrainReport r = train(o, nullptr);
    const Trace t = read_chrome_trace(o.trace);
    // (axis, phase, group size) of rank 0's parameter gathers in step 2.
    std::map<std::tuple<std::string, std::string, size_t>, int> gathers;
    for (const TraceEvent& e : t.events)
        if (e.rank == 0 && e.kind == TraceEvent::Kind::collective && e.name == "all_gather" &&
            e.label.payload == Payload::param &&
            e.label.step == 2)
            ++gathers[{e.axis, phase_name(e.label.phase), e.group.size()}];
    const int units = int(model_preset("tiny").L) + 2;  // embeddings, blocks, ln_f
    INFO("rank 0's parameter gathers in step 2");
    CHECK(gathers[{"dp_shard", "fwd", 8}] == units);
    CHECK(gathers[{"hpz", "bwd", 4}] == units);
    CHECK(gathers.size() == 2);
    // Each rank keeps 1/K of every padded unit: N/K of its 1/N primary chunks, so the
    // secondary partition is N/K times the parameter shard (fp32: 4 bytes each).
    const size_t params = r.rank_peak[0][int(Mem::params)], secondary = r.rank_peak[0][int(Mem::hpz)];
    CHECK(params > 0);
    CHECK(secondary == params * 8 / 4);
    // Plain ZeRO-3 keeps none.
    o.hpz = 0;
    o.trace.clear();
    CHECK(train(o, nullptr).rank_peak[0][int(Mem::hpz)] == 0);
}

TEST_CASE("hpZ: --hpz without ZeRO-3, K that does not divide the shard group, or K < 2 are refused",
          "[zero][hpz][errors]") {
    TrainOptions o = zero3(8);
    o.zero = 2;
    o.hpz = 4;
    REQUIRE_THROWS_WITH(check_train_options(o), Catch::Matchers::Contains("give --zero 3 too"));
    o.zero = 3;
    o.hpz = 3;
    REQUIRE_THROWS_WITH(check_train_options(o), Catch::Matchers::Contains("must divide the ZeRO shard group of 8"));
    o.hpz = 8;
    REQUIRE_THROWS_WITH(check_train_options(o), Catch::Matchers::Contains("be smaller than it"));
    o.hpz = 1;
    REQUIRE_THROWS_WITH(check_train_options(o), Catch::Matchers::Contains("give K >= 2"));
    o = zero3(4);
    o.tp = 2;  // shard group of 2: no K fits
    o.hpz = 2;
    REQUIRE_THROWS_WITH(check_train_options(o), Catch::Matchers::Contains("ZeRO shard group of 2 ranks"));
}
