// test_sequence_parallel.cpp — Ulysses sequence parallelism, alone and with
// DP, ZeRO and TP, is the single-rank step; its all-to-alls carry activations
// in DeepSpeed-Ulysses' volumes; SP ranks do not count in the global batch.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>

#include "comm/trace/trace.h"
#include "model/safetensors.h"
#include "train/train.h"
#include "equivalence.h"
#include "model/sequence_split.h"

using namespace ss;

namespace {

std::string out_path(const std::string& name) { return test_file("test_sp_" + name); }

struct Layout {
    int ranks, sp, tp, zero;
    std::string mode = "ulysses";
    std::string split = "zigzag";  ///< ring only: --ring-split
};

void check_equals_one_rank(const Layout& l) {
    const int gbs = 8;
    TrainOptions one;
    one.model = model_preset("tiny");
    one.steps = 10;
    one.quiet = true;
    one.mbs = gbs;
    one.dump_grads = out_path("grads_one.safetensors");
    one.save = out_path("end_one.safetensors");
    TrainOptions par = one;
    par.ranks = l.ranks;
    par.sp = l.sp;
    par.tp = l.tp;
    par.zero = l.zero;
    par.sp_mode = parse_sp_mode(l.mode);
    par.ring_split = parse_ring_split(l.split);
    const int dp = l.ranks / (l.sp * l.tp);
    par.mbs = gbs / dp;  // sp and tp ranks share their samples
    par.dump_grads = out_path("grads_par.safetensors");
    par.save = out_path("end_par.safetensors");
    INFO("ranks " << l.ranks << " sp " << l.sp << " (" << l.mode << ", " << l.split << ") tp " << l.tp << " ZeRO-"
                  << l.zero << ", dp " << dp);
    // Each SP rank averages over its T/sp tokens and dp x sp averages those
    // means: the same sum in another order (tolerances in equivalence.h).
    require_same_training(par, one);
}

}  // namespace

TEST_CASE("Ulysses SP 2 and 4 equal one rank", "[sp]") {
    check_equals_one_rank({2, 2, 1, 0});
    check_equals_one_rank({4, 4, 1, 0});
}

TEST_CASE("Ulysses composes with DP, ZeRO and TP", "[sp][zero][tp]") {
    check_equals_one_rank({4, 2, 1, 2});  // dp 2 x sp 2 x ZeRO-2
    check_equals_one_rank({4, 2, 1, 3});  // dp 2 x sp 2 x ZeRO-3
    check_equals_one_rank({4, 2, 2, 0});  // sp 2 x tp 2
    check_equals_one_rank({8, 2, 2, 1});  // dp 2 x sp 2 x tp 2 x ZeRO-1
}

// Zig-zag (the default split): rank r holds chunks r and 2 SP - 1 - r, so its tokens, their
// positions and the causal mask of each chunk pair all differ from the contiguous run; the loss
// is a mean over the same tokens, so one rank's numbers still hold (tolerances in equivalence.h).
TEST_CASE("ring attention over 2 and 4 ranks, and with DP, ZeRO and TP, equals one rank", "[sp][ring]") {
    check_equals_one_rank({2, 2, 1, 0, "ring"});
    check_equals_one_rank({4, 4, 1, 0, "ring"});
    check_equals_one_rank({4, 2, 1, 3, "ring"});  // dp 2 x sp 2 x ZeRO-3
    check_equals_one_rank({4, 2, 2, 0, "ring"});  // sp 2 x tp 2
}

TEST_CASE("ring attention with the contiguous split equals one rank too", "[sp][ring]") {
    check_equals_one_rank({2, 2, 1, 0, "ring", "contiguous"});
    check_equals_one_rank({4, 4, 1, 0, "ring", "contiguous"});
}

