// load.cpp — read a trace for the viewer with every failure turned into a message (see load.h).
#include "viz/model/load.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <fstream>

#include "comm/trace/trace_check.h"
#include "core/check.h"
#include "comm/trace/trace_fast.h"

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
    // Before either reader: a value nested 100,000 deep would crash the first copy of it.
    r.error = json_nesting_problem(text, source);  // comm/trace/trace_check.h, as trace summary
    if (!r.error.empty()) return r;
    try {
        r.fast = fast_parse_chrome_trace(text, r.trace);
        if (!r.fast) r.trace = parse_chrome_trace(text, source);  // the exact error, or an unusual valid file
        r.error = trace_problem(r.trace, source, limits.max_ranks);  // comm/trace/trace_check.h, as trace summary
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
    uint64_t size = 0;
    try {
        size = check_trace_file(path, limits.max_bytes, "this viewer");  // comm/trace/trace_check.h, as trace summary
    } catch (const Error& e) {
        r.error = e.what();
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
        text.resize(size_t(size));
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
