// pipeline_schedule.h — pipeline schedules as data (Huang et al. 2019, GPipe;
// Narayanan et al. 2021, 1F1B and interleaved 1F1B, arXiv:2104.04473).
//
// A schedule is, for each pipeline rank, the list of actions it performs in
// order during one optimizer step. Nothing here runs a model: the executor
// (parallel/pipeline.h) walks the lists, the tests check them, `shardscope
// schedule` draws them, and the visualizer draws a trace's lists with the
// same simulation (simulate_pipe_lists, which never throws: a trace is input).
// This part (src/schedule/, the library ss_schedule) needs only the standard
// library, core/check.h and the layout's names (mesh/layout_names.h), so the
// viewer links it without the engine.
//
//   pipeline_schedule.cpp  the compute order of each schedule, the lists, the formulas
//   pipeline_simulate.cpp  the wire (who sends what to whom) and the discrete-event run
//   pipeline_check.cpp     the rules every list must keep, then the run
//   pipeline_chart.cpp     the text chart of `shardscope schedule`
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
//
// 1F1B, p = 4, m = 8 (`shardscope schedule --pp 4 --micro 8 --schedule 1f1b`;
// one column = one forward, a backward takes two, . = idle):
//
//     rank 0 | F0 F1 F2 F3 .  .  .  .  .  .  B0 B0 F4 B1 B1 F5 B2 B2 F6 B3 B3 F7 B4 B4 .  B5 B5 .  B6 B6 .  B7 B7
//     rank 1 | .  F0 F1 F2 .  .  .  .  B0 B0 F3 B1 B1 F4 B2 B2 F5 B3 B3 F6 B4 B4 F7 B5 B5 .  B6 B6 .  B7 B7 .  .
//     rank 2 | .  .  F0 F1 .  .  B0 B0 F2 B1 B1 F3 B2 B2 F4 B3 B3 F5 B4 B4 F6 B5 B5 F7 B6 B6 .  B7 B7 .  .  .  .
//     rank 3 | .  .  .  F0 B0 B0 F1 B1 B1 F2 B2 B2 F3 B3 B3 F4 B4 B4 F5 B5 B5 F6 B6 B6 F7 B7 B7 .  .  .  .  .  .
//              warm-up  |            steady state: one forward, one backward             | cool-down
//
// A receive takes the message from its neighbour with the same key: payload
// (act or act_grad), micro-batch and boundary (comm/label.h, p2p_key). So the
// order of one rank's sends need not be the order of the other's receives;
// check_pipe_schedule checks that each receive has its send and each send its
// receive.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "mesh/layout_names.h"  // enum Schedule { gpipe, one_f_one_b, interleaved }

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

/// Throws ss::Error with what to change if @p spec cannot be made (the rules of
/// make_pipe_schedule below: p, m, v at least 1; v > 1 only interleaved, which needs
/// p >= 2, v >= 2 and m a multiple of p; at most 2^22 chunk computations).
void check_pipe_spec(const PipeSpec& spec);

/// The forwards rank @p rank runs before its first backward, as the schedule's
/// loops count them: GPipe m; 1F1B min(p-rank-1, m); interleaved
/// min(2 (p-rank-1) + (v-1) p, m v) chunk-forwards (Megatron-LM's num_warmup_microbatches).
int pipe_warmup(const PipeSpec& spec, int rank);

/// The schedule @p spec asks for:
///  - gpipe: every forward (micro 0..m-1), then every backward in reverse
///    (m-1..0), as in Huang et al. 2019, fig. 2c;
///  - one_f_one_b: rank r runs min(p-r-1, m) warm-up forwards, then pairs of one
///    forward and one backward, then the remaining backwards (Megatron-LM's
///    forward_backward_pipelining_without_interleaving);
///  - interleaved: the same over m v chunk-forwards, micro-batches passing the
///    chunks in groups of p, with min(2 (p-r-1) + (v-1) p, m v) warm-up
///    (Megatron-LM's forward_backward_pipelining_with_interleaving).
/// Each forward of a virtual stage > 0 is preceded by its recv_act and each of a
/// non-last one followed by its send_act; each backward of a non-last virtual
/// stage is preceded by its recv_grad and each of a stage > 0 followed by its
/// send_grad. GPipe and 1F1B with m < p are legal (the bubble is just larger
/// than the compute). Throws ss::Error with what to change for bad input: p < 1,
/// m < 1, v < 1, v > 1 with a schedule other than interleaved, interleaved with
/// p < 2, v < 2 or m not a multiple of p (Megatron's requirement).
PipeSchedule make_pipe_schedule(const PipeSpec& spec);

