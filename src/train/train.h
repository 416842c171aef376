// train.h — the training loop: micro-batches, gradient accumulation, the
// optimizer step, timing, memory, and the GBS arithmetic.
//
// One optimizer step takes GA micro-batches of MBS sequences of T tokens on
// each of DP data-parallel replicas (Goyal et al. 2017 call MBS x DP the
// minibatch; gradient accumulation multiplies it by GA):
//
//   GBS = MBS x GA x DP        sequences per optimizer step
//   tokens per step = GBS x T
//
// The gradient of one step is the gradient of the mean loss over all GBS x T
// tokens: each micro-batch's backward is scaled by 1/(MBS x T x GA).
#pragma once

#include <atomic>
#include <iosfwd>
#include <string>

#include "train/options.h"  // TrainOptions: what a run is asked to do, and its checks
#include "train/report.h"   // TrainReport: what it did

namespace ss {

/// A request, from another thread of this process, to end a run before its
/// next step: the viewer's Stop button, its window closing, its headless time
/// limit (viz/app/live.cpp). Set `requested` at any time; train() reads it.
struct StopRequest {
    std::atomic<bool> requested{false};  ///< set by the caller; read by rank 0 before each step
    std::string by = "the caller";       ///< who asks, for the error ("stopped by the viewer ..."); set before train()
};

/// Runs a training job as @p opts says, printing progress to @p out (may be null).
/// Throws ss::Error for bad options or files.
///
/// With @p stop, rank 0 looks at `stop->requested` before each step and, once it
/// is set, throws "stopped by BY before step N of M". Only rank 0 decides, so the
/// ranks cannot disagree on the step: the others stop at their next wait for
/// another rank, as for any failed rank (run_threads, comm/threads/threads_backend.h),
/// and train() throws rank 0's message ("rank 0: stopped by ..."). A stopped run
/// writes no trace, --json or --save file (checkpoints already saved stay).
/// Under mpirun only world rank 0's flag counts.
TrainReport train(const TrainOptions& opts, std::ostream* out, const StopRequest* stop = nullptr);

}  // namespace ss
