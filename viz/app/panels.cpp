// panels.cpp — the window around the panels: a header naming the run, one tab per
// panel, and the Overview tab, which tiles Timeline, Memory, Grid and Comm summary
// so that one screenshot shows the whole story of a run:
//
//     +-- ShardScope . ZeRO-3 . 8 ranks ... ----------------------------------------+
//     | [Overview] [Timeline] [Memory] [Grid] [Comm summary] [Pipeline] [GBS ...]   |
//     | +------------------------------------+ +--------------------------------+   |
//     | | Timeline                           | | Grid                           |   |
//     | +------------------------------------+ +--------------------------------+   |
//     | | Memory                             | | Comm summary                   |   |
//     | +------------------------------------+ +--------------------------------+   |
#include <cstdio>

#include "viz/app/panels.h"
#include "viz/app/widgets.h"

namespace ss::viz {

namespace {

using DrawFn = void (*)(ViewerState&, ImVec2);

bool needs_trace(Panel p) { return p != Panel::gbs && p != Panel::live; }

// A bordered tile holding one panel. The Timeline's tile does not scroll (the wheel zooms
// and scrolls its lanes itself); the others scroll down where the panel is longer than the
// tile (at 1600 x 1000 the Comm summary's last lines were cut off). Not sideways: wrapped
// lines wrap at the tile's edge only while the tile has no horizontal scroll.
void tile(ViewerState& s, const char* id, ImVec2 size, DrawFn fn, bool scrolls = true) {
    ImGui::BeginChild(id, size, true, scrolls ? 0 : ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
    fn(s, ImGui::GetContentRegionAvail());
    ImGui::EndChild();
}

void draw_overview(ViewerState& s, ImVec2 size) {
    const float gap = ImGui::GetStyle().ItemSpacing.x;
    const float left_w = (size.x - gap) * 0.60f, right_w = size.x - gap - left_w;
    const float top_h = (size.y - gap) * 0.56f;
    ImGui::BeginGroup();
    tile(s, "ov_timeline", ImVec2(left_w, top_h), draw_timeline, false);
    tile(s, "ov_memory", ImVec2(left_w, size.y - gap - top_h), draw_memory);
    ImGui::EndGroup();
    ImGui::SameLine();
    ImGui::BeginGroup();
    const float grid_h = (size.y - gap) * 0.40f;
    tile(s, "ov_grid", ImVec2(right_w, grid_h), draw_grid);
    tile(s, "ov_comm", ImVec2(right_w, size.y - gap - grid_h), draw_comm);
    ImGui::EndGroup();
}

void draw_no_trace(const ViewerState& s) {
    if (!s.error.empty()) {
        draw_load_error(s);
        return;
    }
    ImGui::TextWrapped("No trace loaded. Open one:  shardscope-viz out/demo-zero3.json   "
                       "(make it with: shardscope train --ranks 8 --zero 3 --trace out/demo-zero3.json), "
                       "or run the engine from the \"Live run\" tab. The GBS calculator needs no trace.");
}

void draw_header(const ViewerState& s) {
    heading("ShardScope");
    ImGui::SameLine();
    if (s.vm) {
        ImGui::TextUnformatted(s.vm->run.title().c_str());
        ImGui::SameLine();
        ImGui::TextDisabled("   %s  (%s events, loaded in %.2f s)", s.vm->source.c_str(),
                            fmt_int(s.vm->trace.events.size()).c_str(), s.load_seconds);
        help_marker("The trace is one Chrome-trace JSON file written by `shardscope train --trace FILE` "
                    "(docs/trace-format.md): pid = rank, tid 0 = compute spans, tid 1 = collectives, "
                    "counter events = memory by Ledger category, otherData = the run's config, mesh and GBS. "
                    "Read by viz/model/load.cpp (size and event-count limits first, then "
                    "src/comm/trace/trace_io.cpp's checks).");
        if (!s.vm->run.emulated_links.empty()) {  // every time on screen is the emulation's
            ImGui::TextColored(ImVec4(1.0f, 0.78f, 0.24f, 1.0f), "%s", s.vm->run.emulated_links.c_str());
            help_marker("The threads backend emulated this run's links (otherData.emulated_links, "
                        "docs/trace-format.md): each collective waited as long as the alpha-beta cost of "
                        "the links says, as a sleep. The collectives' times are that emulation, not a "
                        "measured network; compute times are measured.");
        }
        if (!s.vm->run.gbs_line.empty()) {
            ImGui::TextUnformatted(s.vm->run.gbs_line.c_str());
            help_marker("GBS = MBS x GA x DP, DP = world / (TP x PP x SP): sequences per optimizer step, "
                        "as `shardscope train` printed it (src/train/train.h). Replica groups (dp_rep) "
                        "do not change it.");
        }
    } else {
        ImGui::TextDisabled(s.trace_path.empty() ? "no trace" : s.trace_path.c_str());
    }
}

}  // namespace

void draw_load_error(const ViewerState& s) {
    ImGui::PushStyleColor(ImGuiCol_ChildBg, IM_COL32(80, 20, 20, 255));
    ImGui::BeginChild("load_error", ImVec2(0, ImGui::GetTextLineHeightWithSpacing() * 7), true);
    ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 200, 190, 255));
    ImGui::TextUnformatted("This trace could not be opened:");
    ImGui::PopStyleColor();
    ImGui::TextWrapped("%s", s.error.c_str());
    ImGui::Spacing();
    ImGui::TextWrapped("A trace is written by `shardscope train --trace FILE` (docs/trace-format.md). "
                       "The GBS calculator and the Live run tabs work without one.");
    ImGui::EndChild();
    ImGui::PopStyleColor();
}

void draw_window(ViewerState& s) {
    const ImGuiViewport* vp = ImGui::GetMainViewport();
    ImGui::SetNextWindowPos(vp->WorkPos);
    ImGui::SetNextWindowSize(vp->WorkSize);
    ImGui::Begin("ShardScope", nullptr,
                 ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoSavedSettings |
                     ImGuiWindowFlags_NoBringToFrontOnFocus);
    draw_header(s);
    if (ImGui::BeginTabBar("panels")) {
        for (int i = 0; i < int(Panel::count); ++i) {
            const Panel p = Panel(i);
            const ImGuiTabItemFlags flags = (s.force_tab && s.panel == p) ? ImGuiTabItemFlags_SetSelected : 0;
            if (ImGui::BeginTabItem(panel_title(p), nullptr, flags)) {
                if (!s.force_tab) s.panel = p;
                const ImVec2 avail = ImGui::GetContentRegionAvail();
                if (needs_trace(p) && !s.vm) {
                    draw_no_trace(s);
                } else if (p == Panel::overview) {
                    draw_overview(s, avail);
                } else {
                    static const DrawFn kDraw[] = {nullptr,   draw_timeline, draw_memory, draw_grid,
                                                   draw_comm, draw_pipeline, draw_gbs,    draw_live};
                    tile(s, panel_name(p), avail, kDraw[i]);
                }
                ImGui::EndTabItem();
            }
        }
        ImGui::EndTabBar();
    }
    s.force_tab = false;
    ImGui::End();
}

}  // namespace ss::viz
