// bench.h — what the `shardscope bench` subcommands share (bench.cpp).
//
//   shardscope bench          one rank beside PyTorch                    bench.cpp
//   shardscope bench dp       DDP and ZeRO 1-3 on 2 and 4 ranks          bench_dp.cpp
//   shardscope bench trace    the cost of --trace                        bench_trace.cpp
//   shardscope bench comm     collectives, nccl-tests style              bench_comm.cpp
//
// Every figure is taken after warm-up steps that are not counted, as the
// median step of rank 0 (a step ends with a loss all_reduce, so rank 0's
// clock waits for the slowest rank). Machines here are noisy: compare ratios
// measured side by side in one run, not numbers from different runs.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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
/// the JSON line it printed, or null when it failed (no torch, no JSON).
nlohmann::json run_torch_script(const std::string& script, const std::string& args, int threads);

/// Cores this machine offers (std::thread::hardware_concurrency, at least 1).
int machine_cores();

/// Adds `dp` under @p bench: DDP and ZeRO scaling beside PyTorch DDP (bench_dp.cpp).
void add_bench_dp_command(CLI::App& bench);
/// Adds `trace` under @p bench: step time with --trace off and on (bench_trace.cpp).
void add_bench_trace_command(CLI::App& bench);

}  // namespace ss::app
