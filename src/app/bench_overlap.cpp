// bench_overlap.cpp — `shardscope bench overlap`: how much communication hides
// under compute, measured on emulated links beside what the planner predicts.
//
//   shardscope bench overlap                          small, MBS 4, --link 1,6, 2 and 4 ranks
//   shardscope bench overlap --model tiny --steps 2 --warmup 1 --ranks 2 --no-cost
//
// (a) For each world size N in --ranks, on the threads backend with emulated
//     links (--link, src/comm/links.h), overlap on and off:
//
//       DDP (bucketed, --bucket-mb)   ZeRO-1   ZeRO-2   ZeRO-3 --prefetch 0, 1, 2
//       PP 2 (1F1B, GA 4; DP N/2)
//
//     measured: rank 0's median step, and its communication (comm_ms: the
//     union of its calls' run times, from start to finish, so a call that waits
//     for a slower peer counts the wait) and exposed time (exposed_comm_ms:
//     blocked in a call or a wait) from the same steps; predicted: the
//     planner's step for the same run and links (train/plan_for_run.h,
//     plan/overlap.h), the alpha-beta time of its calls, and what of the step is
//     neither compute nor the optimizer (the planner's exposed time).
//     error = (predicted - measured) / measured step, target within 15%.
//
//     The planner's compute rate is fitted in the same run: before each world
//     size's rows, DDP on N ranks without emulated links (its traffic is a
//     memcpy) is measured, and the cpu-local FLOP rate is scaled so that the
//     planner's step for that run equals the measured one. On a shared machine
//     the calibration file's rate is a different minute's; fitted, the rows
//     test what this bench is about, the communication and its overlap. The
//     calibration's own prediction is in the JSON (predicted_calibrated_ms).
//
// (b) The cost of the machinery without emulated links: DDP on 2 ranks with
//     --overlap off and no trace against --overlap on (progress threads) with
//     --trace, alternating in rounds; target <= 3% of a step.
//
// Emulated links are never measured links: every table says so. The planner
// predicts with the cores the calibration found available (bench_plan.cpp).
#include <CLI/CLI.hpp>
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
#include "plan/plan.h"
#include "train/plan_for_run.h"
#include "train/train.h"

