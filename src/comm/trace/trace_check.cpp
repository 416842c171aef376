// trace_check.cpp — the checks every trace reader shares (see trace_check.h).
#include "comm/trace/trace_check.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <sstream>
#include <sys/stat.h>

#include "core/check.h"

namespace ss {

uint64_t check_trace_file(const std::string& path, uint64_t max_bytes, const std::string& reader) {
    struct stat st {};
    SS_CHECK(::stat(path.c_str(), &st) == 0, "cannot open the trace " << path << ": " << std::strerror(errno)
                                                 << " (write one with `shardscope train --ranks 8 --zero 3 --trace "
                                                 << path << "`)");
    SS_CHECK(S_ISREG(st.st_mode), path << ": not a regular file" << (S_ISDIR(st.st_mode) ? " (a directory)" : "")
                                       << "; give the trace's .json file");
    const uint64_t size = uint64_t(st.st_size);
    SS_CHECK(size <= max_bytes, path << ": " << (size >> 20) << " MiB is more than " << reader << " reads ("
                                     << (max_bytes >> 20) << " MiB); trace fewer steps or ranks "
                                     << "(`shardscope train --steps 2 --trace ...`)");
    return size;
}

std::string json_nesting_problem(const std::string& text, const std::string& source, int max_depth) {
    int depth = 0;
    size_t line = 1, line_start = 0;
    bool in_string = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\') ++i;  // an escaped character, \" included
            else if (c == '"') in_string = false;
            continue;
        }
        switch (c) {
            case '"': in_string = true; break;
            case '\n': ++line, line_start = i + 1; break;
            case ']': case '}': --depth; break;
            case '[': case '{':
                if (++depth > max_depth)
                    return source + ": arrays and objects nest more than " + std::to_string(max_depth) +
                           " deep (line " + std::to_string(line) + ", column " + std::to_string(i - line_start + 1) +
                           "); a trace nests a few levels (`shardscope train --trace` writes 6), so this file is "
                           "damaged or not a trace";
                break;
            default: break;
        }
    }
    return "";
}

namespace {

// The first of @p e's times past kMaxTraceMicroseconds, with its value ("dur 1e+300"); "" if none.
std::string time_past_max(const TraceEvent& e) {
    const std::pair<const char*, double> times[] = {{"ts", e.ts_us},         {"dur", e.dur_us},
                                                    {"gpu_us", e.gpu_us},    {"issued_us", e.issued_us},
                                                    {"exposed_us", e.exposed_us}};
    std::ostringstream s;
    for (const auto& [name, us] : times)
        if (std::fabs(us) > kMaxTraceMicroseconds) {
            s << name << " " << us;
            break;
        }
    return s.str();
}

}  // namespace

std::string trace_problem(const Trace& t, const std::string& source, int max_ranks) {
    if (t.events.empty()) return source + ": the trace has no events (a run with --trace writes at least its memory)";
    // Ranks per node, where the trace gives them: 0 or -4 was taken as "not known" without a word.
    if (t.other_data.is_object() && t.other_data.contains("gpus_per_node") &&
        !fits_int(t.other_data.at("gpus_per_node"), 1)) {
        std::string got = t.other_data.at("gpus_per_node").dump();
        if (got.size() > 40) got = got.substr(0, 37) + "...";
        return source + ": otherData.gpus_per_node: expected the ranks per node, an integer from 1 to 2^31 - 1, got " +
               got + "; remove the key (`trace summary --gpus-per-node N` then gives the node size)";
    }
    uint64_t total_bytes = 0;
    for (size_t i = 0; i < t.events.size(); ++i) {
        const TraceEvent& e = t.events[i];
        std::ostringstream why;
        auto bad_rank = [&](int r) { return r < 0 || r >= max_ranks; };
        if (bad_rank(e.rank)) {
            why << "pid " << e.rank << " is not a rank in [0, " << max_ranks << ")";
        } else if (!std::isfinite(e.ts_us) || !std::isfinite(e.dur_us)) {
            why << "ts or dur is not a finite number";
        } else if (e.dur_us < 0) {
            why << "dur " << e.dur_us << " is negative";
        } else if (const std::string time = time_past_max(e); !time.empty()) {
            why << time << " is past " << kMaxTraceMicroseconds << " us (11.6 days), longer than any run";
        } else if (!(e.issued_us == -1 || (std::isfinite(e.issued_us) && e.issued_us >= 0)) ||
                   !(e.exposed_us == -1 || (std::isfinite(e.exposed_us) && e.exposed_us >= 0))) {
            why << "issued_us or exposed_us is neither -1 (not recorded) nor a finite number >= 0";
        } else if (e.kind == TraceEvent::Kind::collective) {
            for (int r : e.group)
                if (bad_rank(r)) {
                    why << "group member " << r << " is not a rank in [0, " << max_ranks << ")";
                    break;
                }
            if (why.str().empty() && e.bytes > kMaxTraceCallBytes)
                why << "bytes " << e.bytes << " is more than one call moves (at most 2^53)";
            else if (why.str().empty() && e.bytes > UINT64_MAX - total_bytes)
                why << "the bytes of all collectives add up past 2^64";
            total_bytes += e.bytes;
        }
        if (!why.str().empty())  // the index the file has (traceEvents[30]), as the readers' type errors say
            return source + ": " + (e.file_index >= 0 ? "traceEvents[" + std::to_string(e.file_index) + "]"
                                                      : "event " + std::to_string(i)) +
                   " (\"" + e.name + "\"): " + why.str();
    }
    return "";
}

Trace read_checked_trace(const std::string& path, const TraceLimits& limits, const std::string& reader) {
    check_trace_file(path, limits.max_bytes, reader);
    Trace t = read_chrome_trace(path);
    const std::string why = trace_problem(t, path, limits.max_ranks);
    SS_CHECK(why.empty(), why);
    return t;
}

}  // namespace ss
