// live.h — `shardscope-viz --live`: run the engine in this process and watch its trace.
//
// The Live panel picks a layout within what the engine supports (ranks, TP,
// ZeRO stage, shards and replicas, model, batch, steps) and presses Run. The
// run is an ordinary `train()` call (src/train/train.h) on the threads backend,
// made on a worker thread so the window keeps drawing; its per-step lines are
// shown as they come, and when it ends its trace is loaded into every panel.
//
//     UI thread:     [Run] --start()--> worker thread: train(opts, &log) --> out/live.json
//                    poll() each frame <-- done / error / log lines
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace ss::viz {

/// The layout the Live panel runs (a subset of TrainOptions).
struct LiveConfig {
    int model = 0;        ///< index into model_preset_names() (tiny)
    int ranks = 8;        ///< world size
    int tp = 1;           ///< tensor-parallel degree
    int zero = 3;         ///< ZeRO stage 0-3
    int dp_rep = 1;       ///< replicas (dp_shard takes the rest)
    int mbs = 2;          ///< micro-batch size
    int ga = 1;           ///< gradient accumulation
    int steps = 2;        ///< optimizer steps
    int dtype = 0;        ///< 0 fp32, 1 bf16
    float bucket_mb = 0;  ///< DDP (zero 0) bucket size; 0 = naive
};

/// A run in progress, or finished. Shared between the UI thread and the worker.
struct LiveRun {
    std::thread worker;
    std::atomic<bool> running{false};
    std::atomic<bool> finished{false};  ///< set by the worker at the end; cleared by poll
    std::mutex mu;
    std::string log;     ///< what train() printed so far (guarded by mu)
    std::string error;   ///< the run's error, if it failed (guarded by mu)
    std::string trace;   ///< the trace file it writes
    ~LiveRun();
};

/// The Live panel's state.
struct LiveUi {
    LiveConfig cfg;
    std::string out_dir = "out";       ///< where live traces go
    std::unique_ptr<LiveRun> run;      ///< the current or last run
    int runs = 0;                      ///< how many were started (names the trace files)
};

/// Starts a run of @p ui.cfg (no-op while one is running).
void live_start(LiveUi& ui);
/// True once when a run has just finished; then @p trace_path is its trace and
/// @p error its failure ("" on success).
bool live_poll(LiveUi& ui, std::string& trace_path, std::string& error);

}  // namespace ss::viz
