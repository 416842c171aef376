// flag_range.h — the one way a numeric flag says which values it takes.
//
//   cmd->add_option("--seq", opts->T, "Sequence length T (default: the model's maxT)");
//   ...
//   limit(*cmd, "--seq", at_least(1), "leave --seq out for the model's maxT");
//
// Each command ends its flags with such a table of ranges, one line a flag.
//
// A value outside the range, or one that is not a finite number (nan, inf),
// stops the command line before anything runs, with a message that names the
// flag, the value and the range:
//
//   shardscope: error: --seq 0 is out of range: it must be at least 1 (leave --seq out for the model's maxT)
//
// Only a value that is given is checked: a flag left out keeps its default,
// whatever it means ("0: the model's maxT"). A flag of several values
// (--ranks 2,4) checks each one.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

namespace CLI {
class App;
}

namespace ss::app {

// ---- The most each command will build (a bigger value is refused at once, naming the flag) ----

/// Ranks of one threads-backend run (train --ranks, bench --ranks): each is a
/// thread of this process holding its model state. 4096 is also the most ranks
/// a trace may have (comm/trace/trace_check.h), so every run's trace can be read.
constexpr int kMaxThreadRanks = 4096;
/// OpenBLAS threads per rank (--threads); far above any machine's cores.
constexpr int kMaxBlasThreads = 1024;
/// Ranks `shardscope mesh` prints: a line per rank and every group's members
/// (65,536 ranks print ~70,000 lines in a fraction of a second; the planner takes any size).
constexpr int kMaxReportRanks = 65536;
/// GPUs `shardscope plan` takes (--gpus): 2^24, more than any cluster built, and
/// small enough that finding the divisors of the world stays instant.
constexpr int kMaxPlanGpus = 1 << 24;
/// Bytes per rank `bench comm` sizes up to (--min-bytes, --max-bytes): 1 GiB.
constexpr double kMaxBenchBytes = double(1 << 30);
/// Micro-batch computations `shardscope schedule` draws, p x m x v: its chart
/// has a column per tick for every rank (2^16 draw in about a second).
constexpr int64_t kMaxChartComputes = 1 << 16;

/// The values a numeric flag accepts: [lo, hi], or (lo, hi] when lo_open. Always finite.
struct FlagRange {
    double lo = -std::numeric_limits<double>::infinity();  ///< the smallest value (or, lo_open, the bound above it)
    double hi = std::numeric_limits<double>::infinity();   ///< the largest value accepted
    bool lo_open = false;                                  ///< true: lo itself is refused

    /// True when @p x is finite and inside the range.
    bool contains(double x) const;
    /// The range in words: "at least 1", "in [1, 4096]", "above 0", "in (0, 1]".
    std::string text() const;
};

/// [lo, hi]: at least @p lo (and at most @p hi).
FlagRange at_least(double lo, double hi = std::numeric_limits<double>::infinity());
/// (lo, hi]: more than @p lo (and at most @p hi), e.g. above(0) for a positive time or rate.
FlagRange above(double lo, double hi = std::numeric_limits<double>::infinity());

/// The message for flag @p flag given @p value outside @p range; "" when the
/// value is in range or is not a number at all (the flag's own conversion
/// then says so). @p hint, when given, ends the message in parentheses.
std::string flag_range_error(const std::string& flag, const std::string& value, const FlagRange& range,
                             const std::string& hint = "");

/// Makes the option @p flag of @p cmd (added before; any of its names) refuse
/// values outside @p range: parsing throws ss::Error with flag_range_error's
/// message, so `shardscope` prints "error: ..." and exits 1. --help shows the range.
void limit(CLI::App& cmd, const std::string& flag, const FlagRange& range, const std::string& hint = "");

/// For a flag naming a file the command reads whose default may be absent
/// (--calibration, --torch-script): throws ss::Error when @p flag of @p cmd was
/// given on the command line and @p path is no readable file, so a mistyped path
/// is refused instead of silently replaced by the default's fallback. @p hint
/// ends the message (what to do instead). Call it when the command runs, not at
/// parse time (check_command_line parses commands whose files come later).
void require_given_file(const CLI::App& cmd, const std::string& flag, const std::string& path,
                        const std::string& hint);

/// require_given_file for @p cmd's --calibration, whose value `none` (kNoCalibration,
/// plan/hardware.h) names cpu-local's defaults rather than a file.
void require_given_calibration(const CLI::App& cmd, const std::string& path);

}  // namespace ss::app
