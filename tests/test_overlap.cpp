// test_overlap.cpp — --overlap on and off give the same bits, for every strategy,
// on threads (under mpirun: test_zero_mpirun.cpp): the same losses, the same step-1 gradients and
// the same final parameters, byte for byte (overlap moves when a call runs, not
// what it computes: reductions keep their order, comm/backend.h). And what
// overlap is for: with emulated links a started call hides under compute.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_run.h"
#include "same_bits.h"
#include "comm/trace/trace.h"
#include "comm/trace/trace_overlap.h"
#include "core/check.h"
#include "train/train.h"

using namespace ss;

namespace {

std::string out_path(const std::string& name) { return std::string(SS_BINARY_DIR) + "/test_overlap_" + name; }

// Runs @p o with overlap off and on and requires the same bits (same_bits.h).
void require_same_bits(TrainOptions o, const std::string& what) {
    TrainOptions on = o;
    o.overlap = false;
    on.overlap = true;
    test::require_same_bits(o, on, "test_overlap", what);
}

TrainOptions tiny(int ranks) {
    TrainOptions o;
    o.model = model_preset("tiny");
    o.ranks = ranks;
    o.mbs = 2;
    o.steps = 3;
    o.quiet = true;
    return o;
}

}  // namespace

TEST_CASE("overlap on and off: the same bits for DDP, naive and bucketed, fp32 and bf16", "[overlap]") {
    for (int ranks : {1, 2})  // one rank too: nothing to reduce, but the bf16 gradients are still stored
      for (DType dt : {DType::f32, DType::bf16})
        for (double bucket : {0.0, 0.05}) {
            TrainOptions o = tiny(ranks);
            o.dtype = dt;
            o.bucket_mb = bucket;
            o.ga = 2;
            require_same_bits(o, std::string("DDP ") + dtype_name(dt) + (bucket > 0 ? " bucketed" : " naive"));
        }
}

TEST_CASE("overlap on and off: the same bits for ZeRO 1, 2 and 3 (prefetch 0, 1, 2), with GA and replicas",
          "[overlap][zero]") {
    for (int stage = 1; stage <= 3; ++stage)
        for (DType dt : {DType::f32, DType::bf16}) {
            TrainOptions o = tiny(4);
            o.zero = stage;
            o.dtype = dt;
            o.ga = 2;
            require_same_bits(o, "ZeRO-" + std::to_string(stage) + " " + dtype_name(dt));
        }
    for (int prefetch : {0, 2}) {
        TrainOptions o = tiny(4);
        o.zero = 3;
        o.prefetch = prefetch;
        require_same_bits(o, "ZeRO-3 prefetch " + std::to_string(prefetch));
    }
    TrainOptions o = tiny(4);
    o.zero = 3;
    o.dp_shard = 2;  // HSDP: shard groups of 2, two replicas
    require_same_bits(o, "ZeRO-3 over dp_shard 2 x dp_rep 2");
}