/// With overlap on, the engine (parallel/pipeline.cpp) posts each receive this many
/// actions before the schedule needs it, and keeps at most this many sends in flight.
constexpr int kPipeLookahead = 4;

/// The most boundary tensors (one micro-batch's activation or its gradient, B x T_rank
/// x C fp32 each) pipeline rank @p rank of @p s holds in Mem::comm at once, following
/// PipelineRank::run's rules. Overlap on: a receive's buffer from its posting
/// (kPipeLookahead actions ahead) until its forward copies it or its backward has used
/// it; a send's copy (an activation) or its gradient until the send is waited, which
/// happens when a kPipeLookahead + 1-th would start (the oldest first) or at the end;
/// the input gradient from its backward on. Overlap off: a received buffer from its
/// receive until used, and the input gradient from its backward until its send
/// returns; activations are sent from where they lie. The planner's pipeline term
/// (plan/memory.cpp) and the engine's Ledger agree on it (tests/test_plan_engine.cpp).
int pipe_comm_buffers_peak(const PipeSchedule& s, int rank, bool overlap);

/// One message on the wire: an activation (forward) or a gradient (backward) of
/// a micro-batch, crossing the boundary between virtual stages `lower` and lower + 1.
struct PipeMessage {
    bool act = true;  ///< true: an activation, sent up; false: a gradient, sent down
    int micro = 0;    ///< micro-batch
    int lower = 0;    ///< the boundary: between virtual stages lower and lower + 1
    /// By (act, micro, lower): messages key maps.
    bool operator<(const PipeMessage& o) const;
};

/// Whether @p op is send_act or send_grad.
bool pipe_is_send(PipeOp op);
/// Whether @p op is recv_act or recv_grad.
bool pipe_is_recv(PipeOp op);

/// The peer of send or receive @p a on pipeline rank @p rank of @p p, and the
/// message it carries. A receive takes the oldest message from its peer with the
/// same key: payload, micro-batch and boundary (comm/label.h, p2p_key;
/// parallel/pipeline.cpp labels the boundary by the first block after it), so the
/// order of a rank's sends need not be the order of its neighbour's receives.
std::pair<int, PipeMessage> pipe_wire(const PipeAction& a, int p, int rank);

/// How a simulated run of pipeline lists ended.
enum class PipeRunEnd {
    finished,      ///< every rank ran its whole list
    out_of_range,  ///< an action's chunk is not in 0 .. v-1 or its micro-batch is negative (nothing ran)
    crosses_end,   ///< a send or receive crosses an end: vs 0 has no previous stage, vs p v - 1 no next (nothing ran)
    deadlock,      ///< every rank with actions left waits in a receive whose send never comes
};

/// The lists run in time: when each action started (simulate_pipe_lists).
struct PipeRun {
    PipeRunEnd ended = PipeRunEnd::finished;  ///< finished, or why not
    /// out_of_range, crosses_end: the (rank, action index) found first; deadlock: each
    /// rank left with actions, at the receive it waits in, by rank. Empty when finished.
    std::vector<std::pair<int, size_t>> at;
    std::vector<std::vector<long>> start;  ///< [rank][i]: the tick action i starts (the actions that ran)
    std::vector<long> end;                 ///< per rank: the tick its last action that ran ends
    long makespan = 0;                     ///< the largest end: the step's length in ticks
    /// Whether every list ran to its end.
    bool finished() const { return ended == PipeRunEnd::finished; }
};

/// Runs @p ranks (p = ranks.size() pipeline ranks, @p v model chunks each), any
/// lists at all: each rank runs its list strictly in order; a forward of a chunk
/// takes @p t_f ticks and a backward @p t_b, the other actions none; a send is
/// eager and a receive completes once its message (pipe_wire) was sent. Never
/// throws on bad lists (a trace's lists are input; the viewer draws them with
/// this): returns how far they got and why they stopped. p = 0 or v < 1 is
/// out_of_range with no `at`. Each action runs once: O(actions log actions).
PipeRun simulate_pipe_lists(const std::vector<std::vector<PipeAction>>& ranks, int v, int t_f = 1, int t_b = 2);