TEST_CASE("ring attention sends keys and values round the ring; contiguous work is uneven, zig-zag's even",
          "[sp][ring][trace]") {
    for (const RingSplit split : {RingSplit::contiguous, RingSplit::zigzag}) {
        INFO("--ring-split " << ring_split_name(split));
        TrainOptions o;
        o.ring_split = split;
        o.model = model_preset("tiny");
        o.steps = 2;
        o.quiet = true;
        o.ranks = 4;
        o.sp = 4;
        o.sp_mode = SpMode::ring;
        o.mbs = 2;
        o.T = 32;
        o.trace = out_path("trace_ring.json");
        train(o, nullptr);
        Trace t = read_chrome_trace(o.trace);
        const uint64_t B = 2, Tl = 8, C = 64, L = 2, s = 4, f32 = 4, kv = B * Tl * 2 * C * f32;
        for (int rank = 0; rank < 4; ++rank) {
            std::map<std::string, uint64_t> got;
            int fwd_blocks = 0;
            for (const TraceEvent& e : t.events) {
                if (e.rank != rank) continue;
                if (e.kind == TraceEvent::Kind::collective && e.label.step == 2 && e.axis == "sp")
                    got[std::string(payload_name(e.label.payload)) + "/" + phase_name(e.label.phase) + "/" + e.name] +=
                        e.bytes;
                if (e.kind == TraceEvent::Kind::span && e.name == "ring block" && e.cat == "fwd") ++fwd_blocks;
            }
            INFO("rank " << rank);
            // Per block: forward passes each K,V block s-1 hops; backward again, and the
            // key/value gradients s-1 hops too (the others' part, summed on the way home).
            std::map<std::string, uint64_t> want = {{"act/fwd/send", L * (s - 1) * kv},
                                                    {"act/fwd/recv", L * (s - 1) * kv},
                                                    {"act/bwd/send", L * (s - 1) * kv},
                                                    {"act/bwd/recv", L * (s - 1) * kv},
                                                    {"act_grad/bwd/send", L * (s - 1) * kv},
                                                    {"act_grad/bwd/recv", L * (s - 1) * kv}};
            REQUIRE(got == want);
            if (split == RingSplit::contiguous) {
                // Causal: rank r computes r + 1 of the 4 blocks per layer, in each of 2 steps.
                REQUIRE(fwd_blocks == int(L) * (rank + 1) * 2);
            } else {
                // Zig-zag: every rank computes at all 4 ring steps per layer, each 2 Tc x Tc chunk blocks,
                // i.e. half a (T/sp)^2 block (ring_attention.h's table).
                REQUIRE(fwd_blocks == int(L) * int(s) * 2);
                for (const TraceEvent& e : t.events)
                    if (e.rank == rank && e.kind == TraceEvent::Kind::span && e.name == "ring block")
                        REQUIRE(e.args.at("work").get<double>() == 0.5);
            }
        }
    }
}

TEST_CASE("Ulysses moves activations with all-to-alls, in the paper's volumes", "[sp][trace]") {
    TrainOptions o;
    o.model = model_preset("tiny");
    o.steps = 2;
    o.quiet = true;
    o.ranks = 2;
    o.sp = 2;
    o.mbs = 2;
    o.T = 32;
    o.trace = out_path("trace.json");
    train(o, nullptr);
    Trace t = read_chrome_trace(o.trace);
    const uint64_t B = 2, Tl = 16, C = 64, L = 2, f32 = 4;
    std::map<std::string, uint64_t> got;
    for (const TraceEvent& e : t.events)
        if (e.kind == TraceEvent::Kind::collective && e.rank == 1 && e.label.step == 2 && e.axis == "sp")
            got[std::string(payload_name(e.label.payload)) + "/" + phase_name(e.label.phase) + "/" + e.name] += e.bytes;
    // Per block: q, k, v to heads and the output back (4 x B*T/sp*C, Jacobs et al.
    // 2023, section 3.2) in forward, and the same in backward.
    std::map<std::string, uint64_t> want = {{"act/fwd/all_to_all", L * 4 * B * Tl * C * f32},
                                            {"act_grad/bwd/all_to_all", L * 4 * B * Tl * C * f32}};
    REQUIRE(got == want);
}

