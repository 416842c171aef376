// state.cpp — panel names, and loading a trace into the viewer's state (see state.h).
#include "viz/app/state.h"

#include <chrono>

namespace ss::viz {

const char* panel_name(Panel p) {
    static const char* kNames[] = {"overview", "timeline", "memory", "grid", "comm", "pipeline", "gbs", "live"};
    return kNames[int(p)];
}

const char* panel_title(Panel p) {
    static const char* kTitles[] = {"Overview",     "Timeline", "Memory",         "Grid",
                                    "Comm summary", "Pipeline", "GBS calculator", "Live run"};
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
    // Fresh UI state for the new trace.
    s.timeline = TimelineUi{};
    s.memory = MemoryUi{};
    s.comm = CommUi{};
    s.grid.focus_rank = 0;
    // The cursor starts at rank 0's highest memory within the first window (step 2): the most
    // telling moment of a step, and in view.
    const auto w = default_window(s.vm->timeline);
    s.cursor_t = w[0];
    uint64_t best = 0;
    if (!s.vm->memory.ranks.empty())
        for (const MemPoint& p : s.vm->memory.ranks[0].points)
            if (p.t >= w[0] && p.t <= w[1] && p.total > best) {
                best = p.total;
                s.cursor_t = p.t;
            }
}

void open_trace(ViewerState& s, const std::string& path) { set_trace(s, load_trace(path, s.limits), path); }

}  // namespace ss::viz
