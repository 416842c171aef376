// state.cpp — panel names, and loading a trace into the viewer's state (see state.h).
#include "viz/app/state.h"

#include <chrono>

namespace ss::viz {

const char* panel_name(Panel p) {
    static const char* kNames[] = {"overview", "timeline", "memory", "grid", "comm", "gbs", "live"};
    return kNames[int(p)];
}

const char* panel_title(Panel p) {
    static const char* kTitles[] = {"Overview", "Timeline", "Memory", "Grid", "Comm summary", "GBS calculator",
                                    "Live run"};
    return kTitles[int(p)];
}

void set_trace(ViewerState& s, LoadResult r, const std::string& path) {
    s.trace_path = path;
    s.vm.reset();
    s.error.clear();
    if (!r.ok) {
        s.error = r.error;
        return;
    }
    const auto t0 = std::chrono::steady_clock::now();
    try {
        s.vm = build_view_model(std::move(r.trace), path);
    } catch (const std::exception& e) {  // build_view_model does not throw for a loaded trace; be safe anyway
        s.error = path + ": " + e.what();
        return;
    }
    s.load_seconds = r.seconds + std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // Fresh UI state for the new trace; the cursor starts at rank 0's peak (the most telling moment).
    s.timeline = TimelineUi{};
    s.memory = MemoryUi{};
    s.comm = CommUi{};
    s.grid.focus_rank = 0;
    const RankMemory* m0 = s.vm->memory.ranks.empty() ? nullptr : &s.vm->memory.ranks[0];
    s.cursor_t = (m0 && m0->peak >= 0) ? m0->points[size_t(m0->peak)].t : s.vm->timeline.t_min;
}

void open_trace(ViewerState& s, const std::string& path) { set_trace(s, load_trace(path, s.limits), path); }

}  // namespace ss::viz