TEST_CASE("the model-parallel collectives' buffers are booked in comm: ring, Ulysses, Megatron-SP", "[sp][memory]") {
    // Each expected size is counted here from the model's shape, not read from the code:
    //   ring:       the held block, the one coming in and their gradients, kept between
    //               layers: 4 x B (T/sp) 2C floats, live at the end of the step;
    //   Ulysses:    qkv's all_to_all, a send and a receive buffer of B (T/sp) 3C floats
    //               each while the call runs: the peak, none left at the end;
    //   Megatron-SP: the gathered sequence, B T C floats while its all_gather runs.
    TrainOptions o;
    o.model = model_preset("tiny");
    o.steps = 1;
    o.quiet = true;
    o.mbs = 2;
    const int64_t B = o.mbs, T = o.model.maxT, C = o.model.C, f32 = 4;
    o.ranks = 2;
    o.sp = 2;
    o.sp_mode = SpMode::ring;
    TrainReport ring = train(o, nullptr);
    CHECK(ring.live[int(Mem::comm)] == size_t(4 * B * (T / 2) * 2 * C * f32));
    o.sp_mode = SpMode::ulysses;
    TrainReport ulysses = train(o, nullptr);
    CHECK(ulysses.peak[int(Mem::comm)] == size_t(2 * B * (T / 2) * 3 * C * f32));
    CHECK(ulysses.live[int(Mem::comm)] == 0);
    o.sp = 1;
    o.tp = 2;
    o.sequence_parallel = true;
    TrainReport megatron_sp = train(o, nullptr);
    CHECK(megatron_sp.peak[int(Mem::comm)] == size_t(B * T * C * f32));
    CHECK(megatron_sp.live[int(Mem::comm)] == 0);
}

TEST_CASE("bad sequence-parallel layouts get clear errors", "[sp][errors]") {
    TrainOptions o;
    o.model = model_preset("tiny");  // H = 4, T = 64
    o.steps = 1;
    o.ranks = 3;
    o.sp = 3;
    REQUIRE_THROWS_WITH(train(o, nullptr), Catch::Contains("SP=3 does not divide the sequence length T=64"));
    o.ranks = 8;
    o.sp = 8;  // divides T = 64 but not the 4 heads
    REQUIRE_THROWS_WITH(train(o, nullptr), Catch::Contains("must divide the heads"));
    o.sp = 2;
    o.ranks = 2;
    // A name that is no mode is refused where it is read, as the command line reads it.
    REQUIRE_THROWS_WITH(parse_sp_mode("zigzag"), Catch::Contains("--sp-mode zigzag is not a mode; use ulysses"));
    REQUIRE_THROWS_WITH(parse_ring_split("headtail"),
                        Catch::Contains("--ring-split headtail is not a split; use zigzag"));
    // Zig-zag cuts T into 2 SP chunks: T = 36 splits over SP 4 (9 tokens each) but not into 8 chunks.
    o.sp_mode = SpMode::ring;
    o.ranks = 4;
    o.sp = 4;
    o.T = 36;
    REQUIRE_THROWS_WITH(train(o, nullptr), Catch::Contains("--ring-split zigzag cuts the sequence into 2 x SP = 8 "
                                                           "chunks, which does not divide T=36"));
    REQUIRE_THROWS_WITH(check_sequence_split(SpMode::ring, RingSplit::zigzag, 4, 36),  // what plan calls
                        Catch::Contains("choose T a multiple of 8, another SP, or --ring-split contiguous"));
    check_sequence_split(SpMode::ring, RingSplit::contiguous, 4, 36);  // contiguous needs SP | T only
    check_sequence_split(SpMode::ulysses, RingSplit::zigzag, 4, 36);   // Ulysses never splits zig-zag
}
