// bench_dp.cpp — `shardscope bench dp`: how data parallelism scales here,
// beside PyTorch DDP.
//
//   shardscope bench dp                                  small, 2 and 4 ranks, vs PyTorch DDP (gloo, 2 processes)
//   shardscope bench dp --model tiny --steps 2 --warmup 1 --no-torch
//
// Weak scaling: every rank keeps MBS sequences per step, so a world of N
// ranks trains on GBS = MBS x N per step (train.h). Per configuration:
//
//   tokens/s    = GBS x T / median step
//   speed-up    = tokens/s (N ranks) / tokens/s (one rank)
//   efficiency  = speed-up / N          (100%: N ranks did N times the work in the same time)
//
// The ranks are threads of this process (threads backend), one BLAS thread
// each. A rank per core is the most this can give: on a machine with fewer
// cores than ranks the ranks take turns, and efficiency is bound by cores / N.
//
// PyTorch's row runs bench/torch_ddp.py: torch.distributed with gloo, one
// process per rank, the same GPT2 class as bench/torch_gpt2.py, the same
// weak-scaling batch. Its speed-up is against bench/torch_gpt2.py on one
// process. The ratio line compares our 2-rank DDP with PyTorch's.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "app/bench.h"
#include "app/model_flags.h"
#include "core/atomic_file.h"
#include "core/check.h"
#include "train/train.h"

