// plan_for_run.h — the planner's question for a `shardscope train` run: the same
// model, batch, layout and dtype, on this machine (cpu-local), counting the
// engine's own activation layout. plan(plan_input_for(opts)) is what the
// planner predicts for that run; tests/test_plan_engine.cpp compares the two,
// and a trace can carry it beside what was measured.
#pragma once

#include <string>

#include "plan/input.h"
#include "train/options.h"

namespace ss {

/// The PlanInput matching @p opts (ranks, dp_shard, dp_rep, zero, tp, Megatron-SP, sp and
/// its mode, mbs, ga, T, dtype, bucket size, overlap and prefetch), with --hw cpu-local read
/// from @p calibration and ActModel::engine; with @p links on, its links are those
/// (emulated_hardware). Local SGD (replica_sync_every > 1) is not modelled: its traffic is
/// predicted as the synchronous replicas'.
PlanInput plan_input_for(const TrainOptions& opts, const std::string& calibration = "out/calibration.json",
                         const EmulatedLinks& links = {});

/// A warning when the planner predicts that @p opts's ranks in this process (all of them
/// under the threads backend, one under mpirun) need more than @p ram_bytes at their peak
/// (available_ram_bytes()):
/// such a run is usually killed by the kernel, with no message of its own. Empty when the
/// prediction fits, on a GPU run (its memory is the GPU's), or when the planner cannot
/// model the layout. A warning, not an error: it is a prediction (docs/formulas.md says how
/// near the engine it has been), and swap may still hold the rest. @p ranks_here ranks of
/// the stage that needs the most are counted, so with pipeline stages it leans high.
std::string memory_warning(const TrainOptions& opts, int ranks_here, double ram_bytes);

/// Bytes of RAM free for a new run now: /proc/meminfo's MemAvailable (what the kernel can
/// give without swapping), else the machine's physical memory.
double available_ram_bytes();

/// @p hw (cpu-local) with the links a run emulates, in the CPU's time: bandwidth
/// gbps x 1e9 / time_scale bytes/s, latency us x 1e-6 x time_scale s, hops counted
/// on a ring as the emulation counts them, and links.gpus_per_node ranks per node
/// (one node of @p world ranks with one tier). @p hw unchanged when links are off.
Hardware emulated_hardware(Hardware hw, const EmulatedLinks& links, int world);

}  // namespace ss
