// load.cpp — read a trace for the viewer with every failure turned into a message (see load.h).
#include "viz/model/load.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

#include "core/check.h"
#include "viz/model/fast_load.h"

namespace ss::viz {

uint64_t count_events_fast(const std::string& text) {
    uint64_t n = 0;
    const char* p = text.data();
    const char* end = p + text.size();
    while (p < end) {
        const void* hit = std::memchr(p, '"', size_t(end - p));
        if (!hit) break;
        p = static_cast<const char*>(hit);
        if (end - p >= 4 && p[1] == 'p' && p[2] == 'h' && p[3] == '"') {  // "ph" ... then a ':' for a key
            const char* q = p + 4;
            while (q < end && (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r')) ++q;
            if (q < end && *q == ':') ++n;
        }
        ++p;
    }
    return n;
}

namespace {

std::string check_events(const Trace& t, const std::string& source, const LoadLimits& limits) {
    for (size_t i = 0; i < t.events.size(); ++i) {
        const TraceEvent& e = t.events[i];
        std::ostringstream why;
        if (e.rank < 0 || e.rank >= limits.max_ranks)
            why << "pid " << e.rank << " is not a rank in [0, " << limits.max_ranks << ")";
        else if (!std::isfinite(e.ts_us) || !std::isfinite(e.dur_us))
            why << "ts or dur is not a finite number";
        else if (e.dur_us < 0)
            why << "dur " << e.dur_us << " is negative";
        if (!why.str().empty())
            return source + ": event " + std::to_string(i) + " (\"" + e.name + "\"): " + why.str();
    }
    if (t.events.empty()) return source + ": the trace has no events (a run with --trace writes at least its memory)";
    return "";
}

}  // namespace

LoadResult load_trace_text(const std::string& text, const std::string& source, const LoadLimits& limits) {
    LoadResult r;
    const auto t0 = std::chrono::steady_clock::now();
    r.file_bytes = text.size();
    const uint64_t n = count_events_fast(text);
    if (n > limits.max_events) {
        r.error = source + ": " + std::to_string(n) + " events is more than this viewer draws (" +
                  std::to_string(limits.max_events) +
                  "); trace fewer steps or ranks (`shardscope train --steps 2 --trace ...`), or raise the "
                  "limit with --max-events";
        return r;
    }
    try {
        r.fast = fast_parse_chrome_trace(text, r.trace);
        if (!r.fast) r.trace = parse_chrome_trace(text, source);  // the exact error, or an unusual valid file
        r.error = check_events(r.trace, source, limits);
        r.ok = r.error.empty();
    } catch (const std::bad_alloc&) {
        r.error = source + ": out of memory while reading the trace; trace fewer steps or ranks";
    } catch (const std::exception& e) {
        r.error = e.what();
    }
    if (!r.ok) r.trace = Trace{};
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
}

LoadResult load_trace(const std::string& path, const LoadLimits& limits) {
    LoadResult r;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        r.error = "cannot open the trace " + path + ": " + std::strerror(errno) +
                  " (write one with `shardscope train --ranks 8 --zero 3 --trace " + path + "`)";
        return r;
    }
    if (!S_ISREG(st.st_mode)) {
        r.error = path + ": not a regular file";
        return r;
    }
    if (uint64_t(st.st_size) > limits.max_bytes) {
        r.error = path + ": " + std::to_string(uint64_t(st.st_size) >> 20) + " MiB is more than this viewer reads (" +
                  std::to_string(limits.max_bytes >> 20) + " MiB); trace fewer steps or ranks";
        return r;
    }
    const auto t0 = std::chrono::steady_clock::now();
    std::string text;
    try {
        std::ifstream is(path, std::ios::binary);
        if (!is) {
            r.error = "cannot open the trace " + path + ": " + std::strerror(errno);
            return r;
        }
        text.resize(size_t(st.st_size));
        is.read(text.data(), std::streamsize(text.size()));
        text.resize(size_t(is.gcount()));
    } catch (const std::exception& e) {
        r.error = path + ": cannot read: " + e.what();
        return r;
    }
    r = load_trace_text(text, path, limits);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
}

}  // namespace ss::viz
