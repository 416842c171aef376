// bench_plan.cpp — `shardscope bench plan`: how fast the planner answers, and
// how close its step times come to the engine's on this machine.
//
//   shardscope bench plan                             search timing, then 8 layouts of small, 3 rounds
//   shardscope bench plan --model tiny --steps 2 --warmup 1 --rounds 1 --search-runs 1
//
// (a) The search: `shardscope plan --search --gpus 512 --model gpt3-6.7b --mbs 16
//     --max-gbs 1024` (h100, bf16), run in this process --search-runs times;
//     the median wall time of search() and its formatting (target < 1 s).
//
// (b) Predicted against measured: for each layout of the threads backend the
//     planner's step time for the same run (train/plan_for_run.h, `--hw cpu-local`
//     from --calibration, written by `bench calibrate`) beside the median
//     measured step:
//
//         error = (predicted - measured) / measured          (target: within 25%)
//
//     Layouts alternate in rounds as in `bench dp`, so a slow spell falls on
//     all of them. The load average is printed before and after: a step
//     measured under load is slower than the calibration taken under another.
//
// The planner gives each rank a core while ranks <= cores. On a shared machine
// this process gets fewer: `bench calibrate` measures how many (cores_available,
// a field the planner does not read), and the last two columns predict with
// hw.cores set to it, which separates the machine's load from the model's error.
//
// What the planner does not model here: it scales each rank's FLOP rate by
// cores / ranks when ranks outnumber the cores (hardware.h `cores`), but the
// threads backend's collectives are timed as if they had a core each, and the
// ring attention kernels and the TP/SP glue (slicing, copies) are loops that
// the matmul efficiency measured on one rank does not describe.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include "app/bench.h"
#include "app/flag_range.h"
#include "app/model_flags.h"
#include "core/atomic_file.h"
#include "core/check.h"
#include "core/output_path.h"
#include "train/plan_for_run.h"
#include "plan/models.h"
#include "plan/plan.h"
#include "plan/report.h"
#include "plan/search.h"
#include "train/train.h"

