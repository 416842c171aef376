// commands.h — the subcommands of `shardscope`, one file each in src/app/.
//
// Each add_*_command registers its subcommand, flags and callback on the root
// CLI11 app. The callbacks throw ss::Error on bad input; main() prints it and
// exits non-zero.
#pragma once

namespace CLI {
class App;
}

namespace ss::app {

/// `shardscope train`: train GPT-2 on one or more ranks (train.cpp).
void add_train_command(CLI::App& root);
/// `shardscope bench`: speed benchmarks (bench.cpp).
void add_bench_command(CLI::App& root);
/// `shardscope mesh`: print the rank grid, each rank's coordinates and every group (mesh_cmd.cpp).
void add_mesh_command(CLI::App& root);
/// `shardscope trace summary FILE`: a trace's collectives added up (trace_cmd.cpp).
void add_trace_command(CLI::App& root);
/// `shardscope plan`: predict GBS, memory, traffic and step time of a layout; --search ranks layouts (plan_cmd.cpp).
void add_plan_command(CLI::App& root);
/// `shardscope schedule`: draw a pipeline schedule (gpipe, 1f1b, interleaved) and its bubble (schedule_cmd.cpp).
void add_schedule_command(CLI::App& root);
/// `shardscope checkpoint consolidate|show`: one HF file from a sharded checkpoint, or its manifest (checkpoint_cmd.cpp).
void add_checkpoint_command(CLI::App& root);
/// `shardscope diagram KIND --out FILE.svg`: a picture of a mechanism, drawn from the engine's data (diagram_cmd.cpp).
void add_diagram_command(CLI::App& root);

}  // namespace ss::app
