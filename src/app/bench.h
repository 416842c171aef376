// bench.h — what the `shardscope bench` subcommands share (bench.cpp).
//
//   shardscope bench          one rank beside PyTorch                    bench.cpp
//   shardscope bench dp       DDP and ZeRO 1-3 on 2 and 4 ranks          bench_dp.cpp
//   shardscope bench trace    the cost of --trace                        bench_trace.cpp
//   shardscope bench comm     collectives, nccl-tests style              bench_comm.cpp
//   shardscope bench layouts  DP vs DP x (TP, SP) on 8 ranks, GBS beside  bench_layouts.cpp
//   shardscope bench calibrate  this machine for `plan --hw cpu-local`    bench_calibrate.cpp
//                             (also `shardscope bench --calibrate`)
//   shardscope bench plan     planner speed; predicted vs measured steps  bench_plan.cpp
//   shardscope bench validate the planner vs published cluster runs      bench_validate.cpp
//   shardscope bench pipeline PP 1 vs PP 2, 4 per schedule; the bubble    bench_pipeline.cpp
//   shardscope bench overlap  exposed communication on emulated links,   bench_overlap.cpp
//                             overlap on and off, beside the planner
//   shardscope bench kernels  elementwise kernels beside memcpy           bench_kernels.cpp
//   shardscope bench gpu      tokens/s and MFU on the GPU; N ranks on it  bench_gpu.cpp
//
// Every figure is taken after warm-up steps that are not counted, as the
// median step of rank 0 (a step ends with a loss all_reduce, so rank 0's
// clock waits for the slowest rank). Machines here are noisy: compare ratios
// measured side by side in one run, not numbers from different runs.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/model_flags.h"
#include "model/config.h"

namespace CLI {
class App;
}

namespace ss {
struct TrainReport;
}

namespace ss::app {

/// The python that has torch: Debian's python3-torch is installed for it.
inline const char* kBenchPython = "/usr/bin/python3";

/// The median of @p v (0 for an empty vector).
double median(std::vector<double> v);

/// Rank 0's step times (ms) of @p r, less the first @p warmup steps.
std::vector<double> measured_steps_ms(const TrainReport& r, int warmup);

/// The flags the PyTorch twins (bench/torch_*.py) share: model shape, batch, steps.
std::string torch_model_args(const GPT2Config& m, int T, int mbs, int steps, int warmup, int threads);

/// Runs `python SCRIPT ARGS` with OPENBLAS_NUM_THREADS=@p threads and returns
/// the JSON line it printed, or null when it failed (no script, no torch, no JSON);
/// then, when @p why is given, it says why: the script's last line on stderr
/// (e.g. "ModuleNotFoundError: No module named 'torch'") or its exit status.
nlohmann::json run_torch_script(const std::string& script, const std::string& args, int threads,
                                std::string* why = nullptr);

/// Cores this machine offers (std::thread::hardware_concurrency, at least 1).
int machine_cores();

/// The 1-, 5- and 15-minute load averages of /proc/loadavg ("3.40 5.47 6.11"; "?" where unreadable).
std::string load_average();

/// The cores this process had while `bench calibrate` ran ("cores_available" of the
/// calibration file @p path, rounded, at least 1), or 0 when the file or field is absent.
/// The planner reads only "cores"; bench layouts and bench plan predict with this too.
int calibrated_cores_available(const std::string& path);

/// The calibration the planner reads for `--hw cpu-local` (plan/hardware.h): @p path when a file is
/// there, else "defaults" (as for --calibration none). What the benches write as "calibration" in --json.
std::string calibration_used(const std::string& path);

/// @p n and its noun for a bench's printed line: "1 round", "3 rounds" (@p noun is the singular; an s is added).
std::string count_of(long long n, const std::string& noun);

/// What `bench calibrate` measures (bench_calibrate.cpp).
struct CalibrateOptions {
    GPT2Config model = model_preset("small");  ///< the model of the one-rank step (efficiency)
    int mbs = 8;                               ///< its micro-batch size
    int steps = 5;                             ///< measured steps (median)
    int warmup = 2;                            ///< warm-up steps, not measured
    int rounds = 3;                            ///< rounds of every measurement (peaks: best; the rest: median)
    std::string out = "out/calibration.json";  ///< where to write (what `plan --hw cpu-local` reads)
    bool show_comm = false;                    ///< also print bench comm's all_reduce table
};

/// Measures this machine for the planner's cpu-local preset, prints each field
/// and how it was measured, writes @p o.out and returns what it wrote.
nlohmann::json run_bench_calibrate(const CalibrateOptions& o);

/// Adds the flags of a measuring bench's runs: --model and its overrides (model_flags.h),
/// --mbs, --seq, --steps, --warmup, --rounds. @p each says what one measurement is
/// ("layout and round", "run", ...); @p mbs_help and @p rounds_help say what the batch and
/// a round mean for this bench.
void add_bench_run_flags(CLI::App& cmd, ModelFlags& model, int& mbs, int& seq, int& steps, int& warmup, int& rounds,
                         const std::string& each, const std::string& mbs_help, const std::string& rounds_help);

/// The ranges of the flags the bench commands share, on those of them that @p cmd
/// has: --mbs --seq --steps --rounds --search-runs --iters (at least 1), --warmup (at least 0),
/// --threads, --ranks, --zero, --pp, --pp-virtual, --bucket-mb, --comm-timeout (flag_range.h).
void limit_bench_flags(CLI::App& cmd);

/// Adds `gpu` under @p bench: training on the GPU, MFU, ranks sharing it (bench_gpu.cpp).
void add_bench_gpu_command(CLI::App& bench);
/// Adds `dp` under @p bench: DDP and ZeRO scaling beside PyTorch DDP (bench_dp.cpp).
void add_bench_dp_command(CLI::App& bench);
/// `bench overlap` (bench_overlap.cpp).
void add_bench_overlap_command(CLI::App& bench);
/// Adds `bench kernels` (bench_kernels.cpp): the elementwise kernels' GB/s beside memcpy's.
void add_bench_kernels_command(CLI::App& bench);
/// Adds `trace` under @p bench: step time with --trace off and on (bench_trace.cpp).
void add_bench_trace_command(CLI::App& bench);
/// Adds `layouts` under @p bench: DP N vs DP N/2 x (SP, TP) 2, ZeRO 0 and 3 (bench_layouts.cpp).
void add_bench_layouts_command(CLI::App& bench);
/// Adds `calibrate` under @p bench: writes out/calibration.json (bench_calibrate.cpp).
void add_bench_calibrate_command(CLI::App& bench);
/// Adds `plan` under @p bench: search time and predicted vs measured step times (bench_plan.cpp).
void add_bench_plan_command(CLI::App& bench);
/// Adds `validate` under @p bench: the planner beside published cluster measurements (bench_validate.cpp).
void add_bench_validate_command(CLI::App& bench);
/// Adds `pipeline` under @p bench: PP 1 beside PP 2 and 4 per schedule, the bubble (bench_pipeline.cpp).
void add_bench_pipeline_command(CLI::App& bench);

}  // namespace ss::app
