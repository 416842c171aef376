// test_train.cpp — the training loop learns, gradient accumulation is the
// same step as one big batch, a stop request ends a run between steps, and a
// nccl run goes as --overlap off.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <streambuf>

#include "core/check.h"
#include "equivalence.h"
#include "plan/hardware.h"
#include "train/plan_for_run.h"
#include "train/train.h"

using namespace ss;

TEST_CASE("50 steps of small on the built-in corpus bring the loss down", "[train]") {
    TrainOptions o;
    o.model = model_preset("small");
    o.mbs = 8;
    o.steps = 50;
    o.quiet = true;
    TrainReport r = train(o, nullptr);
    // Seen: 5.598 at step 1 (about ln 256 = 5.545, a uniform guess) and 2.92
    // at step 50. The margins allow other CPUs' BLAS rounding, not a broken step.
    INFO("loss at step 1: " << r.steps.front().loss << ", at step 50: " << r.steps.back().loss);
    REQUIRE(r.steps.front().loss > 5.3f);
    REQUIRE(r.steps.front().loss < 5.9f);
    REQUIRE(r.steps.back().loss < 3.3f);
}

TEST_CASE("a run is repeatable: same options, same losses, bit for bit", "[train]") {
    TrainOptions o;
    o.model = model_preset("tiny");
    o.mbs = 2;
    o.steps = 3;
    o.quiet = true;
    TrainReport a = train(o, nullptr), b = train(o, nullptr);
    for (int i = 0; i < 3; ++i) REQUIRE(a.steps[i].loss == b.steps[i].loss);
    o.seed = 99;
    TrainReport c = train(o, nullptr);
    REQUIRE(c.steps[0].loss != a.steps[0].loss);
}

TEST_CASE("GA micro-batches of MBS give the same step as one batch of MBS x GA", "[train]") {
    // The loader hands out consecutive windows, so GA=2 x MBS=2 reads the same
    // 4 sequences as GA=1 x MBS=4; with the 1/(MBS x T x GA) scaling the
    // gradients, hence the updated parameters and the next losses, agree up to
    // summation order (fp32: kLossTol, derived in equivalence.h).
    TrainOptions o;
    o.model = model_preset("tiny");
    o.steps = 4;
    o.quiet = true;
    o.mbs = 4;
    o.ga = 1;
    TrainReport one = train(o, nullptr);
    o.mbs = 2;
    o.ga = 2;
    TrainReport acc = train(o, nullptr);
    REQUIRE(acc.gbs == one.gbs);
    for (int i = 0; i < 4; ++i) REQUIRE(acc.steps[i].loss == Approx(one.steps[i].loss).margin(kLossTol));
}

TEST_CASE("a trace's prediction is for the run that ran, and one the planner cannot make does not fail the run",
          "[train][trace]") {
    // The planner is stricter than the engine here: an interleaved pipeline of unequal
    // chunks (--pp-split 2,1,1,1 over L = 5) trains, but the planner's interleaving keeps
    // its chunks equal.
    TrainOptions o;
    o.model.L = 5;
    o.ranks = 2;
    o.pp = 2;
    o.schedule = Schedule::interleaved;
    o.pp_virtual = 2;
    o.pp_split = {2, 1, 1, 1};
    o.ga = 2;
    o.steps = 2;
    o.quiet = true;
    o.trace = std::string(SS_BINARY_DIR) + "/test_train_uneven_pp.json";
    std::remove(o.trace.c_str());
    train(o, nullptr);
    nlohmann::json j = nlohmann::json::parse(std::ifstream(o.trace));
    const nlohmann::json& p = j["otherData"]["prediction"];
    INFO(p.dump());
    REQUIRE(p.contains("unavailable"));
    REQUIRE_THAT(p["unavailable"].get<std::string>(), Catch::Contains("--pp-split: the planner splits 1F1B and GPipe"));

    // A run the planner can model: its prediction is for the world that ran (PP 2 on L = 3:
    // uneven stages, 2 + 1 blocks, as the engine splits them).
    o.model.L = 3;
    o.schedule = Schedule::one_f_one_b;
    o.pp_virtual = 1;
    o.pp_split.clear();
    train(o, nullptr);
    j = nlohmann::json::parse(std::ifstream(o.trace));
    REQUIRE(j["otherData"]["prediction"]["cluster"]["gpus"] == 2);
}

namespace {

// train()'s output, which sets @p stop once the line of step @p after is printed:
// a stop requested from outside while the ranks are between steps, as the viewer's
// Stop button or closing window does (viz/app/live.cpp).
class StopAfterStep : public std::streambuf {
public:
    StopAfterStep(StopRequest& stop, int after) : stop_(stop) {
        char line[32];
        std::snprintf(line, sizeof line, "step %4d/", after);  // as train.cpp prints it
        line_ = line;
    }
    std::string text;  ///< what train() printed

protected:
    int overflow(int c) override {
        if (c != EOF) text.push_back(char(c));
        look();
        return c;
    }
    std::streamsize xsputn(const char* s, std::streamsize n) override {
        text.append(s, size_t(n));
        look();
        return n;
    }

private:
    void look() {
        if (text.find(line_) != std::string::npos) stop_.requested = true;
    }
    StopRequest& stop_;
    std::string line_;
};

}  // namespace

