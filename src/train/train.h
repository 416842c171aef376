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

#include <iosfwd>

#include "train/options.h"  // TrainOptions: what a run is asked to do, and its checks
#include "train/report.h"   // TrainReport: what it did

namespace ss {

/// Runs a training job as @p opts says, printing progress to @p out (may be null).
/// Throws ss::Error for bad options or files.
TrainReport train(const TrainOptions& opts, std::ostream* out);

}  // namespace ss
