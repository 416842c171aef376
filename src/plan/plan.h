// plan.h — the planner's one entry point: a layout in, its GBS, memory,
// communication and step time out, from the papers' formulas alone.
//
//     PlanInput in;                       // model, cluster, layout, batch, dtype (plan/input.h)
//     in.gpus = 512; in.mbs = 16; in.layout.tp = 4; in.layout.sp = 4;
//     PlanResult r = plan(in);            // throws ss::Error for a layout that cannot exist
//     r.gbs.line()                        // "GBS = MBS 16 x GA 1 x DP 32 = 512   (DP = 512 / (TP 4 x PP 1 x SP 4))"
//     r.memory.total, r.memory.fits()     // bytes per GPU at the peak
//     r.comm                              // every collective of one step, bytes as a trace counts them
//     r.time.tokens_per_s, r.time.mfu
//
// The parts, one idea per file: gbs.h (batch arithmetic), memory.h (ZeRO
// paper + Korthikanti), comm.h (collective bytes, alpha-beta time), time.h
// (Narayanan FLOPs, bubble, overlap), search.h (every layout, ranked),
// hardware.h (presets), report.h (text and JSON). Every formula and its
// source: docs/formulas.md, "The planner".
#pragma once

#include <string>
#include <vector>

#include "mesh/process_mesh.h"
#include "plan/comm.h"
#include "plan/gbs.h"
#include "plan/input.h"
#include "plan/memory.h"
#include "plan/time.h"

namespace ss {

/// The planner's answer for one layout.
struct PlanResult {
    PlanInput input;             ///< the question, with defaults filled in (dp degrees, GA, gpus per node)
    MeshShape mesh;              ///< the grid: pp, dp_rep, dp_shard, sp, tp
    int64_t num_params = 0;      ///< parameters of the model
    GbsPlan gbs;                 ///< the batch arithmetic
    MemoryPlan memory;           ///< bytes per GPU at the peak (the stage that needs the most)
    std::vector<CommCall> comm;  ///< collectives of global rank 0 (pipeline stage 0) in one step
    TimePlan time;               ///< step time, tokens/s, MFU

    /// Bytes rank 0 moves per step over all collectives.
    int64_t comm_bytes() const;
    /// Short name of the layout: "TP 4 x PP 1 x SP 4 (ulysses) x DP 32 (32 x 1), ZeRO-3".
    std::string layout_str() const;
};

/// Checks @p in and fills what was left out; throws ss::Error with the nearest valid
/// choices when a degree does not divide the world, the heads (TP, Ulysses SP), the
/// sequence (SP) or the layers (PP, and PP x v for interleaving), or the GBS cannot be made.
PlanInput resolve(const PlanInput& in, MeshShape* mesh = nullptr, GbsPlan* gbs = nullptr);

/// Local SGD's and DiLoCo's flags against the replicas (train's checks too): H >= 1; H > 1
/// and the outer Nesterov step need @p dp_rep > 1; the outer step needs H > 1. Throws ss::Error.
void check_replica_sync(int sync_every, ReplicaOuter outer, int dp_rep);

/// The planner: GBS, memory, communication and time of one layout.
PlanResult plan(const PlanInput& in);

}  // namespace ss
