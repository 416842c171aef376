// pipeline.h — the pipeline schedule of a run as boxes: what the Pipeline panel draws.
//
// `shardscope train --pp N --trace FILE` stores the schedule as data in
// otherData.pipeline (docs/trace-format.md): actions[r] is pp rank r's list of
// [op, micro-batch, chunk] in the order it runs them (src/schedule/pipeline_schedule.h
// makes the lists). This file turns the lists into two pictures:
//
//   simulated  the engine's own simulation (simulate_pipe_lists in
//              src/schedule/pipeline_schedule.h): each rank runs its list in order;
//              a forward takes 1/v, a backward 2/v (a chunk is 1/v of the rank's
//              layers), messages are free, a receive waits for its send. Time in one
//              stage's forward times.
//   measured   the trace's compute spans "forward"/"backward" (args step,
//              microbatch, stage) of one step on the ranks of one pp group. Time in µs.
//
// 1F1B, p = 2, m = 4 (simulated; F = forward 1, B = backward 2, . = idle):
//
//     rank 0 | F0 F1 .  .  B0 B0 F2 B1 B1 F3 B2 B2 .  B3 B3
//     rank 1 | .  F0 B0 B0 F1 B1 B1 F2 B2 B2 F3 B3 B3 .  .
//
// The bubble is counted from the boxes: idle / busy = (p x makespan - busy) / busy,
// here (2 x 15 - 24) / 24 = 1/4 = (p-1)/m, the formula of Narayanan et al. 2021
// (arXiv:2104.04473, sec. 2.2; (p-1)/(v m) interleaved, sec. 2.2.1).
//
// A receive is matched to its send as the comm matches them (comm/label.h, p2p_key):
// by payload (act or act_grad), micro-batch and boundary (pipe_wire). Chunk c on
// rank r is virtual stage vs = c p + r; its activation goes to vs + 1, on rank
// (vs + 1) % p, and its input gradient to vs - 1.
//
// The trace is input: otherData.pipeline may be missing (pp = 1, an older file,
// another tool's trace) or malformed (a fuzzer, a hand edit). Neither throws:
// PipelineView::message says what is drawn instead.
#pragma once

#include <string>
#include <vector>

#include "comm/trace/trace.h"
#include "mesh/process_mesh.h"
#include "schedule/pipeline_schedule.h"  // PipeAction, simulate_pipe_lists

namespace ss::viz {

/// One forward or backward as a box on a pp rank's row.
struct PipeBox {
    int rank = 0;               ///< pp rank (the row)
    double start = 0, end = 0;  ///< simulated: forward times; measured: µs from the step's first box
    bool backward = false;      ///< false: forward (F), true: backward (B)
    int micro = 0;              ///< micro-batch
    int chunk = 0;              ///< model chunk on the rank (virtual stage chunk x p + rank)
};

/// Boxes of all pp ranks, and the idle time they leave.
struct PipeTimeline {
    std::vector<PipeBox> boxes;  ///< by rank, then start
    double t0 = 0;               ///< start of the first box
    double makespan = 0;         ///< last end - t0
    double busy = 0;             ///< sum of the boxes' lengths over all ranks
    /// Idle / busy over all ranks: (p x makespan - busy) / busy. 0 if nothing is busy.
    double bubble = 0;
};

/// What the Pipeline panel shows.
struct PipelineView {
    /// Empty: there is a schedule to draw. Otherwise why not: "no pipeline in this run",
    /// or what is wrong with otherData.pipeline (and where).
    std::string message;
    int pp = 0;                 ///< pipeline ranks p (rows)
    int v = 1;                  ///< model chunks per rank (interleaved: > 1)
    int m = 0;                  ///< micro-batches per step
    std::string schedule;       ///< "gpipe", "1f1b", "interleaved" as train wrote it ("" if not given)
    std::vector<int> split;     ///< blocks per virtual stage, if given
    double bubble_formula = 0;  ///< otherData's `bubble`, else (p-1)/(v m)
    std::vector<std::vector<PipeAction>> actions;   ///< [pp rank] otherData.pipeline.actions[r], in order
    PipeTimeline simulated;                         ///< the lists run with forward 1/v, backward 2/v

    std::string measured_message;     ///< empty: `measured` holds boxes; else why not
    int measured_step = -1;           ///< the step the measured boxes are from
    std::vector<int> measured_ranks;  ///< global rank of each pp row (the pp group of rank 0)
    PipeTimeline measured;            ///< the trace's forward/backward spans of that step, µs

    bool drawable() const { return message.empty(); }
};

/// Runs @p actions (one list per pp rank) with the engine's simulate_pipe_lists:
/// a forward takes 1/@p v and a backward 2/@p v, messages free. On a list that
/// cannot run (a chunk outside 0 .. v-1, a receive that crosses an end of the
/// pipeline, or ranks that wait for each other forever) returns an empty timeline
/// and sets @p error to which rank waits for what. Never throws.
PipeTimeline simulate_pipeline(const std::vector<std::vector<PipeAction>>& actions, int v, std::string& error);

/// Counts t0, makespan, busy and bubble of @p t over @p pp rows from its boxes.
void count_bubble(PipeTimeline& t, int pp);

/// Reads otherData.pipeline of @p trace, simulates it, and takes the measured boxes
/// of one step (the second, if there are two: the first warms up) from the ranks of
/// rank 0's pp group under @p shape (pp is the outermost axis: pp rank r's first
/// global rank is r x world / pp). Never throws.
PipelineView read_pipeline(const Trace& trace, const MeshShape& shape, bool has_mesh);

/// "F3", "B3", or with chunks (v > 1) "F3a", "B3b": the letters of `shardscope schedule`'s chart.
std::string pipe_box_label(const PipeBox& b, int v);

}  // namespace ss::viz
