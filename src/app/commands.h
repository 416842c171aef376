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

}  // namespace ss::app