TEST_CASE("replicas (HSDP): each unit's gradient all-reduce, started under the last backward, the same bits",
          "[overlap][zero][replicas]") {
    // Three replicas, so that the ring's order of additions matters (two add commutatively):
    // off and on make the same per-unit calls, so the bits agree. On, each unit's all_reduce
    // over dp_rep is started in backward (issued_us recorded, phase bwd); off, every one
    // blocks (ZeRO-2/3 at backward's end, phase bwd; ZeRO-1 in the step).
    for (int stage = 1; stage <= 3; ++stage)
        for (DType dt : {DType::f32, DType::bf16}) {
            TrainOptions o = tiny(6);
            o.zero = stage;
            o.dtype = dt;
            o.dp_shard = 2;
            o.ga = 2;
            o.steps = 2;
            const std::string what = "ZeRO-" + std::to_string(stage) + " " + dtype_name(dt) + " x 3 replicas";
            require_same_bits(o, what);
            if (dt == DType::bf16) continue;
            int calls[2] = {0, 0};
            for (int on = 0; on < 2; ++on) {
                o.overlap = on == 1;
                o.trace = out_path("replicas_trace.json");
                train(o, nullptr);
                int started = 0, blocking = 0, in_bwd = 0;
                for (const TraceEvent& e : read_chrome_trace(o.trace).events)
                    if (e.kind == TraceEvent::Kind::collective && e.axis == "dp_rep" && e.rank == 0) {
                        (e.issued_us >= 0 ? started : blocking) += 1;
                        in_bwd += e.label.phase == Phase::bwd;
                    }
                INFO(what << ", overlap " << on << ": started " << started << ", blocking " << blocking
                          << ", in backward " << in_bwd);
                // One call a unit and step (tiny's units: 4 or more), all started or all blocking.
                calls[on] = started + blocking;
                REQUIRE(calls[on] >= 4 * o.steps);
                REQUIRE(calls[on] % o.steps == 0);
                REQUIRE(started == (on ? calls[on] : 0));
                REQUIRE(in_bwd == (on || stage >= 2 ? calls[on] : 0));
            }
            REQUIRE(calls[0] == calls[1]);
        }
    // A pipeline of 3 (wte tied across its ends: its chunk waits for the step).
    TrainOptions o = tiny(12);
    o.model.L = 3;
    o.pp = 3;
    o.zero = 3;
    o.dp_shard = 2;
    o.ga = 3;
    o.mbs = 1;
    o.steps = 2;
    require_same_bits(o, "pp 3 x ZeRO-3 x 2 replicas, wte tied");
}

TEST_CASE("overlap on and off: the same bits with pipelines, TP and SP composed", "[overlap][pp]") {
    struct Layout {
        int pp, tp, sp, zero, ga, v;
        Schedule schedule;
        SpMode sp_mode;
        bool megatron_sp;
    };
    for (const Layout& l : {Layout{2, 1, 1, 0, 4, 1, Schedule::one_f_one_b, SpMode::ulysses, false},
                            Layout{2, 1, 1, 3, 2, 1, Schedule::gpipe, SpMode::ulysses, false},
                            Layout{2, 1, 1, 2, 4, 2, Schedule::interleaved, SpMode::ulysses, false},
                            Layout{1, 2, 1, 3, 1, 1, Schedule::one_f_one_b, SpMode::ulysses, true},
                            Layout{1, 1, 2, 3, 1, 1, Schedule::one_f_one_b, SpMode::ring, false},
                            Layout{1, 1, 2, 1, 1, 1, Schedule::one_f_one_b, SpMode::ulysses, false}}) {
        TrainOptions o = tiny(4);
        o.model.L = 4;
        o.pp = l.pp;
        o.tp = l.tp;
        o.sp = l.sp;
        o.zero = l.zero;
        o.ga = l.ga;
        o.pp_virtual = l.v;
        o.schedule = l.schedule;
        o.sp_mode = l.sp_mode;
        o.sequence_parallel = l.megatron_sp;
        require_same_bits(o, "pp " + std::to_string(l.pp) + " tp " + std::to_string(l.tp) + " sp " +
                                 std::to_string(l.sp) + " zero " + std::to_string(l.zero));
    }
}

