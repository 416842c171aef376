// load.h — reading a trace for the viewer: never a crash, never a hang.
//
// The viewer opens whatever file it is given: a trace still being written, a
// file that is not JSON, a JSON that is not a trace, or a trace far larger than
// a window can draw. load_trace() turns every one of these into a message for
// the window (and stderr) instead of an exception, and it refuses files that
// are too large BEFORE parsing them, by cheap checks, so a 2 GB file costs a
// stat() and not a minute of swapping:
//
//   1. the file exists and is a regular file           ("cannot open ...")
//   2. its size <= limits.max_bytes                     (one stat)
//   3. it holds <= limits.max_events events             (one scan for `"ph"` keys)
//      and nests at most kMaxTraceNesting deep           (one scan, trace_check.h)
//   4. it parses as a Chrome trace: by the streaming reader (fast_load.h) when it can,
//      else by parse_chrome_trace (src/comm/trace/trace_io.cpp), whose errors name the field
//   5. every rank is in [0, max_ranks), every time finite, every duration >= 0 and
//      the bytes add up without overflow
// Steps 1, 2, 3's nesting and 5 are comm/trace/trace_check.h: `shardscope trace summary` checks the same.
#pragma once

#include <cstdint>
#include <string>

#include "comm/trace/trace.h"
#include "comm/trace/trace_check.h"

namespace ss::viz {

/// What load_trace() accepts.
struct LoadLimits {
    uint64_t max_bytes = TraceLimits{}.max_bytes;  ///< bigger files are refused unread (1 GiB)
    uint64_t max_events = 500000;     ///< events ("ph" keys); a 64-rank run of 200k events loads in < 2 s
    int max_ranks = TraceLimits{}.max_ranks;       ///< pids and group members at or above this are refused
};

/// A trace loaded, or why not.
struct LoadResult {
    bool ok = false;       ///< true: trace holds the file
    std::string error;     ///< when !ok: what went wrong and what to do, naming the file
    Trace trace;           ///< the events and otherData
    double seconds = 0;    ///< time to read and parse
    uint64_t file_bytes = 0;  ///< size of the file
    bool fast = false;     ///< read by the streaming reader (fast_load.h), not the full one
};

/// Reads @p path as a ShardScope trace within @p limits. Never throws.
LoadResult load_trace(const std::string& path, const LoadLimits& limits = {});
/// Same, for text already in memory (tests, live mode); @p source names it in errors.
LoadResult load_trace_text(const std::string& text, const std::string& source, const LoadLimits& limits = {});

/// Number of `"ph"` keys in @p text: an upper bound on its events, found without parsing.
uint64_t count_events_fast(const std::string& text);

}  // namespace ss::viz