namespace ss::app {

namespace {

struct BenchOverlapFlags {
    ModelFlags model{"small"};
    int mbs = 4, seq = 0, steps = 4, warmup = 2, rounds = 1, cost_rounds = 3;
    std::vector<int> ranks = {2, 4};
    std::string link = "1,6";
    double bucket_mb = 0.25;
    bool no_cost = false;
    std::string calibration = "out/calibration.json";
    std::string json;
};

// One strategy of the table.
struct Strategy {
    std::string name;
    int zero = 0, prefetch = 1, pp = 1, ga = 1;
};

// What one run (all rounds) gave.
struct Measured {
    std::vector<double> step_ms, comm_ms, exposed_ms;
    EmulatedLinks links;
};

// Median of a report's steps after warm-up, for one of its per-step figures.
template <class F>
void add_steps(std::vector<double>& to, const TrainReport& r, int warmup, F figure) {
    for (size_t i = size_t(std::max(warmup, 0)); i < r.steps.size(); ++i) to.push_back(figure(r.steps[i]));
}

void run_bench_overlap(const BenchOverlapFlags& f) {
    if (!f.json.empty()) check_writable_file("--json", f.json);  // found now, not after the runs
    SS_CHECK(!f.ranks.empty(), "--ranks: give at least one world size, e.g. --ranks 2,4");
    for (int n : f.ranks)
        SS_CHECK(n >= 2 && n % 2 == 0 && n <= 8, "--ranks " << n << ": give even world sizes from 2 to 8 (PP 2 "
                                                            "takes two ranks of each)");
    TrainOptions base;
    base.model = f.model.resolve();
    base.T = f.seq;
    base.mbs = f.mbs;
    base.steps = f.warmup + f.steps;
    base.blas_threads = 1;
    base.quiet = true;
    base.bucket_mb = f.bucket_mb;
    base.link = f.link;
    const GPT2Config& m = base.model;
    const int T = base.T > 0 ? base.T : m.maxT;
    const int avail = calibrated_cores_available(f.calibration);

    // The links, checked before the first line (as train's every row would find them bad only
    // after the reference run): the same parse the runs make.
    make_emulated_links(f.link, "", "", 0, "", 2, 1.0);

    const std::vector<Strategy> strategies = {
        {"DDP (bucketed)", 0, 1, 1, 1}, {"ZeRO-1", 1, 1, 1, 1},          {"ZeRO-2", 2, 1, 1, 1},
        {"ZeRO-3 prefetch 0", 3, 0, 1, 1}, {"ZeRO-3 prefetch 1", 3, 1, 1, 1}, {"ZeRO-3 prefetch 2", 3, 2, 1, 1},
        {"PP 2 (1F1B, GA 4)", 0, 1, 2, 4},
    };
    auto options = [&](const Strategy& s, int n, bool overlap) {
        TrainOptions o = base;
        o.ranks = n;
        o.zero = s.zero;
        o.prefetch = s.prefetch;
        o.pp = s.pp;
        o.ga = s.ga;
        o.overlap = overlap;
        return o;
    };

    std::printf("bench overlap: %s (L=%d C=%d H=%d V=%d), T %d, fp32, MBS %d per rank, threads backend, 1 BLAS "
                "thread per rank, DDP buckets %.2f MiB\n", m.name.c_str(), m.L, m.C, m.H, m.V, T, f.mbs, f.bucket_mb);
    std::printf("  EMULATED links (not measured): --link %s on every group (src/comm/links.h); each collective "
                "takes at least its alpha-beta time\n", f.link.c_str());
    std::printf("  measured: rank 0's median step over %s of %d warm-up + %s; comm = its calls' time, exposed = "
                "blocked in a call or wait\n", count_of(f.rounds, "round").c_str(), f.warmup,
                count_of(f.steps, "step").c_str());
    std::printf("  predicted: `plan --hw cpu-local --link %s` for the same run, its compute rate fitted per world "
                "size (below); exposed = step - compute - optimizer\n", f.link.c_str());
    std::printf("  calibration: %s", hardware_preset("cpu-local", f.calibration).source.c_str());
    if (avail > 0) std::printf("; cores = %d, as many as were available while calibrating", avail);
    std::printf("\n");
    std::printf("  load before: %s\n", load_average().c_str());
    std::fflush(stdout);

    nlohmann::json out = {{"model", m.name}, {"T", T}, {"mbs_per_rank", f.mbs}, {"link", f.link},
                          {"emulated", true}, {"bucket_mb", f.bucket_mb},
                          {"calibration", calibration_used(f.calibration)},
                          {"planner_cores", avail > 0 ? nlohmann::json(avail) : nlohmann::json(nullptr)},
                          {"rows", nlohmann::json::array()}};
    int rows = 0, within = 0;
    for (int n : f.ranks) {
        // The compute rate of this world size, fitted to a run without emulated links.
        TrainOptions ref = options(strategies[0], n, false);
        ref.link.clear();
        std::vector<double> ref_ms;
        for (int round = 0; round < f.rounds; ++round) {
            const std::vector<double> ms = measured_steps_ms(train(ref, nullptr), f.warmup);
            ref_ms.insert(ref_ms.end(), ms.begin(), ms.end());
        }
        PlanInput ref_in = plan_input_for(ref, f.calibration);
        if (avail > 0) ref_in.hw.cores = avail;
        const double ref_pred = plan(ref_in).time.step * 1e3, fit = ref_pred / median(ref_ms);
        std::printf("\n%d ranks: DDP without emulated links %.1f ms measured, %.1f ms predicted: the planner's "
                    "compute rate x %.2f below\n", n, median(ref_ms), ref_pred, fit);
        std::printf("%-20s %5s %7s | %9s %9s %8s %8s | %9s %8s %8s %7s\n", "strategy", "ranks", "overlap",
                    "step ms", "flight ms", "exposed", "% hidden", "pred ms", "comm ms", "exposed", "error");
        for (const Strategy& s : strategies) {
            for (bool overlap : {false, true}) {
                Measured me;
                for (int round = 0; round < f.rounds; ++round) {
                    const TrainReport rep = train(options(s, n, overlap), nullptr);
                    add_steps(me.step_ms, rep, f.warmup, [](const StepStats& st) { return st.ms; });
                    add_steps(me.comm_ms, rep, f.warmup, [](const StepStats& st) { return st.comm_ms; });
                    add_steps(me.exposed_ms, rep, f.warmup, [](const StepStats& st) { return st.exposed_comm_ms; });
                    me.links = rep.links;
                }
                PlanInput in = plan_input_for(options(s, n, overlap), f.calibration, me.links);
                if (avail > 0) in.hw.cores = avail;
                const double calibrated_ms = plan(in).time.step * 1e3;
                in.hw.flops *= fit;
                const PlanResult p = plan(in);
                const TimePlan& t = p.time;
                double pred_comm = 0;
                for (const CommCall& c : p.comm)
                    if (c.op != "recv") pred_comm += c.seconds;
                const double v = 1;  // 1F1B: one chunk per stage
                const double compute = (p.gbs.ga + (p.mesh.pp - 1) / v) * t.t_compute_mb;
                const double pred_ms = t.step * 1e3, pred_exposed = (t.step - t.optimizer - compute) * 1e3;
                const double step = median(me.step_ms), comm = median(me.comm_ms), exposed = median(me.exposed_ms);
                const double hidden = comm > 0 ? 100 * (1 - exposed / comm) : 0;
                const double err = (pred_ms - step) / step;
                ++rows;
                within += std::fabs(err) <= 0.15;
                std::printf("%-20s %5d %7s | %9.1f %9.1f %8.1f %7.0f%% | %9.1f %8.1f %8.1f %+6.0f%%\n",
                            s.name.c_str(), n, overlap ? "on" : "off", step, comm, exposed, std::max(0.0, hidden),
                            pred_ms, pred_comm * 1e3, pred_exposed, 100 * err);
                std::fflush(stdout);
                out["rows"].push_back({{"strategy", s.name}, {"ranks", n}, {"zero", s.zero}, {"prefetch", s.prefetch},
                                       {"pp", s.pp}, {"ga", s.ga}, {"overlap", overlap}, {"step_ms", step},
                                       {"comm_ms", comm}, {"exposed_comm_ms", exposed}, {"hidden_percent", hidden},
                                       {"predicted_step_ms", pred_ms}, {"predicted_comm_ms", pred_comm * 1e3},
                                       {"predicted_exposed_ms", pred_exposed}, {"error", err},
                                       {"predicted_calibrated_ms", calibrated_ms}, {"compute_fit", fit},
                                       {"steps_ms", me.step_ms}});
            }
        }
    }
    std::printf("  load after: %s\n", load_average().c_str());
    std::printf("EMULATED links. flight = the union of rank 0's calls from start to finish; %% hidden = 1 - "
                "exposed / flight; error = (predicted - measured) / measured "
                "step: %d of %d rows within 15%%\n", within, rows);
    std::fflush(stdout);
    out["within_15_percent"] = within;

    if (!f.no_cost) {
        // (b) Progress threads and tracing, no emulated links: DDP on 2 ranks, alternating.
        TrainOptions plain = options(strategies[0], 2, false);
        plain.link.clear();
        TrainOptions full = plain;
        full.overlap = true;
        full.trace = "out/bench_overlap_trace.json";
        std::vector<double> off_ms, on_ms;
        for (int round = 0; round < f.cost_rounds; ++round) {
            const std::vector<double> a = measured_steps_ms(train(plain, nullptr), f.warmup);
            const std::vector<double> b = measured_steps_ms(train(full, nullptr), f.warmup);
            off_ms.insert(off_ms.end(), a.begin(), a.end());
            on_ms.insert(on_ms.end(), b.begin(), b.end());
        }
        const double off = median(off_ms), on = median(on_ms), cost = (on - off) / off;
        std::printf("\n(b) the machinery's cost, no emulated links: DDP, 2 ranks, %s alternating\n",
                    count_of(f.cost_rounds, "round").c_str());
        std::printf("  --overlap off, no trace   %8.1f ms\n", off);
        std::printf("  --overlap on,  --trace    %8.1f ms   %+.1f%% (target <= 3%%)\n", on, 100 * cost);
        out["cost"] = {{"off_no_trace_ms", off}, {"on_traced_ms", on}, {"cost", cost}, {"off_steps_ms", off_ms},
                       {"on_steps_ms", on_ms}};
    }
    if (!f.json.empty()) write_json_file(f.json, out);
}

}  // namespace

void add_bench_overlap_command(CLI::App& bench) {
    auto* cmd = bench.add_subcommand(
        "overlap", "DDP, ZeRO-1/2/3 (prefetch 0, 1, 2) and PP 1F1B on emulated links, overlap on and off: "
                   "step, communication and exposed time measured beside the planner's prediction");
    auto f = std::make_shared<BenchOverlapFlags>();
    add_bench_run_flags(*cmd, f->model, f->mbs, f->seq, f->steps, f->warmup, f->rounds, "run",
                        "Micro-batch size per rank", "Runs of each row (their steps pooled)");
    cmd->add_option("--ranks", f->ranks, "World sizes (even, 2 to 8)")->delimiter(',')->capture_default_str();
    cmd->add_option("--link", f->link, "The emulated link of every group, GBPS[,US]")->capture_default_str();
    cmd->add_option("--bucket-mb", f->bucket_mb, "DDP gradient bucket, MiB")->capture_default_str();
    cmd->add_flag("--no-cost", f->no_cost, "Skip (b), the cost of progress threads and tracing");
    cmd->add_option("--cost-rounds", f->cost_rounds, "(b): rounds of the two runs")->capture_default_str();
    cmd->add_option("--calibration", f->calibration,
                    "The planner's cpu-local calibration (bench calibrate); none: the defaults")
        ->capture_default_str();
    cmd->add_option("--json", f->json, "Write the results here");
    limit_bench_flags(*cmd);
    cmd->callback([f, cmd]() {
        require_given_calibration(*cmd, f->calibration);
        run_bench_overlap(*f);
    });
}

}  // namespace ss::app
