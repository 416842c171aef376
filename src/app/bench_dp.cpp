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
// Rounds: the machine's load drifts over minutes, so each round runs every
// row once, in order, and a row's figure is the median over all rounds'
// measured steps; a slow spell then falls on all rows alike.
//
//   round 1: one rank, DDP naive 2, ..., ZeRO-3 4, pytorch 1, pytorch DDP 2
//   round 2: the same again ...
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
#include "core/output_path.h"
#include "train/train.h"

namespace ss::app {

namespace {

struct BenchDpFlags {
    ModelFlags model{"small"};
    int mbs = 8, seq = 0, steps = 10, warmup = 3, rounds = 3;
    std::vector<int> ranks = {2, 4};
    double bucket_mb = 1;
    bool no_torch = false;
    std::string json;
};

// One row of the table: an engine and strategy at a world size.
struct DpRow {
    enum class Engine { ours, torch_one, torch_ddp } engine = Engine::ours;
    std::string name;      // as printed
    int ranks = 1;
    int zero = 0;          // ZeRO stage (0: DDP)
    double bucket_mb = 0;  // DDP: 0 naive, else bucketed
    std::vector<double> step_ms;  // measured steps of every round
    std::vector<double> round_ms; // each round's median
    double median_ms() const { return median(step_ms); }
};

void run_bench_dp(const BenchDpFlags& f) {
    if (!f.json.empty()) check_writable_file("--json", f.json);  // found now, not after the runs
    TrainOptions base;
    base.model = f.model.resolve();
    base.T = f.seq;
    base.mbs = f.mbs;
    base.steps = f.warmup + f.steps;
    base.blas_threads = 1;
    base.quiet = true;
    for (int n : f.ranks) SS_CHECK(n >= 2, "--ranks " << n << ": bench dp compares N >= 2 ranks with one rank");
    SS_CHECK(f.steps >= 1, "--steps must be at least 1 (got " << f.steps << ")");
    SS_CHECK(f.rounds >= 1, "--rounds must be at least 1 (got " << f.rounds << ")");
    SS_CHECK(f.bucket_mb > 0, "--bucket-mb must be positive (got " << f.bucket_mb << "); naive DDP has its own row");
    const int cores = machine_cores();
    const int T = base.T > 0 ? base.T : base.model.maxT;
    const GPT2Config& m = base.model;

    // The rows, in the order each round measures them.
    using E = DpRow::Engine;
    char bucket_name[64];
    std::snprintf(bucket_name, sizeof bucket_name, "DDP bucketed (%g MiB)", f.bucket_mb);
    std::vector<DpRow> rows;
    rows.push_back({E::ours, "one rank", 1, 0, 0, {}, {}});
    for (int n : f.ranks) {
        rows.push_back({E::ours, "DDP naive (per tensor)", n, 0, 0, {}, {}});
        rows.push_back({E::ours, bucket_name, n, 0, f.bucket_mb, {}, {}});
        for (int z = 1; z <= 3; ++z) rows.push_back({E::ours, "ZeRO-" + std::to_string(z), n, z, 0, {}, {}});
    }
    if (!f.no_torch) {
        rows.push_back({E::torch_one, "pytorch 1 process", 1, 0, 0, {}, {}});
        rows.push_back({E::torch_ddp, "pytorch DDP gloo", 2, 0, 0, {}, {}});
    }

    std::printf("bench dp: data parallelism, %s (L=%d C=%d H=%d V=%d), T %d, fp32, threads backend\n", m.name.c_str(),
                m.L, m.C, m.H, m.V, T);
    std::printf("  weak scaling: MBS %d per rank, so GBS = %d x ranks sequences per step; 1 BLAS thread per rank\n",
                f.mbs, f.mbs);
    std::printf("  %s, each running every row once (%d warm-up + %s); median over all rounds' steps\n",
                count_of(f.rounds, "round").c_str(), f.warmup, count_of(f.steps, "measured step").c_str());
    std::printf("  speed-up = tokens/s over one rank's (pytorch: over one pytorch process), efficiency = speed-up / "
                "ranks\n");
    std::printf("  this machine has %d cores: rows with more ranks than cores oversubscribe them (ranks take turns)\n",
                cores);
    std::fflush(stdout);

    const std::string dir = SS_SOURCE_DIR "/bench/";
    const std::string torch_args = torch_model_args(m, T, f.mbs, f.steps, f.warmup, 1);
    std::string torch_version;
    bool torch_ok = !f.no_torch;
    std::string torch_why;  // why PyTorch was not measured, when it was not
    for (int round = 1; round <= f.rounds; ++round) {
        for (DpRow& row : rows) {
            std::vector<double> ms;
            if (row.engine == E::ours) {
                TrainOptions o = base;
                o.ranks = row.ranks;
                o.zero = row.zero;
                o.bucket_mb = row.bucket_mb;
                ms = measured_steps_ms(train(o, nullptr), f.warmup);
            } else if (torch_ok) {
                nlohmann::json j = row.engine == E::torch_one
                                       ? run_torch_script(dir + "torch_gpt2.py", torch_args, 1, &torch_why)
                                       : run_torch_script(dir + "torch_ddp.py", torch_args + " --world 2", 1,
                                                          &torch_why);
                if (!j.is_object()) {
                    torch_ok = false;
                    continue;
                }
                torch_version = j["torch"].get<std::string>();
                ms = j["step_ms"].get<std::vector<double>>();
            }
            row.step_ms.insert(row.step_ms.end(), ms.begin(), ms.end());
            row.round_ms.push_back(median(ms));
        }
        std::printf("  round %d/%d measured\n", round, f.rounds);
        std::fflush(stdout);
    }

    std::printf("%-24s %5s %11s %11s %9s %11s\n", "config", "ranks", "median ms", "tokens/s", "speed-up", "efficiency");
    nlohmann::json out = {{"model", m.name}, {"T", T}, {"mbs_per_rank", f.mbs}, {"cores", cores},
                          {"rounds", f.rounds}, {"scaling", "weak"}, {"rows", nlohmann::json::array()}};
    auto tokens_per_s = [&](const DpRow& r) { return double(f.mbs) * r.ranks * T / (r.median_ms() / 1000.0); };
    const double one_tps = tokens_per_s(rows[0]);
    double torch_one_tps = 0;
    for (const DpRow& r : rows) {
        if (r.step_ms.empty()) continue;  // pytorch missing
        const double tps = tokens_per_s(r);
        if (r.engine == E::torch_one) torch_one_tps = tps;
        const double speedup = tps / (r.engine == E::ours ? one_tps : torch_one_tps);
        const std::string name = r.engine == E::torch_one ? "pytorch " + torch_version + " 1 proc" : r.name;
        std::printf("%-24s %5d %11.2f %11.0f %8.2fx %10.0f%%%s\n", name.c_str(), r.ranks, r.median_ms(), tps, speedup,
                    100.0 * speedup / r.ranks, r.ranks > cores ? "  (oversubscribed)" : "");
        out["rows"].push_back({{"config", name}, {"ranks", r.ranks}, {"zero", r.zero}, {"bucket_mb", r.bucket_mb},
                               {"median_ms", r.median_ms()}, {"tokens_per_s", tps}, {"speedup", speedup},
                               {"efficiency", speedup / r.ranks}, {"round_median_ms", r.round_ms}});
    }

    // Our 2-rank DDP against PyTorch's, both 2 x MBS x T tokens per step, so the
    // tokens/s ratio is the inverse ratio of step times.
    const DpRow* torch_ddp = nullptr;
    for (const DpRow& r : rows)
        if (r.engine == E::torch_ddp && !r.step_ms.empty()) torch_ddp = &r;
    if (torch_ddp) {
        for (const DpRow& r : rows) {
            if (r.engine != E::ours || r.ranks != 2 || r.zero != 0) continue;
            std::printf("ratio %s 2 ranks / pytorch DDP 2 processes = %.2f  (target: >= 1.00; per round:",
                        r.name.c_str(), torch_ddp->median_ms() / r.median_ms());
            for (size_t i = 0; i < r.round_ms.size() && i < torch_ddp->round_ms.size(); ++i)
                std::printf(" %.2f", torch_ddp->round_ms[i] / r.round_ms[i]);
            std::printf(")\n");
            out["ratio_vs_pytorch_ddp"][r.bucket_mb > 0 ? "bucketed" : "naive"] =
                torch_ddp->median_ms() / r.median_ms();
        }
    } else if (!f.no_torch) {
        std::printf("pytorch: not measured (%s; needs torch with gloo for %s: apt-get install python3-torch)\n",
                    torch_why.c_str(), kBenchPython);
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
    add_bench_run_flags(*cmd, f->model, f->mbs, f->seq, f->steps, f->warmup, f->rounds, "row and round",
                        "Micro-batch size per rank (weak scaling: GBS = MBS x ranks)",
                        "Rounds; each runs every row once, so load changes fall on all rows");
    cmd->add_option("--ranks", f->ranks, "World sizes to measure")->delimiter(',')->capture_default_str();
    cmd->add_option("--bucket-mb", f->bucket_mb, "Bucket size of the bucketed DDP row, MiB")->capture_default_str();
    cmd->add_flag("--no-torch", f->no_torch, "Do not run PyTorch (bench/torch_gpt2.py, bench/torch_ddp.py)");
    cmd->add_option("--json", f->json, "Write the results here");
    limit_bench_flags(*cmd);
    cmd->callback([f]() { run_bench_dp(*f); });
}

}  // namespace ss::app
