// cli.h — the `shardscope` command line: the command tree, parsing, exit status.
//
// main() is run_command_line(); check_command_line() is the same parser with
// every subcommand's work left out, so a fuzz target (tests/fuzz/fuzz_cli.cpp)
// can throw millions of command lines at it without training anything.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace ss::app {

/// Registers every subcommand of `shardscope` on @p root (commands.h).
void add_commands(CLI::App& root);

/// Parses @p argv and runs the chosen subcommand, as the `shardscope` command
/// does. Returns the exit status: 0 done, 1 a run that failed (the ss::Error is
/// printed as "shardscope: error: ..."), or CLI11's status for bad usage
/// (its message and the help go to stderr/stdout as CLI11 prints them).
int run_command_line(int argc, const char* const* argv);

/// Parses @p args (without the program name) as `shardscope` would, and runs
/// nothing: no subcommand's callback is called. Only the parser's own checks
/// apply (unknown flags or subcommands, values that do not convert, missing
/// arguments, a number outside its flag's range (flag_range.h), and a flag's
/// own parser: --inject-fault). Prints nothing; returns 0 when the line parses,
/// 1 when a range or a flag's parser throws ss::Error (as run_command_line
/// would), else CLI11's exit status for the error.
int check_command_line(const std::vector<std::string>& args);

}  // namespace ss::app
