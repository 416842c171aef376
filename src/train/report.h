// report.h — what a training run tells: the per-step numbers, the run's
// header (model, ranks, the GBS arithmetic), the memory table, the --json
// summary and what a --trace file carries beside the events.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/ledger.h"
#include "kernels/profile.h"
#include "train/options.h"

namespace ss {

/// One optimizer step as measured.
struct StepStats {
    int step = 0;             ///< 1-based step number
    float loss = 0.0f;        ///< mean loss over the step's GBS x T tokens
    double ms = 0.0;          ///< wall time of the step
    double tokens_per_s = 0.0;  ///< GBS x T / wall time
    double comm_ms = 0.0;     ///< rank 0: the union of its calls' run times (calls in flight together count once)
    double exposed_comm_ms = 0.0;  ///< rank 0: time blocked in blocking calls and waits, not computing
    kern::KernelTimes kernels;     ///< rank 0, with TrainOptions::profile: time in each kernel this step
};

/// What a run did.
struct TrainReport {
    TrainOptions opts;        ///< the options it ran with
    EmulatedLinks links;      ///< the emulated links it ran over (off: none; comm/links.h)
    int T = 0;                ///< sequence length used (opts.T, or the model's maxT)
    int world = 1;            ///< ranks
    int dp = 1;               ///< data-parallel degree DP = dp_shard x dp_rep
    int dp_shard = 1;         ///< ranks of one ZeRO shard group
    int dp_rep = 1;           ///< replicas of the shard group
    int tp = 1;               ///< tensor-parallel degree
    int sp = 1;               ///< sequence-parallel degree
    int pp = 1;               ///< pipeline stages
    std::vector<int> pp_split;  ///< blocks per virtual stage, as run
    double bubble = 0;        ///< the schedule's bubble fraction, (p-1)/m or (p-1)/(v m)
    int64_t gbs = 0;          ///< MBS x GA x DP
    int64_t num_params = 0;   ///< parameters in the model
    int first_step = 1;       ///< the first step this run took (a resumed run: the checkpoint's step + 1)
    std::vector<StepStats> steps;  ///< one entry per optimizer step this run took
    std::array<size_t, kMemCategories> live{};  ///< bytes by category at the end (rank 0)
    std::array<size_t, kMemCategories> peak{};  ///< highest bytes each category reached (rank 0)
    size_t peak_total = 0;    ///< highest total bytes live at once (not the sum of peak; rank 0)
    std::vector<std::array<size_t, kMemCategories>> rank_peak;  ///< peak bytes by category, per rank

    /// A report of @p opts, resolved as @p shape says, before any step.
    static TrainReport start(const TrainOptions& opts, const RunShape& shape);
    /// The GBS arithmetic written out: "GBS = MBS x GA x DP = 4 x 1 x 1 = 4".
    std::string gbs_line() const;
    /// With pipeline parallelism: the stages, the schedule and its bubble; else empty.
    std::string pipeline_line() const;
    /// With local SGD (replica_sync_every > 1): the batch each replica steps on; else empty.
    std::string replica_batch_line() const;
    /// The machine-readable summary (what --json writes).
    nlohmann::json to_json() const;
};

/// Prints what the run will be before its first step: the model, the vocabulary's
/// padding, the device, the ranks and their layout, and the GBS arithmetic.
void print_run_header(std::ostream& out, const TrainReport& r);

/// Prints memory by category (live at the end and peak), as `train` does at the end.
void print_memory(std::ostream& out, const TrainReport& r);

/// A trace's otherData: the summary, the planner's prediction for the run
/// (or why there is none), the mesh and, with pipeline parallelism, the
/// schedule's actions for a viewer to draw.
nlohmann::json trace_other_data(const TrainReport& r);

}  // namespace ss
