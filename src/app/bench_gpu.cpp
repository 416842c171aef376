// bench_gpu.cpp — `shardscope bench gpu`: training on the GPU.
//
//   shardscope bench gpu                        gpt2 (124M), B=16, T=1024, bf16, one rank; then 4 ranks on the GPU
//   shardscope bench gpu --model tiny --mbs 4 --seq 64 --steps 3 --ranks 2
//
// Two figures, each measured in this run:
//   1. one rank: tokens/s and MFU, the model's matmul FLOPs per second
//      (Narayanan et al. 2021, eq. 3; no recompute) over the GPU's bf16 peak
//      (--peak-tflops: the datasheet's dense figure by default, or what
//      tools/gpu_bench measured, which scripts/gpu-check passes in);
//   2. --ranks N threads data-parallel on the same GPU with the same global
//      batch (MBS / N each): tokens/s against the one rank, which shows what
//      the collectives and the shared GPU cost.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <memory>

#include "app/bench.h"
#include "app/flag_range.h"
#include "app/model_flags.h"
#include "core/atomic_file.h"
#include "core/check.h"
#include "core/device.h"
#include "core/output_path.h"
#include "plan/time.h"
#include "train/train.h"

namespace ss::app {

namespace {

struct GpuBenchFlags {
    ModelFlags model{"gpt2"};
    int mbs = 16, seq = 1024, steps = 10, warmup = 3, ranks = 4;
    std::string dtype = "bf16";
    double peak_tflops = 989.4;  // H100/H200 SXM dense bf16, NVIDIA datasheet
    std::string json;
};

struct GpuRun {
    double ms = 0, tokens_per_s = 0, loss = 0;
};

GpuRun run_on_gpu(const GpuBenchFlags& f, int ranks) {
    TrainOptions o;
    o.model = f.model.resolve();
    o.T = f.seq;
    o.mbs = f.mbs / ranks;
    o.ranks = ranks;
    o.steps = f.warmup + f.steps;
    o.dtype = parse_dtype(f.dtype);
    o.device = "cuda";
    o.quiet = true;
    TrainReport r = train(o, nullptr);
    GpuRun run;
    run.ms = median(measured_steps_ms(r, f.warmup));
    run.tokens_per_s = double(f.mbs) * r.T / (run.ms / 1000.0);
    run.loss = r.steps.empty() ? 0.0 : r.steps.back().loss;
    return run;
}

void run_bench_gpu(const GpuBenchFlags& f) {
    if (!f.json.empty()) check_writable_file("--json", f.json);  // found now, not after the runs
    require_cuda();
    SS_CHECK(f.ranks >= 1 && f.mbs % f.ranks == 0,
             "--ranks " << f.ranks << " must divide --mbs " << f.mbs << " (the same global batch is split over them)");
    const GPT2Config m = f.model.resolve();
    std::cout << "bench gpu: " << m.name << " (L=" << m.L << " C=" << m.C << " H=" << m.H << " V=" << m.V << "), B="
              << f.mbs << " T=" << f.seq << ", " << f.dtype << ", on " << cuda_device_name(0) << "; " << f.warmup
              << " warm-up + " << count_of(f.steps, "measured step") << ", median\n";
    const GpuRun one = run_on_gpu(f, 1);
    const double Vp = padded_vocab(m.V, 1, m.vocab_divisible_by);  // the head's rows on one GPU
    const double flops_per_step = narayanan_flops(f.mbs, f.seq, m.L, m.C, Vp, Recompute::none);
    const double achieved = flops_per_step / (one.ms / 1000.0);
    const double mfu = achieved / (f.peak_tflops * 1e12);
    std::printf("%-28s %10s %12s %10s\n", "run", "median ms", "tokens/s", "MFU");
    std::printf("%-28s %10.1f %12.0f %9.1f%%\n", "1 rank", one.ms, one.tokens_per_s, 100 * mfu);
    nlohmann::json out = {{"model", m.name},     {"B", f.mbs},
                          {"T", f.seq},          {"dtype", f.dtype},
                          {"gpu", cuda_device_name(0)},
                          {"peak_tflops", f.peak_tflops},
                          {"one_rank", {{"median_ms", one.ms}, {"tokens_per_s", one.tokens_per_s},
                                        {"tflops", achieved / 1e12}, {"mfu", mfu}}}};
    if (f.ranks > 1) {
        const GpuRun many = run_on_gpu(f, f.ranks);
        char label[64];
        std::snprintf(label, sizeof label, "%d ranks on 1 GPU (DP, MBS %d)", f.ranks, f.mbs / f.ranks);
        std::printf("%-28s %10.1f %12.0f %10s\n", label, many.ms, many.tokens_per_s, "");
        std::printf("ratio %d ranks / 1 rank = %.2f (the same global batch; < 1 is what the collectives and the "
                    "shared GPU cost)\n", f.ranks, many.tokens_per_s / one.tokens_per_s);
        out["ranks"] = {{"n", f.ranks}, {"median_ms", many.ms}, {"tokens_per_s", many.tokens_per_s},
                        {"ratio", many.tokens_per_s / one.tokens_per_s}};
    }
    std::printf("MFU = %.3g FLOPs per step (Narayanan et al. 2021, eq. 3) / step time / %.1f TFLOP/s peak\n",
                flops_per_step, f.peak_tflops);
    std::cout << std::flush;
    if (!f.json.empty()) write_json_file(f.json, out);
}

}  // namespace

void add_bench_gpu_command(CLI::App& bench) {
    auto* cmd = bench.add_subcommand("gpu", "Training on the GPU: tokens/s and MFU of one rank, then N ranks on it");
    auto f = std::make_shared<GpuBenchFlags>();
    add_model_flags(*cmd, f->model);
    cmd->add_option("--mbs", f->mbs, "Global batch B (sequences per step)")->capture_default_str();
    cmd->add_option("--seq", f->seq, "Sequence length T")->capture_default_str();
    cmd->add_option("--steps", f->steps, "Measured steps")->capture_default_str();
    cmd->add_option("--warmup", f->warmup, "Warm-up steps (not measured)")->capture_default_str();
    cmd->add_option("--ranks", f->ranks, "Ranks sharing the GPU in the second run (1: skip it)")->capture_default_str();
    cmd->add_option("--dtype", f->dtype, "fp32, or bf16 (bf16 tensor-core matmuls)")->capture_default_str();
    cmd->add_option("--peak-tflops", f->peak_tflops, "The GPU's bf16 peak for MFU (default: H100/H200 datasheet)")
        ->capture_default_str();
    cmd->add_option("--json", f->json, "Write the results here");
    limit_bench_flags(*cmd);
    limit(*cmd, "--peak-tflops", above(0));
    cmd->callback([f]() { run_bench_gpu(*f); });
}

}  // namespace ss::app
