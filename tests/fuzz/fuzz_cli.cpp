// fuzz_cli.cpp — any bytes as a `shardscope` command line: one argument per
// line, given to check_command_line (src/app/cli.h), which parses as the
// command does (every subcommand, flag and conversion) and runs nothing.
#include <cstdint>
#include <string>
#include <vector>

#include "app/cli.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::vector<std::string> args(1);
    for (size_t i = 0; i < size; ++i) {
        if (data[i] == '\n') args.emplace_back();
        else args.back() += char(data[i]);
    }
    if (args.size() > 64) return 0;  // longer lines add nothing the parser has not seen
    ss::app::check_command_line(args);
    return 0;
}
