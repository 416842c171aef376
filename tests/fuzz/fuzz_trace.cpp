// fuzz_trace.cpp — any bytes as a Chrome trace for `shardscope trace summary`:
// read_chrome_trace_text (src/comm/trace/trace_io.cpp, what read_chrome_trace does after
// reading the file: the streaming reader, else the full one), then the summary it
// prints (src/comm/trace/trace_summary.h).
#include <cstdint>
#include <string>

#include "comm/trace/trace.h"
#include "comm/trace/trace_summary.h"
#include "core/check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        const ss::Trace trace = ss::read_chrome_trace_text(text, "fuzz.json");
        ss::format_trace_summary(ss::summarize_trace(trace), "fuzz.json");
    } catch (const ss::Error&) {
    }
    return 0;
}