/// What a schedule does, counted from its lists (not from formulas).
struct PipeStats {
    /// Largest number of (micro, chunk) forwards whose backward has not run yet,
    /// per rank: the activation sets held at once.
    std::vector<int> max_in_flight;
    /// Simulated with forward = 1 and backward = 2 time units per virtual stage
    /// chunk (each chunk is 1/v of a rank's layers, so a chunk's forward takes 1/v),
    /// communication free: the step's length, in a stage's forward times.
    double makespan = 0;
    /// Each rank's idle time in the simulated step: makespan - busy, where busy = 3 m
    /// (m v chunk-forwards of 1/v and m v chunk-backwards of 2/v).
    std::vector<double> idle;
    /// Idle time of a rank / its busy time (the same for every rank: each computes
    /// 3 m and the step ends when the last one is done): the bubble fraction.
    /// With this timing it equals pipe_bubble_formula exactly for every schedule
    /// make_pipe_schedule makes: GPipe and 1F1B take 3 m + 3 (p-1), interleaved
    /// 3 m + 3 (p-1) / v. It does not lean on t_b = 2 t_f: with any backward time
    /// the idle is (p-1)(t_f + t_b)/v (pipe_simulated_bubble; the tests try 1 to 4),
    /// but on free messages, and for interleaved on m being a multiple of p.
    double bubble_fraction = 0;
};

/// Checks @p s and counts what it does. Throws ss::Error naming the rank, the
/// action and the rule if: a forward or backward of some (micro, virtual stage)
/// is missing or repeated; a backward comes before its forward on a rank; a
/// forward lacks its recv_act (or a backward its recv_grad) earlier on the
/// same rank; a send comes before the compute that makes its data; a receive
/// or send crosses the ends of the pipeline; the sends from one rank to another
/// do not match the other's receives one for one (same payload, micro and
/// boundary); or the lists deadlock: the simulation (each rank runs its list in
/// order, a receive completes once its send has run) stops with actions left,
/// and the message names each stuck rank and the receive it waits in.
PipeStats check_pipe_schedule(const PipeSchedule& s);

/// The bubble fraction of @p s in the same simulation as check_pipe_schedule,
/// with a chunk's forward taking @p t_f and its backward @p t_b (any unit; with
/// full recompute t_b is about 3 t_f). Checks @p s first.
double pipe_simulated_bubble(const PipeSchedule& s, int t_f, int t_b);

/// The bubble fraction the formula predicts: (p-1)/m, or (p-1)/(v m) interleaved.
double pipe_bubble_formula(const PipeSpec& spec);

/// The activation sets a rank holds at most by the formula: GPipe m; 1F1B
/// min(p - rank, m) on rank `rank`; interleaved min(2 (p-rank-1) + (v-1) p + 1, m v)
/// chunks (Megatron's warm-up plus the steady state's first forward), which on
/// rank 0 is p (1 + (p-1)/(p v)) micro-batches' worth (Korthikanti et al. 2022,
/// sec. 4.2.3, eq. 5): more than 1F1B's p.
int pipe_in_flight_formula(const PipeSpec& spec, int rank);

/// A text chart of the simulated timeline (checks @p s first), one row per rank,
/// one column per forward's time (a chunk's forward when interleaved): "F3"
/// forward of micro 3, "B3" backward (two columns), "." idle; interleaved adds the
/// chunk as a letter ("F3a" chunk 0, "F3b" chunk 1). Rows wrap into blocks to stay
/// under 120 characters. Then each rank's warm-up/steady/cool-down counts, the
/// step's length, and the line "bubble: (p-1)/m = 3/8 = 0.375 of the compute time
/// (counted from the lists: 0.375); at most 4 micro-batches in flight on rank 0
/// (GPipe: 8)".
std::string pipe_schedule_chart(const PipeSchedule& s);

/// A compute action's name in the charts and pictures: "F3", "B12"; interleaved "F3a" (chunk 0),
/// "F3b" (chunk 1), ..., or "F3c0", "F3c27" when @p v > 26 (the letters would repeat).
std::string pipe_cell_label(const PipeAction& a, int v);

}  // namespace ss
