// bench_trace.cpp — `shardscope bench trace`: what --trace costs a training step.
//
//   shardscope bench trace                   small, 4 ranks, naive DDP, 5 rounds of (off, on)
//   shardscope bench trace --model tiny --steps 2 --warmup 1 --rounds 1
//
// The same run twice, once without a tracer and once recording every span,
// collective and memory change (docs/trace-format.md), alternated round by
// round so that a slow spell of the machine falls on both sides:
//
//   round 1: off, on    round 2: off, on    ...
//
//   overhead = (median step with tracing - median step without) / median step without
//
// where each median is over the measured steps of all rounds. The trace is
// written after the last step, so writing the file is not in the steps; its
// size is shown. Beside the times, each run's minor page faults per step
// (getrusage, the whole process): a figure the machine's load does not move,
// which shows when tracing makes the ranks touch fresh memory. Naive DDP is the default because it makes the most
// collectives per step (one all_reduce per tensor), so the most events.
#include <algorithm>
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <sys/resource.h>

#include "app/bench.h"
#include "app/inert_flags.h"
#include "app/model_flags.h"
#include "core/atomic_file.h"
#include "core/check.h"
#include "train/run_files.h"
#include "train/train.h"

namespace ss::app {

namespace {

// Minor page faults of this process so far (first touches of fresh pages).
long minor_faults() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

struct BenchTraceFlags {
    ModelFlags model{"small"};
    int mbs = 8, seq = 0, steps = 10, warmup = 3, ranks = 4, rounds = 5, zero = 0;
    double bucket_mb = 0;
    std::string trace = "out/bench_trace.json";
    std::string json;
};

void run_bench_trace(const CLI::App& cmd, const BenchTraceFlags& f) {
    SS_CHECK(f.rounds >= 1, "--rounds must be at least 1 (got " << f.rounds << ")");
    SS_CHECK(f.steps >= 1, "--steps must be at least 1 (got " << f.steps << ")");
    TrainOptions o;
    o.model = f.model.resolve();
    o.T = f.seq;
    o.mbs = f.mbs;
    o.steps = f.warmup + f.steps;
    o.blas_threads = 1;
    o.quiet = true;
    o.ranks = f.ranks;
    o.zero = f.zero;
    o.bucket_mb = f.bucket_mb;
    // Before any run, as `train` checks them: a typed flag the run would not use (--bucket-mb with
    // --zero 3), and the outputs: each writable, and --json not over --trace (train/run_files.h).
    refuse_inert_flags(cmd, o);
    TrainOptions outputs = o;
    outputs.trace = f.trace;
    outputs.json = f.json;
    check_run_files(outputs);
    const int cores = machine_cores();
    const GPT2Config& m = o.model;
    const std::string strategy = f.zero > 0 ? "ZeRO-" + std::to_string(f.zero)
                                            : (f.bucket_mb > 0 ? "DDP bucketed" : "DDP naive (per tensor)");
    std::printf("bench trace: cost of --trace, %s (L=%d C=%d H=%d V=%d) on %s (threads backend, %s), "
                "MBS %d per rank, 1 BLAS thread per rank\n",
                m.name.c_str(), m.L, m.C, m.H, m.V, count_of(f.ranks, "rank").c_str(), strategy.c_str(), f.mbs);
    std::printf("  %s of (off, on), on first in every other round; %d warm-up + %s per run; trace written to %s\n",
                count_of(f.rounds, "round").c_str(), f.warmup, count_of(f.steps, "measured step").c_str(),
                f.trace.c_str());
    if (f.ranks > cores)
        std::printf("  this machine has %d cores: %d ranks oversubscribe them (ranks take turns)\n", cores, f.ranks);
    std::fflush(stdout);

    std::vector<double> off_all, on_all, off_runs, on_runs, off_faults, on_faults;
    for (int round = 0; round < f.rounds; ++round) {
        // Off first in even rounds, on first in odd ones: the first run of a process pays its
        // first touches of fresh pages (thousands of faults a step), and must not always be "off".
        const bool order[2][2] = {{false, true}, {true, false}};
        for (bool traced : order[round % 2]) {
            o.trace = traced ? f.trace : "";
            const long faults0 = minor_faults();
            std::vector<double> ms = measured_steps_ms(train(o, nullptr), f.warmup);
            (traced ? on_faults : off_faults).push_back(double(minor_faults() - faults0) / o.steps);
            (traced ? on_all : off_all).insert((traced ? on_all : off_all).end(), ms.begin(), ms.end());
            (traced ? on_runs : off_runs).push_back(median(ms));
        }
    }
    const double off = median(off_all), on = median(on_all), overhead = 100.0 * (on - off) / off;

    auto row = [](const char* name, double med, double faults, const std::vector<double>& runs) {
        std::printf("%-8s %11.2f %15.0f   ", name, med, faults);
        for (double r : runs) std::printf(" %.1f", r);
        std::printf("\n");
    };
    std::printf("%-8s %11s %15s   %s\n", "tracing", "median ms", "faults / step", "each run's median ms, in order");
    row("off", off, median(off_faults), off_runs);
    row("on", on, median(on_faults), on_runs);
    std::error_code ec;
    const auto bytes = std::filesystem::file_size(f.trace, ec);
    std::printf("overhead = (on - off) / off = %+.1f%%  (target: <= 3%%); trace file %.1f MiB\n", overhead,
                ec ? 0.0 : double(bytes) / 1048576.0);
    // Each round's pair, which the host's load moves together: their spread is the noise floor.
    std::vector<double> paired;
    for (size_t r = 0; r < off_runs.size(); ++r) paired.push_back(100.0 * (on_runs[r] - off_runs[r]) / off_runs[r]);
    std::printf("each round's (on - off) / off:");
    for (double p : paired) std::printf(" %+.1f%%", p);
    const auto [lo, hi] = std::minmax_element(paired.begin(), paired.end());
    if (paired.size() > 1 && *lo < 0 && *hi > 0)
        std::printf("  (of both signs: the overhead is within this run's noise)");
    std::printf("\n");
    std::fflush(stdout);
    if (!f.json.empty())
        write_json_file(f.json, {{"model", m.name}, {"ranks", f.ranks}, {"strategy", strategy}, {"rounds", f.rounds},
                                 {"off_median_ms", off}, {"on_median_ms", on}, {"overhead_percent", overhead},
                                 {"round_overhead_percent", paired},
                                 {"off_run_medians_ms", off_runs}, {"on_run_medians_ms", on_runs},
                                 {"off_minor_faults_per_step", off_faults}, {"on_minor_faults_per_step", on_faults}});
}

}  // namespace

void add_bench_trace_command(CLI::App& bench) {
    auto* cmd = bench.add_subcommand(
        "trace", "Cost of --trace: step time with tracing off and on, alternated, and the overhead in percent");
    auto f = std::make_shared<BenchTraceFlags>();
    add_bench_run_flags(*cmd, f->model, f->mbs, f->seq, f->steps, f->warmup, f->rounds, "run",
                        "Micro-batch size per rank", "Rounds of (off, on)");
    cmd->add_option("--ranks", f->ranks, "World size (threads backend)")->capture_default_str();
    cmd->add_option("--zero", f->zero, "ZeRO stage of the run (0: DDP)")->capture_default_str();
    cmd->add_option("--bucket-mb", f->bucket_mb, "DDP bucket size, MiB (0: naive)")->capture_default_str();
    cmd->add_option("--trace", f->trace, "Where the traced runs write their trace")->capture_default_str();
    cmd->add_option("--json", f->json, "Write the results here");
    limit_bench_flags(*cmd);
    cmd->callback([f, cmd]() { run_bench_trace(*cmd, *f); });
}

}  // namespace ss::app