namespace ss::app {

namespace {

struct BenchPlanFlags {
    ModelFlags model{"small"};
    int mbs = 8, seq = 0, steps = 5, warmup = 2, rounds = 3, search_runs = 5;
    std::string calibration = "out/calibration.json";
    std::string json;
};

// One layout of the threads backend.
struct PlanRow {
    std::string name;
    int ranks = 1, tp = 1, sp = 1, zero = 0;
    SpMode sp_mode = SpMode::ulysses;
    std::vector<double> step_ms;  // measured steps of every round
    double predicted_ms = 0;
    double predicted_avail_ms = 0;  // with hw.cores = the cores the calibration found available
};

// (a) The planner's search for 512 GPUs, timed as the command runs it (search + the printed table).
nlohmann::json time_search(int runs) {
    SearchInput s;
    s.base.model = gpt3_model("gpt3-6.7b");
    s.base.gpus = 512;
    s.base.hw = hardware_preset("h100");
    s.base.mbs = 16;
    s.max_gbs = 1024;
    std::vector<double> ms;
    SearchStats stats;
    std::string best;
    for (int k = 0; k < runs; ++k) {
        auto t0 = std::chrono::steady_clock::now();
        std::vector<PlanResult> found = search(s, &stats);
        const std::string text = format_search(s, found, stats);
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        if (!found.empty()) best = found.front().layout_str();
    }
    std::printf("(a) plan --search --gpus 512 --model gpt3-6.7b --mbs 16 --max-gbs 1024 (h100, bf16), in-process, "
                "%s\n", count_of(runs, "run").c_str());
    std::printf("%-12s %12s %12s %14s   %s\n", "search", "median ms", "evaluated", "fitting", "fastest layout");
    std::printf("%-12s %12.1f %12lld %14lld   %s\n", "512 GPUs", median(ms), static_cast<long long>(stats.evaluated),
                static_cast<long long>(stats.fitting), best.c_str());
    std::printf("  target: < 1000 ms; each run's ms:");
    for (double x : ms) std::printf(" %.1f", x);
    std::printf("\n\n");
    std::fflush(stdout);
    return {{"median_ms", median(ms)}, {"run_ms", ms}, {"evaluated", stats.evaluated}, {"fitting", stats.fitting},
            {"fastest", best}};
}

void run_bench_plan(const BenchPlanFlags& f) {
    if (!f.json.empty()) check_writable_file("--json", f.json);  // found now, not after the runs
    SS_CHECK(f.steps >= 1, "--steps must be at least 1 (got " << f.steps << ")");
    SS_CHECK(f.rounds >= 1, "--rounds must be at least 1 (got " << f.rounds << ")");
    SS_CHECK(f.search_runs >= 1, "--search-runs must be at least 1 (got " << f.search_runs << ")");
    std::printf("bench plan: the planner's speed, and its step times against the engine's\n");
    std::printf("  load before: %s\n\n", load_average().c_str());
    nlohmann::json out = {{"search", time_search(f.search_runs)}};

    TrainOptions base;
    base.model = f.model.resolve();
    base.T = f.seq;
    base.mbs = f.mbs;
    base.steps = f.warmup + f.steps;
    base.blas_threads = 1;
    base.quiet = true;
    const GPT2Config& m = base.model;
    const int T = base.T > 0 ? base.T : m.maxT, cores = machine_cores();
    const Hardware hw = hardware_preset("cpu-local", f.calibration);

    std::vector<PlanRow> rows = {
        {"one rank", 1, 1, 1, 0, SpMode::ulysses, {}, 0},        {"DP 2", 2, 1, 1, 0, SpMode::ulysses, {}, 0},
        {"ZeRO-3 x 2", 2, 1, 1, 3, SpMode::ulysses, {}, 0},      {"TP 2", 2, 2, 1, 0, SpMode::ulysses, {}, 0},
        {"SP 2 (Ulysses)", 2, 1, 2, 0, SpMode::ulysses, {}, 0},  {"SP 2 (ring)", 2, 1, 2, 0, SpMode::ring, {}, 0},
        {"DP 2 x TP 2", 4, 2, 1, 0, SpMode::ulysses, {}, 0},     {"ZeRO-1 x 4", 4, 1, 1, 1, SpMode::ulysses, {}, 0},
    };
    auto options = [&](const PlanRow& r) {
        TrainOptions o = base;
        o.ranks = r.ranks;
        o.tp = r.tp;
        o.sp = r.sp;
        o.sp_mode = r.sp_mode;
        o.zero = r.zero;
        return o;
    };
    // The calibration's cores_available (what this process got while calibrating; the planner
    // itself reads only `cores`): a second prediction with it in place of the machine's cores.
    const int avail = calibrated_cores_available(f.calibration);
    for (PlanRow& r : rows) {
        PlanInput in = plan_input_for(options(r), f.calibration);
        r.predicted_ms = plan(in).time.step * 1000.0;
        in.hw.cores = avail;
        r.predicted_avail_ms = avail > 0 ? plan(in).time.step * 1000.0 : 0;
    }

    std::printf("(b) predicted against measured step time: %s (L=%d C=%d H=%d V=%d), T %d, MBS %d per rank, threads "
                "backend, 1 BLAS thread per rank\n", m.name.c_str(), m.L, m.C, m.H, m.V, T, f.mbs);
    // The calibration is said once, on its own line (the label would repeat "(defaults)" or "(calibrated)").
    std::printf("  hardware: %s, one thread per rank: %.1f GFLOP/s x efficiency %.2f, %s\n", hw.name.c_str(),
                hw.flops / 1e9, hw.efficiency, count_of(hw.cores, "core").c_str());
    std::printf("  calibration: %s\n", hw.source.c_str());
    std::printf("  %s, each running every layout once (%d warm-up + %s); median over all rounds' steps\n",
                count_of(f.rounds, "round").c_str(), f.warmup, count_of(f.steps, "measured step").c_str());
    if (avail > 0)
        std::printf("  cores = %d as the planner has them; the calibration found %d available to this process "
                    "(cores_available): the last two columns predict with that\n", hw.cores, avail);
    std::fflush(stdout);
    for (int round = 1; round <= f.rounds; ++round) {
        for (PlanRow& r : rows) {
            std::vector<double> ms = measured_steps_ms(train(options(r), nullptr), f.warmup);
            r.step_ms.insert(r.step_ms.end(), ms.begin(), ms.end());
        }
        std::printf("  round %d/%d measured\n", round, f.rounds);
        std::fflush(stdout);
    }

    std::printf("%-16s %5s %13s %12s %8s %12s %8s\n", "layout", "ranks", "predicted ms", "measured ms", "error",
                "pred @avail", "error");
    out["model"] = m.name;
    out["T"] = T;
    out["mbs_per_rank"] = f.mbs;
    out["cores"] = cores;
    out["calibration"] = calibration_used(f.calibration);  // the file read, or "defaults" (as layouts, overlap)
    out["calibration_source"] = hw.source;                  // what the planner says of it
    out["layouts"] = nlohmann::json::array();
    // Without a calibration's cores_available there is no second prediction: "-" in the table, null in the JSON.
    auto at_avail_json = [avail](double v) { return avail > 0 ? nlohmann::json(v) : nlohmann::json(nullptr); };
    int within = 0, within_avail = 0;
    for (const PlanRow& r : rows) {
        const double meas = median(r.step_ms), err = (r.predicted_ms - meas) / meas;
        const double err_avail = (r.predicted_avail_ms - meas) / meas;
        within += std::fabs(err) <= 0.25;
        within_avail += avail > 0 && std::fabs(err_avail) <= 0.25;
        char at_avail[64] = "           -        -";
        if (avail > 0)
            std::snprintf(at_avail, sizeof at_avail, "%12.1f %+7.0f%%", r.predicted_avail_ms, 100 * err_avail);
        std::printf("%-16s %5d %13.1f %12.1f %+7.0f%% %s%s\n", r.name.c_str(), r.ranks, r.predicted_ms, meas,
                    100 * err, at_avail, r.ranks > cores ? "  (oversubscribed)" : "");
        out["layouts"].push_back({{"layout", r.name}, {"ranks", r.ranks}, {"tp", r.tp}, {"sp", r.sp},
                                  {"sp_mode", sp_mode_name(r.sp_mode)}, {"zero", r.zero}, {"predicted_ms", r.predicted_ms},
                                  {"predicted_at_available_cores_ms", at_avail_json(r.predicted_avail_ms)},
                                  {"measured_ms", meas}, {"error", err}, {"step_ms", r.step_ms}});
    }
    std::printf("  load after: %s\n", load_average().c_str());
    std::printf("error = (predicted - measured) / measured; %d of %zu layouts within 25%%", within, rows.size());
    if (avail > 0) std::printf(" (%d with cores = %d available)", within_avail, avail);
    std::printf("\n");
    out["cores_available"] = avail > 0 ? nlohmann::json(avail) : nlohmann::json(nullptr);
    std::fflush(stdout);
    if (!f.json.empty()) write_json_file(f.json, out);
}

}  // namespace

void add_bench_plan_command(CLI::App& bench) {
    auto* cmd = bench.add_subcommand(
        "plan", "The planner: time of a 512-GPU --search, and predicted vs measured step time of threads-backend "
                "layouts (cpu-local)");
    auto f = std::make_shared<BenchPlanFlags>();
    add_bench_run_flags(*cmd, f->model, f->mbs, f->seq, f->steps, f->warmup, f->rounds, "layout and round",
                        "Micro-batch size per rank", "Rounds; each runs every layout once");
    cmd->add_option("--search-runs", f->search_runs, "Times the 512-GPU search runs (median)")->capture_default_str();
    cmd->add_option("--calibration", f->calibration,
                    "cpu-local calibration (bench calibrate); defaults if absent or none")
        ->capture_default_str();
    cmd->add_option("--json", f->json, "Write the results here");
    limit_bench_flags(*cmd);
    cmd->callback([f, cmd]() {
        require_given_calibration(*cmd, f->calibration);
        run_bench_plan(*f);
    });
}

}  // namespace ss::app
