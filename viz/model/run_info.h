// run_info.h — the run behind a trace, from its otherData (what `train` wrote).
//
// `shardscope train --trace` stores its report (src/train/train.cpp,
// TrainReport::to_json) as the trace's otherData, plus the mesh:
//
//     config  {model, L, C, H, V, T, mbs, ga, dtype, steps, ...}
//     gbs     {mbs, ga, dp, gbs, line}
//     ranks   {world, dp_shard, dp_rep, zero, backend, ...}
//     memory  {peak_bytes_per_rank: [{params, grads, ...}, ...], ...}
//     mesh    {world, pp, dp_rep, dp_shard, sp, tp}
//     prediction  the planner's answer for the same run (src/plan/report.h, plan_json)
//     emulated_links  a line, only when the threads backend emulated the links
//
// otherData is free-form to a reader (docs/trace-format.md): a trace from
// Perfetto's tools, or an older one, may lack any of these, so every field
// here has a default and `missing` lists what was not found.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "comm/trace/trace.h"
#include "mesh/process_mesh.h"
#include "viz/model/palette.h"

namespace ss::viz {

/// The planner's prediction for the run (src/plan/report.h, plan_json), as `train`
/// stores it in otherData.prediction: for global rank 0 (pipeline stage 0), one step.
struct Prediction {
    bool present = false;                             ///< otherData had one
    std::string unavailable;                          ///< why train could not make one (otherData.prediction.unavailable)
    std::array<uint64_t, kMemCategories> mem{};       ///< bytes by category at the peak (workspace: not predicted)
    uint64_t mem_total = 0;                           ///< their sum, as the planner adds it
    std::array<uint64_t, kPayloads> comm_bytes{};     ///< bytes per step by payload, as the trace counts them
    std::array<uint64_t, kPayloads> comm_calls{};     ///< calls per step by payload
    std::array<uint64_t, kPayloads> sync_bytes{};     ///< local SGD's sync, on one step in every sync_every, by payload
    int sync_every = 1;                               ///< the sync's period H (plan/comm.h, CommCall::every)
    /// Predicted bytes of @p payload on trace step @p step: every step's, plus the sync's on steps H, 2H, ...
    uint64_t bytes_on_step(size_t payload, int step) const {
        return comm_bytes[payload] + (sync_every > 1 && step > 0 && step % sync_every == 0 ? sync_bytes[payload] : 0);
    }
    std::string layout;                               ///< "TP 1 x PP 1 x SP 1 x DP 8 (8 x 1), ZeRO-3"
    std::string hardware;                             ///< the preset the time is for ("cpu-local", ...)
};

/// What the viewer knows about the run.
struct RunInfo {
    int world = 1;                 ///< ranks (the trace's, if otherData has no mesh)
    MeshShape shape;               ///< the rank grid; dp_shard = world when otherData has no mesh
    bool has_mesh = false;         ///< otherData.mesh was present and consistent
    std::string model = "?";       ///< preset name
    int L = 0, C = 0, H = 0, V = 0, T = 0;  ///< model dimensions (config.h's letters)
    int64_t num_params = 0;        ///< parameters in the model
    std::string dtype;             ///< "fp32" or "bf16"
    int zero = -1;                 ///< ZeRO stage, -1 unknown
    int mbs = 0, ga = 0, dp = 0;   ///< micro-batch, accumulation, data-parallel degree
    int64_t gbs = 0;               ///< MBS x GA x DP
    std::string gbs_line;          ///< "GBS = MBS x GA x DP = ..." as train printed it
    std::string backend;           ///< "threads" or "mpi"
    /// Peak bytes per category per rank as the Ledger counted them (exact; the
    /// trace's samples are merged within 20 µs but keep the peak sample).
    std::vector<std::array<uint64_t, kMemCategories>> ledger_peak;
    Prediction predicted;          ///< the planner's prediction (otherData.prediction), if the run had one
    /// otherData.emulated_links ("emulated links (not measured): ..."), "" on real links: the
    /// header and the Timeline's title repeat it, so no time is taken for a network's.
    std::string emulated_links;
    std::vector<std::string> missing;  ///< otherData fields not found

    /// "ZeRO-3 · 8 ranks (dp_shard 8) · model small · bf16" for titles.
    std::string title() const;
};

/// Reads @p trace's otherData. Never throws: what is missing keeps its default.
RunInfo read_run_info(const Trace& trace);

}  // namespace ss::viz
