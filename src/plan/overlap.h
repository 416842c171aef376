// overlap.h — what hides under what: one data-parallel rank's step, replayed
// unit by unit with the engine's own rules (parallel/data_parallel.cpp,
// zero1.cpp, zero2.cpp, zero3.cpp), so the planner predicts the overlap the
// engine does rather than an ideal one.
//
// Two clocks. The rank computes on one (the units of a micro-batch, in the
// order part_forward and part_backward take them: model/gpt2.h unit_order);
// its group's collectives run one after another on the other, the wire (the
// threads backend's progress thread of that group runs its queue in issue
// order, threads/progress.h). A started call begins when it is issued or when
// the wire is free, whichever is later; the rank waits only where it needs the
// result, and the time it waits is exposed. A blocking call is a start and an
// immediate wait.
//
//     compute  | emb | block 1 | block 2 | ... | head |   | head' | block L' | ... |
//     wire          |gather 2 |gather 3 |            |RS L+1|RS L |...             (ZeRO-3, prefetch 1)
//
// The rules, per strategy, with --overlap on:
//
//   DDP       last micro-batch's backward: a bucket's all_reduce starts once the units
//             holding it are complete; backward's end waits for them all
//   ZeRO-1    last backward: each unit's reduce_scatter starts when it is complete; the
//             step waits; the step's all_gathers start at once and unit u's is waited
//             for where the next forward needs u
//   ZeRO-2    the same, with the reduce_scatters in every micro-batch's backward
//   ZeRO-3    forward and backward: taking unit u waits for its gather and starts the
//             next K units' (--prefetch K; 0: gathered when needed); a complete unit's
//             reduce_scatter starts, at most two in flight
//   qgZ       (ZeRO++, parallel/zeropp.h) its all-to-alls replace ZeRO-2/3's reduce_scatter
//             and are blocking even with --overlap on: the rank waits for each unit's
//             gradients to reach their owners before the next unit's backward
//
// With --overlap off every call is blocking where the engine issues it. The
// model leaves out what the engine's own copies cost and the cores a progress
// thread takes (a wire that sleeps on an emulated link takes none).
#pragma once

#include <vector>

namespace ss {

/// One unit of the model as a step meets it (seconds).
struct UnitWork {
    double fwd = 0;      ///< compute of its forward, one micro-batch
    double bwd = 0;      ///< compute of its backward, one micro-batch (with recompute)
    double gather = 0;   ///< one all_gather of its parameters (ZeRO 1-3; ZeRO-3's forward)
    double reduce = 0;   ///< one reduce_scatter of its gradients (ZeRO 1-3; with qgZ its two all-to-alls)
    std::vector<double> all_reduces;  ///< DDP: the all_reduces that can start once it is complete in backward
    double gather_bwd = -1;  ///< ZeRO-3: its backward's all_gather (hpZ: inside the group of K); < 0: as `gather`
};

/// A data-parallel step to replay.
struct DpStep {
    int zero = 0;          ///< 0 (DDP), 1, 2, 3
    int ga = 1;            ///< micro-batches in the step
    bool overlap = true;   ///< --overlap on
    int prefetch = 1;      ///< ZeRO-3 with overlap: units gathered ahead
    bool blocking_reduce = false;  ///< ZeRO-2/3: each unit's `reduce` is blocking (ZeRO++ qgZ's all-to-alls)
    /// The units in flat order: 0 the embeddings, 1..L the blocks, L+1 ln_f with the head
    /// (the head's compute is on it; its weight, wte, is unit 0's).
    std::vector<UnitWork> units;
};

/// Where a step's time went.
struct DpStepTime {
    double compute = 0;       ///< the units' compute, all micro-batches
    double comm = 0;          ///< every collective's time on the wire
    double exposed = 0;       ///< of it, what the rank waited for
    double exposed_each_mb = 0;  ///< the part of exposed in micro-batches' passes (ZeRO-2/3); the rest is once per step
    double total = 0;         ///< compute + exposed: the step without the optimizer and what nothing hides
};

/// Replays @p s under the rules in this file's comment.
DpStepTime replay_dp_step(const DpStep& s);

}  // namespace ss
