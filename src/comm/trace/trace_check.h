// trace_check.h — what every reader of a trace accepts: one set of checks for
// `shardscope trace summary` (src/app/trace_cmd.cpp) and the viewer (viz/model/load.h).
//
// parse_chrome_trace (trace_io.cpp) checks that each field has its type. These
// check what a well-typed file can still get wrong, in the order a reader meets it:
//
//   1. the file exists, is a regular file, and is at most max_bytes   (one stat, before reading)
//   1b. its arrays and objects nest at most kMaxTraceNesting deep     (one scan, before parsing)
//   2. it has at least one event, and otherData.gpus_per_node, where present, is an integer >= 1
//   3. every rank, pid or group member, is in [0, max_ranks)          ("2000000001 ranks")
//   4. every ts and dur is finite, every dur >= 0; issued_us and exposed_us are -1 or finite >= 0;
//      no ts, dur, gpu_us, issued_us or exposed_us is past kMaxTraceMicroseconds (11.6 days)
//   5. every collective's bytes <= 2^53, and their sum fits in 64 bits  (totals that cannot overflow)
//
// A trace that `shardscope train --trace` wrote passes all of them.
#pragma once

#include <cstdint>
#include <string>

#include "comm/trace/trace.h"

namespace ss {

/// The bounds a trace must keep to be read.
struct TraceLimits {
    uint64_t max_bytes = 1ull << 30;  ///< bigger files are refused unread (1 GiB: ~5 million events)
    int max_ranks = 4096;             ///< pids and group members at or above this are refused
};

/// The largest time a trace may hold, in microseconds: 1e12 us = 11.6 days, longer
/// than any run. A ts or a dur past it (1e300 parses as a number) is damage, and
/// would print as a 300-digit number in every table.
constexpr double kMaxTraceMicroseconds = 1e12;

/// Bytes one collective may carry: 2^53 (8 PiB), the largest count a double holds
/// exactly (the summary's bandwidths are doubles), and far above any real call.
constexpr uint64_t kMaxTraceCallBytes = uint64_t(1) << 53;

/// How deep a trace's arrays and objects may nest. The engine writes 6 levels
/// (otherData.pipeline.actions[r][i]); nlohmann::json copies and prints a value
/// by recursion, one stack frame a level, so a file of 100,000 `[` would
/// overflow the stack however it parsed. 64 leaves room for other tools' args.
constexpr int kMaxTraceNesting = 64;

/// Check 1b, on the text before any parse: "" when @p text nests arrays and
/// objects at most @p max_depth deep (brackets inside strings do not count),
/// else the problem, naming @p source and the line and column that goes deeper.
std::string json_nesting_problem(const std::string& text, const std::string& source,
                                 int max_depth = kMaxTraceNesting);

/// Checks 1: @p path is a regular file of at most @p max_bytes; returns its size.
/// Throws ss::Error naming the file; @p reader names who refuses it ("this viewer").
uint64_t check_trace_file(const std::string& path, uint64_t max_bytes, const std::string& reader);

/// Checks 2-5 on @p trace: "" when it passes, else the first problem, naming
/// @p source, the event as the file has it ("traceEvents[30]", its file_index;
/// "event 3", its place in trace.events, for one recorded in memory), its name, and the limit.
std::string trace_problem(const Trace& trace, const std::string& source, int max_ranks);

/// Reads @p path as read_chrome_trace does, after check_trace_file and before
/// returning trace_problem's checks: throws ss::Error for the first that fails.
Trace read_checked_trace(const std::string& path, const TraceLimits& limits = {},
                         const std::string& reader = "shardscope");

}  // namespace ss
