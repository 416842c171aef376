// main.cpp — the `shardscope` command: parse, dispatch, report errors.
//
//   shardscope train --model tiny --steps 10      train GPT-2 (see train.cpp)
//   shardscope bench                              speed benchmarks (see bench.cpp)
//
// Every subcommand throws ss::Error for bad input; this file prints the
// message and exits with code 2 (bad usage) or 1 (a run that failed).
#include <CLI/CLI.hpp>
#include <cstdio>

#include "app/commands.h"
#include "core/check.h"

int main(int argc, char** argv) {
    CLI::App root{"ShardScope: distributed training of GPT-2, traced and explained"};
    root.require_subcommand(1);
    ss::app::add_train_command(root);
    ss::app::add_bench_command(root);
    ss::app::add_mesh_command(root);
    ss::app::add_trace_command(root);
    ss::app::add_plan_command(root);
    ss::app::add_schedule_command(root);
    try {
        root.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return root.exit(e);
    } catch (const ss::Error& e) {
        std::fprintf(stderr, "shardscope: error: %s\n", e.what());
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "shardscope: internal error: %s\n", e.what());
        return 1;
    }
    return 0;
}
