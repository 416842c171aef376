// diagram.h — the pictures `shardscope diagram` draws, each from the engine's own data.
//
// A picture is computed, not drawn by hand: the ZeRO chunks are make_shard_plan's,
// the TP slices make_param_layout's, the Ulysses cells what UlyssesComm's
// all-to-all really delivers, the ring's steps ring_step's, the pipeline boxes
// simulate_pipe_lists' ticks.
// So docs/img/*.svg cannot drift from the code: tests/test_diagram.cpp draws
// each again and requires the same bytes.
//
//   zero_diagram.cpp      zero     ZeRO stages 0-3: what each rank holds, and its bytes
//   hpz_diagram.cpp       hpz      ZeRO++ hpZ: the primary and the secondary partition
//   tp_diagram.cpp        tp       Megatron's MLP: column-parallel W_fc, row-parallel W_proj, f and g
//   ulysses_diagram.cpp   ulysses  the all-to-all before attention: tokens -> heads
//   ring_diagram.cpp      ring     ring attention: whose keys each rank holds at each step, and the sends
//   pipeline_diagram.cpp  1f1b     a pipeline schedule's simulated timeline
//   losses_diagram.cpp    losses   loss per step of one or more `train --json` reports
#pragma once

#include <string>
#include <vector>

#include "diagram/svg.h"
#include "mesh/layout_names.h"
#include "model/config.h"
#include "schedule/pipeline_schedule.h"

namespace ss::diagram {

/// The --model flags that name @p cfg for a "drawn by" line: "--model tiny", or for a
/// preset with overrides ("tiny+custom") the preset and each changed dimension,
/// "--model tiny --heads 8", so that the line runs as printed.
std::string model_flags_of(const GPT2Config& cfg);

/// ZeRO stages 0-3 of @p cfg over @p ranks ranks: per rank, which chunk of every unit it
/// holds of the parameters, the gradients and the optimizer states, and their bytes
/// (bf16 mixed precision: 2 + 2 + 12 bytes per parameter, parallel/zero.h).
Svg draw_zero_stages(const GPT2Config& cfg, int ranks);

/// ZeRO++ hpZ for @p cfg over @p ranks ranks with groups of @p k: each rank's primary chunk
/// (over all N) and its secondary slice (N/K chunks, over its group of K; parallel/zero3.cpp).
Svg draw_hpz_partitions(const GPT2Config& cfg, int ranks, int k);

/// Megatron's MLP over @p tp ranks: W_fc [C, 4C] by columns, W_proj [4C, C] by rows, with
/// f and g (parallel/tensor_parallel.h), each slice's shape from make_param_layout.
Svg draw_tp_mlp(const GPT2Config& cfg, int tp);

/// Ulysses' all-to-all before attention over @p sp ranks for a sequence of @p tokens tokens:
/// [T/sp tokens, all H heads] -> [all T tokens, H/sp heads], as UlyssesComm moves them.
Svg draw_ulysses(const GPT2Config& cfg, int sp, int tokens);

/// Ring attention over @p sp ranks for @p cfg's T tokens, split as @p split: a grid of ranks x
/// steps with the block of keys and values each rank holds and what it computes of it (causal
/// diagonal, full, skipped; under zig-zag the chunk pairs), each rank's work, and one step's sends and receives, all from ring_step (parallel/ring_attention.h).
Svg draw_ring(const GPT2Config& cfg, int sp, RingSplit split);

/// @p spec's schedule (make_pipe_schedule) as simulated (forward 1, backward 2 ticks): a
/// row per rank, a box per forward and backward, and the bubble.
Svg draw_pipeline(const PipeSpec& spec);

/// One run's loss curve.
struct LossRun {
    std::string label;                          ///< the legend's name for it
    std::vector<std::pair<int, double>> steps;  ///< (step, loss), in the report's order
};

/// The (step, loss) pairs of a `shardscope train --json` report (train/report.cpp: "steps").
/// Throws ss::Error naming @p path if it cannot be read or has no steps.
LossRun read_loss_report(const std::string& label, const std::string& path);

/// A line chart of loss per step of @p runs, with axes, ticks and a legend.
Svg draw_losses(const std::vector<LossRun>& runs);

}  // namespace ss::diagram