TEST_CASE("emulated links: bucketed DDP hides its all-reduces under backward with overlap on, not off",
          "[overlap][links]") {
    // 2 ranks of `small`, MBS 4, 1 GB/s and 6 us, buckets of 0.25 MiB that start as
    // backward completes them (issue 16's benchmark row). Off, every bucket blocks
    // the rank where it is made: nothing hides. On, what hides is what the rest of
    // backward covers. Two ranks on a 2-core box finish backward at different
    // times, and the one that finishes first waits for the other in its last
    // all-reduce (that wait is exposed, as it would be on a cluster), so the test
    // takes the rank that waited least: the benchmark (`shardscope bench overlap`)
    // reports every rank.
    double best_hidden[2] = {0, 0};
    uint64_t async[2] = {0, 0};
    for (int on = 0; on < 2; ++on) {
        TrainOptions o = tiny(2);
        o.model = model_preset("small");
        o.mbs = 4;
        o.bucket_mb = 0.25;
        o.link = "1,6";
        o.overlap = on == 1;
        o.steps = 3;
        o.trace = out_path("links_trace.json");
        TrainReport r = train(o, nullptr);
        REQUIRE(r.to_json().at("emulated_links").get<std::string>().find("emulated links") != std::string::npos);
        for (const OverlapRow& row : overlap_by_step(read_chrome_trace(o.trace).events))
            if (row.step == kOverlapTotal) {
                best_hidden[on] = std::max(best_hidden[on], row.hidden_fraction());
                async[on] += row.async_calls;
            }
        INFO("overlap " << on << ": the best rank hid " << best_hidden[on]);
    }
    INFO("hidden: off " << best_hidden[0] << ", on " << best_hidden[1]);
    // Off: every call blocks the rank (structural: a blocking call is exposed whole).
    REQUIRE(async[0] == 0);
    REQUIRE(best_hidden[0] < 0.1);
    // On: the buckets start asynchronously (structural), and some of their time hides. How
    // much is a speed, which the benchmark measures (`bench overlap`): 0.95 with the machine to
    // itself, 0.46 with ctest -j2 running another suite beside it, and under 0.25 once with a
    // whole CI clone's suite running too (2026-12-06), when backward's compute, which covers
    // the calls, stalls. So the test asks only that it is more than off can hide.
    REQUIRE(async[1] > 0);
    REQUIRE(best_hidden[1] > 0.1);
}

TEST_CASE("a call's exposed time is the part of its run the rank waited in: at most its duration",
          "[overlap][trace]") {
    // ZeRO-3 on 4 ranks with prefetch 2: waits that begin before their call runs (queued
    // behind the gathers started before it), and wake-ups after it ends. The trace's
    // exposed_us is at most dur for every call (docs/trace-format.md), and each step's
    // exposed time at most its comm time. Until 2026-12-06 a wait's whole length was
    // counted: 69 of 232 calls read more than their duration.
    TrainOptions o = tiny(4);
    o.zero = 3;
    o.prefetch = 2;
    o.trace = out_path("exposed_trace.json");
    const TrainReport r = train(o, nullptr);
    const Trace t = read_chrome_trace(o.trace);
    int timed = 0;
    for (const TraceEvent& e : t.events)
        if (e.kind == TraceEvent::Kind::collective && e.exposed_us >= 0) {
            INFO(e.name << " on " << e.axis << ", rank " << e.rank << ": dur " << e.dur_us << ", exposed "
                        << e.exposed_us);
            REQUIRE(e.exposed_us <= e.dur_us);
            ++timed;
        }
    REQUIRE(timed > 0);
    // The run's own figures (rank 0): the waits are one after another and each lies inside
    // its call's run, so their sum is at most the union of the runs.
    const nlohmann::json report = r.to_json();  // (kept: a range-for over a temporary's member would dangle)
    for (const nlohmann::json& step : report.at("steps")) {
        INFO(step.dump());
        REQUIRE(step.at("exposed_comm_ms").get<double>() <= step.at("comm_ms").get<double>() + 1e-9);
    }
}

TEST_CASE("bad overlap and link flags are refused, naming the fix", "[overlap][errors]") {
    auto error_of = [](TrainOptions o) {
        try {
            train(o, nullptr);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("(no error)");
    };
    TrainOptions o = tiny(2);
    o.prefetch = -1;
    REQUIRE_THAT(error_of(o), Catch::Contains("--prefetch"));
    o = tiny(2);
    o.link = "0,6";
    REQUIRE_THAT(error_of(o), Catch::Contains("--link 0,6"));
    o = tiny(2);
    o.link = "abc";
    REQUIRE_THAT(error_of(o), Catch::Contains("--link"));
    o = tiny(4);
    o.link_intra = "100,2";
    o.link_inter = "10,5";
    o.gpus_per_node = 3;
    REQUIRE_THAT(error_of(o), Catch::Contains("4"));
    o = tiny(2);
    o.emulate = "nonsense";
    REQUIRE_THAT(error_of(o), Catch::Contains("h100x8-ib400"));
    CliResult r = run_shardscope("train --model tiny --ranks 2 --steps 1 --overlap maybe");
    REQUIRE(r.code != 0);
    REQUIRE_THAT(r.output, Catch::Contains("--overlap maybe is not a choice"));
}