TEST_CASE("a stop request ends the run before the next step, on every rank, with rank 0's message", "[train][stop]") {
    // Rank 0 alone reads the request, so the ranks cannot stop at different steps; the
    // others stop at their next wait for another rank (threads_backend.h). Layouts with
    // each kind of wait: ZeRO-3's gathers, TP's activations, a pipeline's sends and receives.
    struct Layout {
        const char* name;
        int ranks, zero, tp, pp, ga;
    };
    for (const Layout& l : {Layout{"ZeRO-3 on 4", 4, 3, 1, 1, 1}, Layout{"TP 2 x ZeRO-1 DP 2", 4, 1, 2, 1, 1},
                            Layout{"PP 2, GA 2", 2, 0, 1, 2, 2}}) {
        INFO(l.name);
        TrainOptions o;
        o.model = model_preset("tiny");
        o.T = 16;
        o.mbs = 1;
        o.ranks = l.ranks;
        o.zero = l.zero;
        o.tp = l.tp;
        o.pp = l.pp;
        o.ga = l.ga;
        o.steps = 100000;  // far more than the test waits for: only the stop can end it in time
        o.trace = std::string(SS_BINARY_DIR) + "/test_train_stopped.json";
        std::filesystem::remove(o.trace);
        StopRequest stop;
        stop.by = "the test";
        StopAfterStep buf(stop, 2);
        std::ostream out(&buf);
        const auto t0 = std::chrono::steady_clock::now();
        std::string error;
        try {
            train(o, &out, &stop);
        } catch (const Error& e) {
            error = e.what();
        }
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        INFO(buf.text);
        // Rank 0 saw the request after printing step 2: its message, naming step 3, is the run's.
        REQUIRE(error == "rank 0: stopped by the test before step 3 of 100000; no trace, --json or --save file "
                         "is written");
        REQUIRE(buf.text.find("step    3/") == std::string::npos);
        REQUIRE_FALSE(std::filesystem::exists(o.trace));
        // Two tiny steps take well under a second; a rank left waiting would end only at the
        // comm timeout (60 s), and a run not stopped would take hours.
        REQUIRE(seconds < 30);
    }
}

TEST_CASE("a stop requested before train() starts ends it before step 1", "[train][stop]") {
    TrainOptions o;
    o.model = model_preset("tiny");
    o.T = 16;
    o.mbs = 1;
    o.ranks = 2;
    o.zero = 2;
    o.steps = 3;
    o.quiet = true;
    StopRequest stop;
    stop.requested = true;
    REQUIRE_THROWS_WITH(train(o, nullptr, &stop), Catch::Contains("rank 0: stopped by the caller before step 1 of 3"));
    // Without the request, or with none passed, the same run trains its 3 steps.
    stop.requested = false;
    REQUIRE(train(o, nullptr, &stop).steps.size() == 3);
}

TEST_CASE("with --backend nccl a run goes as --overlap off: the header says why, the planner hides nothing",
          "[train][overlap]") {
    // nccl runs each started call at once (Backend::start's default), so --overlap on (the
    // default) would hide nothing there; the run header printed "overlap: on" and the trace's
    // prediction hid communication under compute until an audit (2026-12-06).
    TrainOptions o;
    o.model = model_preset("tiny");
    o.ranks = 2;
    o.zero = 3;
    REQUIRE(o.overlap);  // the default
    auto header = [](const TrainOptions& opts) {
        TrainReport r;
        r.opts = opts;
        r.world = 2;
        std::ostringstream out;
        print_run_header(out, r);
        return out.str();
    };
    SECTION("threads: on, as asked") {
        REQUIRE(overlap_runs(o));
        REQUIRE(std::string(overlap_off_reason(o)).empty());
        REQUIRE_THAT(header(o), Catch::Contains("overlap: on, ZeRO-3 prefetch 1\n"));
        REQUIRE(plan_input_for(o, kNoCalibration).overlap);
    }
    SECTION("nccl: off, and why") {
        o.backend = BackendKind::nccl;
        REQUIRE(!overlap_runs(o));
        REQUIRE_THAT(header(o), Catch::Contains("overlap: off (nccl runs each started call at once"));
        REQUIRE_THAT(header(o), !Catch::Contains("prefetch"));
        REQUIRE(!plan_input_for(o, kNoCalibration).overlap);
        TrainReport r;
        r.opts = o;
        REQUIRE(r.to_json()["overlap"]["on"] == false);
        o.overlap = false;  // asked for: off, with no reason to give
        REQUIRE(std::string(overlap_off_reason(o)).empty());
        REQUIRE_THAT(header(o), Catch::Contains("overlap: off\n"));
    }
}
