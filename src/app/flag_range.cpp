// flag_range.cpp — numeric flags checked against their range (see flag_range.h).
#include "app/flag_range.h"

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/check.h"
#include "plan/hardware.h"

namespace ss::app {

namespace {

// 4096 and 0.5 as they are, 1e+09 for a billion: what a reader would type.
std::string number_text(double x) {
    std::ostringstream os;
    os.precision(15);
    os << x;
    return os.str();
}

}  // namespace

bool FlagRange::contains(double x) const {
    if (!std::isfinite(x)) return false;
    return (lo_open ? x > lo : x >= lo) && x <= hi;
}

std::string FlagRange::text() const {
    const bool has_hi = std::isfinite(hi);
    if (!has_hi) return (lo_open ? "above " : "at least ") + number_text(lo);
    return std::string("in ") + (lo_open ? "(" : "[") + number_text(lo) + ", " + number_text(hi) + "]";
}

FlagRange at_least(double lo, double hi) { return FlagRange{lo, hi, false}; }

FlagRange above(double lo, double hi) { return FlagRange{lo, hi, true}; }

std::string flag_range_error(const std::string& flag, const std::string& value, const FlagRange& range,
                             const std::string& hint) {
    const char* begin = value.c_str();
    char* end = nullptr;
    errno = 0;
    const double x = std::strtod(begin, &end);
    if (end == begin || *end != '\0') return "";  // not a number: CLI11's conversion reports it
    const bool huge = errno == ERANGE && std::isinf(x);  // 1e999: beyond any range
    if (!huge && range.contains(x)) return "";
    std::ostringstream os;
    os << flag << " " << value << (std::isfinite(x) ? " is out of range" : " is not a finite number") << ": it must be "
       << range.text();
    if (!hint.empty()) os << " (" << hint << ")";
    return os.str();
}

void limit(CLI::App& cmd, const std::string& flag, const FlagRange& range, const std::string& hint) {
    CLI::Option* opt = cmd.get_option_no_throw(flag);
    SS_CHECK(opt != nullptr, "limit: " << cmd.get_name() << " has no option " << flag << " (add it before its range)");
    // The validator throws instead of returning its message: CLI11 would turn
    // a returned message into its own usage error; ss::Error is what every
    // other bad value of `shardscope` raises (error: ..., exit status 1).
    // An option with two names (--micro and --ga) is named by both: the user typed one of them.
    std::string shown;
    for (const std::string& n : opt->get_lnames()) shown += (shown.empty() ? "--" : "/--") + n;
    if (opt->get_lnames().size() < 2) shown = flag;
    opt->check(CLI::Validator(
        [shown, range, hint](std::string& value) {
            const std::string why = flag_range_error(shown, value, range, hint);
            if (!why.empty()) throw Error(why);
            return std::string();
        },
        range.text(), "range"));
}

void require_given_file(const CLI::App& cmd, const std::string& flag, const std::string& path,
                        const std::string& hint) {
    const CLI::Option* opt = cmd.get_option_no_throw(flag);
    if (opt == nullptr || opt->count() == 0) return;  // the default: its absence has a documented meaning
    SS_CHECK(std::ifstream(path).good(), flag << " " << path << ": no file can be read there; " << hint);
}

void require_given_calibration(const CLI::App& cmd, const std::string& path) {
    if (path == kNoCalibration) return;  // the defaults, asked for by name
    require_given_file(cmd, "--calibration", path,
                       "make one with `shardscope bench calibrate --out FILE`, give --calibration none for the "
                       "built-in defaults, or leave it out (out/calibration.json, or the defaults where that is "
                       "absent)");
}

}  // namespace ss::app
