// main.cpp — the `shardscope` command: parse, dispatch, report errors.
//
//   shardscope train --model tiny --steps 10      train GPT-2 (see train_cmd.cpp)
//   shardscope bench                              speed benchmarks (see bench.cpp)
//
// Every subcommand throws ss::Error for bad input; run_command_line (cli.cpp)
// prints the message and returns the exit status: 1 for a run that failed,
// CLI11's status (non-zero) for bad usage.
#include "app/cli.h"
#include "core/device.h"

int main(int argc, char** argv) {
    ss::keep_host_memory();  // a step's tensors reuse the last step's pages (core/device.h)
    return ss::app::run_command_line(argc, argv);
}
