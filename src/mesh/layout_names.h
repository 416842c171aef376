// layout_names.h — the layout's vocabulary: how the sp axis splits attention and
// in which order the pp axis runs micro-batches, with the names the command line,
// the trace and the planner's JSON use for them.
//
// These are words about the rank grid (mesh/process_mesh.h), not about one of
// the parts that use them: the planner (plan/input.h) predicts a layout, the
// strategies (parallel/) and the schedule (schedule/pipeline_schedule.h) run
// one, the viewer reads them back from a trace. So they live here, below all of
// them. (Activation recomputation, the other knob that takes no ranks, is in
// model/recompute.h: it is the model's business.)
#pragma once

#include <string>

namespace ss {

/// How the sp axis splits attention (the other layers just split the tokens).
enum class SpMode {
    ulysses,  ///< DeepSpeed-Ulysses (Jacobs et al. 2023): all-to-all heads <-> tokens around attention
    ring,     ///< ring attention / context parallelism (Liu et al. 2023): K, V passed around a ring
};

/// How ring attention splits each sequence over the sp ranks (model/sequence_split.h).
/// Ulysses always splits contiguously: its all-to-all needs each rank's tokens in one run.
enum class RingSplit {
    zigzag,      ///< 2 SP chunks; rank i holds chunks i and 2SP-1-i (Megatron CP, torchtitan's head-tail balancer)
    contiguous,  ///< rank i holds tokens [i T/SP, (i+1) T/SP): the causal work grows with i
};

/// The order in which pipeline stages run micro-batches.
enum class Schedule {
    gpipe,        ///< all forwards, then all backwards (Huang et al. 2019): m micro-batches in flight
    one_f_one_b,  ///< 1F1B / PipeDream-Flush (Narayanan et al. 2021): at most p in flight
    interleaved,  ///< interleaved 1F1B: v model chunks per stage, bubble / v (Narayanan et al. 2021, sec. 2.2.2)
};

/// "ulysses", "ring".
const char* sp_mode_name(SpMode m);
/// "zigzag", "contiguous".
const char* ring_split_name(RingSplit s);
/// "gpipe", "1f1b", "interleaved".
const char* schedule_name(Schedule s);
/// Inverse of sp_mode_name (throws ss::Error listing the accepted names).
SpMode parse_sp_mode(const std::string& s);
/// Inverse of ring_split_name (throws ss::Error listing the accepted names).
RingSplit parse_ring_split(const std::string& s);
/// Inverse of schedule_name (throws ss::Error listing the accepted names).
Schedule parse_schedule(const std::string& s);

}  // namespace ss
