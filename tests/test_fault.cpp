// test_fault.cpp — injected faults (src/train/fault.h) on the threads backend:
// the spec parser's errors, and for each kind, `shardscope train` ends the
// whole run in bounded time, exits non-zero, and its message names the rank,
// the step, the collective and the group.
//
// The runs go through the command, as a user would, so "no rank is left
// running" is checked too: run_threads joins every rank thread before the
// process can exit, so a thread still blocked would show as a run that takes
// too long. (The same faults under mpirun: tests/CMakeLists.txt, mpi_fault_*.)
#include <catch2/catch.hpp>
#include <chrono>

#include "cli_run.h"
#include "core/check.h"
#include "train/fault.h"

using Catch::Matchers::Contains;

namespace {

struct Timed {
    CliResult r;
    double seconds = 0;
};

// Two ranks of ZeRO-3 (every step starts with the all-gather of unit 0), 4 steps.
Timed run_fault(const std::string& kind, double comm_timeout, const std::string& extra = "--ranks 2 --zero 3") {
    const auto t0 = std::chrono::steady_clock::now();
    Timed t;
    t.r = run_shardscope("train --model tiny --mbs 1 --seq 16 --steps 4 " + extra + " --comm-timeout " +
                         std::to_string(comm_timeout) + " --inject-fault rank=1,step=3,kind=" + kind);
    t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return t;
}

}  // namespace

TEST_CASE("parse_fault reads rank, step and kind, in any order", "[fault]") {
    ss::Fault f = ss::parse_fault("rank=1,step=3,kind=hang");
    REQUIRE(f.rank == 1);
    REQUIRE(f.step == 3);
    REQUIRE(f.kind == ss::FaultKind::hang);
    REQUIRE(ss::fault_str(f) == "rank=1,step=3,kind=hang");
    REQUIRE(ss::parse_fault("kind=throw,step=1,rank=0").kind == ss::FaultKind::throw_error);
    REQUIRE(ss::parse_fault("step=2,kind=exit,rank=7").rank == 7);
    REQUIRE(ss::fault_str(ss::Fault{}) == "none");
}

TEST_CASE("parse_fault names what is wrong with a bad spec", "[fault]") {
    auto error_of = [](const std::string& spec) {
        try {
            ss::parse_fault(spec);
        } catch (const ss::Error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    REQUIRE_THAT(error_of("rank=1,step=3"), Contains("missing kind"));
    REQUIRE_THAT(error_of("rank=1,step=3,kind=crash"), Contains("kind='crash' is not throw, hang or exit"));
    REQUIRE_THAT(error_of("rank=-1,step=3,kind=hang"), Contains("rank='-1' is not a non-negative integer"));
    REQUIRE_THAT(error_of("rank=1,step=x,kind=hang"), Contains("step='x' is not a non-negative integer"));
    REQUIRE_THAT(error_of("rank=1,step=99999999999,kind=hang"), Contains("is not a non-negative integer"));
    REQUIRE_THAT(error_of("rank=1,step=0,kind=hang"), Contains("step=0 does not exist"));
    REQUIRE_THAT(error_of("rank=1,rank=2,step=1,kind=hang"), Contains("rank is given twice"));
    REQUIRE_THAT(error_of("rank=1,step=1,kind=hang,when=now"), Contains("unknown key 'when'"));
    REQUIRE_THAT(error_of("rank 1"), Contains("'rank 1' is not key=value"));
    REQUIRE_THAT(error_of(""), Contains("expected rank=R,step=S,kind=throw|hang|exit"));
}

TEST_CASE("a fault that cannot happen in the run is an error before it starts", "[fault]") {
    CliResult r = run_shardscope("train --model tiny --steps 2 --ranks 2 --inject-fault rank=2,step=1,kind=throw");
    INFO(r.output);
    REQUIRE(r.code == 1);
    REQUIRE_THAT(r.output, Contains("rank 2 is outside the world of 2 ranks (0..1)"));
    r = run_shardscope("train --model tiny --steps 2 --inject-fault rank=0,step=3,kind=throw");
    INFO(r.output);
    REQUIRE(r.code == 1);
    REQUIRE_THAT(r.output, Contains("the run has only 2 steps, so the fault would never happen"));
    r = run_shardscope("train --model tiny --steps 2 --inject-fault rank=0,step=1,kind=boom");
    REQUIRE(r.code == 1);
    REQUIRE_THAT(r.output, Contains("shardscope: error: --inject-fault 'rank=0,step=1,kind=boom': kind='boom'"));
}

// Every kind: steps 1 and 2 complete, step 3 does not, and the message names
// the call rank 1 was about to make: ZeRO-3's all-gather of unit 0 (the
// embeddings) on the dp_shard group, in step 3.
TEST_CASE("kind=throw: the rank's error, naming the call, at once", "[fault]") {
    // A 60 s timeout that is never waited for: the others stop at once.
    Timed t = run_fault("throw", 60);
    INFO(t.r.output);
    REQUIRE(t.r.code == 1);
    REQUIRE_THAT(t.r.output, Contains("step    2/4"));
    REQUIRE_THAT(t.r.output, !Contains("step    3/4"));
    REQUIRE_THAT(t.r.output, Contains("shardscope: error: rank 1: injected fault: rank 1, step 3: throw at "
                                      "all_gather on dp_shard group [0,1] (param, step 3"));
    REQUIRE(t.seconds < 30);  // far below the 60 s timeout: nobody waited for it
}

TEST_CASE("kind=exit: the others see at once that the rank returned", "[fault]") {
    Timed t = run_fault("exit", 60);
    INFO(t.r.output);
    REQUIRE(t.r.code == 1);
    REQUIRE_THAT(t.r.output, Contains("step    2/4"));
    REQUIRE_THAT(t.r.output, !Contains("step    3/4"));
    REQUIRE_THAT(t.r.output, Contains("shardscope: error: rank 0: desync: all_gather on dp_shard group [0,1] (param, step 3"));
    REQUIRE_THAT(t.r.output, Contains("rank 1 did not arrive: it returned from its work without making this call"));
    REQUIRE(t.seconds < 30);
}

TEST_CASE("kind=hang: the others time out after --comm-timeout and name the rank", "[fault]") {
    Timed t = run_fault("hang", 2);
    INFO(t.r.output);
    REQUIRE(t.r.code == 1);
    REQUIRE_THAT(t.r.output, Contains("step    2/4"));
    REQUIRE_THAT(t.r.output, Contains("shardscope: error: rank 0: desync: all_gather on dp_shard group [0,1] (param, step 3"));
    REQUIRE_THAT(t.r.output, Contains("rank 1 did not arrive within 2 s; rank 1 is not waiting in any collective"));
    // The timeout, plus start-up and two steps of a tiny model; the stalled
    // thread was woken and joined (else the process would not have exited).
    REQUIRE(t.seconds >= 2);
    REQUIRE(t.seconds < 20);
}

TEST_CASE("a fault on a pipeline names the point-to-point call", "[fault]") {
    // Rank 1 is the last stage: its first call of a step is the recv of the
    // first micro-batch's activations from rank 0.
    Timed t = run_fault("throw", 60, "--ranks 2 --pp 2 --ga 2");
    INFO(t.r.output);
    REQUIRE(t.r.code == 1);
    REQUIRE_THAT(t.r.output, Contains("rank 1: injected fault: rank 1, step 3: throw at recv on pp group [0,1] (act, step 3"));
}
