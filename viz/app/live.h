// live.h — `shardscope-viz --live`: run the engine in this process, then look at its trace.
//
// The Live panel picks a layout within what the engine supports (ranks, TP,
// ZeRO stage, shards and replicas, model, batch, steps) and presses Run. The
// run is an ordinary `train()` call (src/train/train.h) on the threads backend,
// made on a worker thread so the window keeps drawing; its per-step lines are
// shown as they come, and when it ends its trace is loaded into every panel
// (the trace is written at the end of the run, not while it grows).
//
//     UI thread:     [Run] --start()--> worker thread: train(opts, &log, &stop) --> out/live-N.json
//                    poll() each frame <-- finished / error / log lines
//                    [Stop], ~LiveRun --> stop.requested: rank 0 ends the run before its next step
//
// A run's phase moves one way, running -> finished (the worker, after its last
// write) -> shown (live_poll, which hands the result over once). One variable,
// so no reader sees a run that is neither going nor done.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "train/train.h"

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

/// Where a live run is (see the top of this file).
enum class LivePhase {
    running,   ///< train() is going on the worker thread
    finished,  ///< the worker is done (log, error final); live_poll has not yet handed it over
    shown,     ///< live_poll has handed the trace or the error to the viewer
};

/// A run in progress, or finished. Shared between the UI thread and the worker.
struct LiveRun {
    std::thread worker;  ///< runs train()
    std::atomic<LivePhase> phase{LivePhase::running};  ///< set last by the worker, then by live_poll
    StopRequest stop;    ///< Stop, the window closing, the headless limit: train() ends before its next step
    std::mutex mu;
    std::string log;     ///< what train() printed so far (guarded by mu)
    std::string error;   ///< the run's error, if it failed (guarded by mu)
    std::string trace;   ///< the trace file it writes
    /// Requests a stop and waits for the worker: at most a step of the run, never its rest.
    ~LiveRun();
};

/// The Live panel's state.
struct LiveUi {
    LiveConfig cfg;
    std::string out_dir = "out";       ///< where live traces go
    std::unique_ptr<LiveRun> run;      ///< the current or last run
    int runs = 0;                      ///< the last N of live-N.json used (the next run takes the first free one above)
};

/// Starts a run of @p ui.cfg, its trace the first out_dir/live-N.json that does not
/// exist yet. A no-op while live_active().
void live_start(LiveUi& ui);
/// True from live_start() until live_poll() has handed the run's result over: the
/// run is going, or has ended and its trace or error is not yet shown.
bool live_active(const LiveUi& ui);
/// Asks the current run to stop before its next step (no-op without one); it then
/// finishes with the error "rank 0: stopped by the viewer before step N of M ...".
void live_stop(LiveUi& ui);
/// True once when a run has just finished; then @p trace_path is its trace and
/// @p error its failure ("" on success).
bool live_poll(LiveUi& ui, std::string& trace_path, std::string& error);

}  // namespace ss::viz
