// fuzz_viz_load.cpp — any bytes as a trace for the visualizer: load_trace_text
// (viz/model/load.h: the limits, the streaming reader and its fallback), then,
// for what it accepts, build_view_model (viz/model/view_model.h: lanes,
// memory series, grid, summary), which must not throw for an accepted trace.
//
// load_trace_text promises never to throw, so nothing is caught here.
#include <cstdint>
#include <string>

#include "viz/model/load.h"
#include "viz/model/view_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    ss::viz::LoadResult r = ss::viz::load_trace_text(text, "fuzz.json");
    if (r.ok) ss::viz::build_view_model(std::move(r.trace), "fuzz.json");
    return 0;
}