namespace ss::app {

namespace {

struct BenchDpFlags {
    ModelFlags model{"small"};
    int mbs = 8, seq = 0, steps = 20, warmup = 3;
    std::vector<int> ranks = {2, 4};
    double bucket_mb = 1;
    bool no_torch = false;
    std::string json;
};

// One row of the table: a strategy at a world size.
struct DpConfig {
    std::string name;  // as printed
    int zero = 0;      // ZeRO stage (0: DDP)
    double bucket_mb = 0;  // DDP: 0 naive, else bucketed
};

struct DpRow {
    std::string name;
    int ranks = 1;
    double median_ms = 0, tokens_per_s = 0, speedup = 0;
};

void print_header() {
    std::printf("%-24s %5s %11s %11s %9s %11s\n", "config", "ranks", "median ms", "tokens/s", "speed-up", "efficiency");
}

void print_row(const DpRow& r, int cores) {
    std::printf("%-24s %5d %11.2f %11.0f %8.2fx %10.0f%%%s\n", r.name.c_str(), r.ranks, r.median_ms, r.tokens_per_s,
                r.speedup, 100.0 * r.speedup / r.ranks, r.ranks > cores ? "  (oversubscribed)" : "");
    std::fflush(stdout);
}

void run_bench_dp(const BenchDpFlags& f) {
    TrainOptions base;
    base.model = f.model.resolve();
    base.T = f.seq;
    base.mbs = f.mbs;
    base.steps = f.warmup + f.steps;
    base.blas_threads = 1;
    base.quiet = true;
    for (int n : f.ranks) SS_CHECK(n >= 2, "--ranks " << n << ": bench dp compares N >= 2 ranks with one rank");
    SS_CHECK(f.steps >= 1, "--steps must be at least 1 (got " << f.steps << ")");
    SS_CHECK(f.bucket_mb > 0, "--bucket-mb must be positive (got " << f.bucket_mb << "); naive DDP has its own row");
    const int cores = machine_cores();
    const int T = base.T > 0 ? base.T : base.model.maxT;
    char bucket_name[64];
    std::snprintf(bucket_name, sizeof bucket_name, "DDP bucketed (%g MiB)", f.bucket_mb);
    const std::vector<DpConfig> configs = {{"DDP naive (per tensor)", 0, 0}, {bucket_name, 0, f.bucket_mb},
                                           {"ZeRO-1", 1, 0}, {"ZeRO-2", 2, 0}, {"ZeRO-3", 3, 0}};

    const GPT2Config& m = base.model;
    std::printf("bench dp: data parallelism, %s (L=%d C=%d H=%d V=%d), T %d, fp32, threads backend\n", m.name.c_str(),
                m.L, m.C, m.H, m.V, T);
    std::printf("  weak scaling: MBS %d per rank, so GBS = %d x ranks sequences per step; 1 BLAS thread per rank\n",
                f.mbs, f.mbs);
    std::printf("  %d warm-up + %d measured steps per row, median step; speed-up = tokens/s over one rank's, "
                "efficiency = speed-up / ranks\n", f.warmup, f.steps);
    std::printf("  this machine has %d cores: rows with more ranks than cores oversubscribe them (ranks take turns)\n",
                cores);
    print_header();

    nlohmann::json out = {{"model", m.name}, {"T", T}, {"mbs_per_rank", f.mbs}, {"cores", cores},
                          {"scaling", "weak"}, {"rows", nlohmann::json::array()}};
    auto measure = [&](const std::string& name, int ranks, int zero, double bucket_mb, double one_tps) {
        TrainOptions o = base;
        o.ranks = ranks;
        o.zero = zero;
        o.bucket_mb = bucket_mb;
        TrainReport r = train(o, nullptr);
        DpRow row{name, ranks, median(measured_steps_ms(r, f.warmup)), 0, 0};
        row.tokens_per_s = double(r.gbs) * r.T / (row.median_ms / 1000.0);
        row.speedup = one_tps > 0 ? row.tokens_per_s / one_tps : 1.0;
        print_row(row, cores);
        out["rows"].push_back({{"config", name}, {"ranks", ranks}, {"zero", zero}, {"bucket_mb", bucket_mb},
                               {"median_ms", row.median_ms}, {"tokens_per_s", row.tokens_per_s},
                               {"speedup", row.speedup}, {"efficiency", row.speedup / ranks}});
        return row;
    };

    const DpRow one = measure("one rank", 1, 0, 0, 0);
    DpRow ddp2_naive, ddp2_bucketed;
    for (int n : f.ranks)
        for (const DpConfig& c : configs) {
            DpRow row = measure(c.name, n, c.zero, c.bucket_mb, one.tokens_per_s);
            if (n == 2 && c.zero == 0) (c.bucket_mb > 0 ? ddp2_bucketed : ddp2_naive) = row;
        }

    if (!f.no_torch) {
        const std::string dir = SS_SOURCE_DIR "/bench/";
        nlohmann::json t1 = run_torch_script(dir + "torch_gpt2.py", torch_model_args(m, T, f.mbs, f.steps, f.warmup, 1), 1);
        nlohmann::json t2 = run_torch_script(
            dir + "torch_ddp.py", torch_model_args(m, T, f.mbs, f.steps, f.warmup, 1) + " --world 2", 1);
        if (t1.is_object() && t2.is_object()) {
            const std::string v = t1["torch"].get<std::string>();
            const double tps1 = t1["tokens_per_s"].get<double>(), tps2 = t2["tokens_per_s"].get<double>();
            print_row({"pytorch " + v + " 1 proc", 1, t1["median_ms"].get<double>(), tps1, 1.0}, cores);
            print_row({"pytorch DDP gloo", 2, t2["median_ms"].get<double>(), tps2, tps2 / tps1}, cores);
            out["pytorch"] = {{"one_process", t1}, {"ddp_gloo_2", t2}};
            if (ddp2_naive.median_ms > 0) {
                std::printf("ratio shardscope 2-rank DDP / pytorch DDP 2 processes (tokens/s): naive %.2f, bucketed "
                            "%.2f  (target: >= 1.00)\n",
                            ddp2_naive.tokens_per_s / tps2, ddp2_bucketed.tokens_per_s / tps2);
                out["ratio_ddp2_vs_pytorch"] = {{"naive", ddp2_naive.tokens_per_s / tps2},
                                                {"bucketed", ddp2_bucketed.tokens_per_s / tps2}};
            }
        } else {
            std::printf("pytorch: not measured (needs torch with gloo for %s: apt-get install python3-torch)\n",
                        kBenchPython);
        }
    }
    std::fflush(stdout);
    if (!f.json.empty()) write_json_file(f.json, out);
}

}  // namespace

void add_bench_dp_command(CLI::App& bench) {
    auto* cmd = bench.add_subcommand(
        "dp", "Data parallelism: DDP (naive, bucketed), ZeRO-1/2/3 on N ranks vs one rank (weak scaling), "
              "beside PyTorch DDP (gloo, 2 processes)");
    auto f = std::make_shared<BenchDpFlags>();
    add_model_flags(*cmd, f->model);
    cmd->add_option("--mbs", f->mbs, "Micro-batch size per rank (weak scaling: GBS = MBS x ranks)")
        ->capture_default_str();
    cmd->add_option("--seq", f->seq, "Sequence length (default: the model's maxT)");
    cmd->add_option("--steps", f->steps, "Measured steps per row")->capture_default_str();
    cmd->add_option("--warmup", f->warmup, "Warm-up steps per row (not measured)")->capture_default_str();
    cmd->add_option("--ranks", f->ranks, "World sizes to measure")->delimiter(',')->capture_default_str();
    cmd->add_option("--bucket-mb", f->bucket_mb, "Bucket size of the bucketed DDP row, MiB")->capture_default_str();
    cmd->add_flag("--no-torch", f->no_torch, "Do not run PyTorch (bench/torch_gpt2.py, bench/torch_ddp.py)");
    cmd->add_option("--json", f->json, "Write the results here");
    cmd->callback([f]() { run_bench_dp(*f); });
}

}  // namespace ss::app
