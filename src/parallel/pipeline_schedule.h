// pipeline_schedule.h — pipeline schedules as data (Huang et al. 2019, GPipe;
// Narayanan et al. 2021, 1F1B and interleaved 1F1B, arXiv:2104.04473).
//
// A schedule is, for each pipeline rank, the list of actions it performs in
// order during one optimizer step. Nothing here runs a model: the executor
// (parallel/pipeline.h) walks the lists, the tests check them, `shardscope
// schedule` draws them, and the visualizer can too.
//
// p pipeline ranks, m micro-batches, v model chunks per rank (v > 1 only for
// interleaved). The model's L blocks are cut into p*v consecutive "virtual
// stages"; virtual stage s lives on rank s % p as its chunk s / p:
//
//     p = 2, v = 2:   rank 0: chunks {vs 0, vs 2}    rank 1: chunks {vs 1, vs 3}
//
// Virtual stage 0 embeds the tokens, virtual stage p*v-1 computes the loss.
// Forward of (micro i, vs s) needs vs s-1's output for micro i; backward of
// (micro i, vs s) needs vs s+1's input gradient for micro i, and the forward
// of (i, s) on the same rank. Sends are eager (Comm::send returns once the
// data is copied), so a rank blocks only in a recv.
#pragma once

#include <string>
#include <vector>

#include "plan/input.h"  // enum Schedule { gpipe, one_f_one_b, interleaved }

namespace ss {

/// One thing a pipeline rank does.
enum class PipeOp {
    recv_act,   ///< receive micro's input activation for chunk from the previous virtual stage
    forward,    ///< forward of micro through chunk (virtual stage 0: from the tokens)
    send_act,   ///< send chunk's output activation of micro to the next virtual stage
    recv_grad,  ///< receive the gradient of chunk's output for micro from the next virtual stage
    backward,   ///< backward of micro through chunk (last virtual stage: from the loss)
    send_grad,  ///< send the gradient of chunk's input for micro to the previous virtual stage
};

/// "recv_act", "forward", "send_act", "recv_grad", "backward", "send_grad".
const char* pipe_op_name(PipeOp op);

/// One action of one rank.
struct PipeAction {
    PipeOp op;      ///< what
    int micro = 0;  ///< micro-batch, 0 .. m-1
    int chunk = 0;  ///< model chunk on this rank, 0 .. v-1 (virtual stage chunk * p + rank)
};

/// What a schedule is asked for.
struct PipeSpec {
    Schedule kind = Schedule::one_f_one_b;  ///< gpipe, 1f1b or interleaved
    int p = 1;  ///< pipeline ranks (stages)
    int m = 1;  ///< micro-batches per optimizer step (GA)
    int v = 1;  ///< model chunks per rank (interleaved only; 1 otherwise)
};

/// Every rank's actions for one optimizer step.
struct PipeSchedule {
    PipeSpec spec;                                ///< what it was made for
    std::vector<std::vector<PipeAction>> ranks;   ///< [p] actions, in order
};

/// The schedule @p spec asks for. Throws ss::Error with what to change for bad
/// input: p < 1, m < 1, v < 1, v > 1 with a schedule other than interleaved,
/// interleaved with m not a multiple of p (Megatron's requirement).
PipeSchedule make_pipe_schedule(const PipeSpec& spec);

/// What a schedule does, counted from its lists (not from formulas).
struct PipeStats {
    /// Largest number of (micro, chunk) forwards whose backward has not run yet,
    /// per rank: the activation sets held at once.
    std::vector<int> max_in_flight;
    /// Simulated with forward = 1 and backward = 2 time units per virtual stage
    /// chunk (each chunk is 1/v of a rank's layers, so a chunk's forward takes 1/v),
    /// communication free: the step's length and each rank's idle time.
    double makespan = 0;
    /// Each rank's idle time in the simulated step: makespan - busy, where busy = 3 m
    /// (m v chunk-forwards of 1/v and m v chunk-backwards of 2/v).
    std::vector<double> idle;
    /// Idle time of a rank / its busy time (the same for every rank in these
    /// schedules): the bubble fraction, (p-1)/m for GPipe and 1F1B, (p-1)/(v m) interleaved.
    double bubble_fraction = 0;
};

/// Checks @p s and counts what it does. Throws ss::Error naming the rank, the
/// action and the rule if: a forward or backward of some (micro, virtual stage)
/// is missing or repeated; a backward comes before its forward on a rank; a
/// forward lacks its recv_act (or a backward its recv_grad) earlier on the
/// same rank; the sends from one rank to another do not match the other's
/// receives one for one (same micro, same boundary); or the lists deadlock
/// (simulation makes no progress).
PipeStats check_pipe_schedule(const PipeSchedule& s);

/// The bubble fraction the formula predicts: (p-1)/m, or (p-1)/(v m) interleaved.
double pipe_bubble_formula(const PipeSpec& spec);

/// The activation sets a rank holds at most by the formula: GPipe m; 1F1B
/// min(p - rank, m) on rank `rank`; interleaved as Megatron's warm-up counts.
int pipe_in_flight_formula(const PipeSpec& spec, int rank);

/// A text chart of the simulated timeline, one row per rank, one column per
/// time unit: "F3" forward of micro 3, "B3" backward, "." idle; interleaved
/// chunks as lower/upper case or a chunk suffix. Ends with the bubble line.
std::string pipe_schedule_chart(const PipeSchedule& s);

}  // namespace ss
