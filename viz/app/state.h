// state.h — what the viewer remembers between frames, as plain data.
//
// As in ocornut/imgui's examples, the UI reads the state and does not own it:
// the view-model (viz/model/view_model.h) is built once per trace, and each
// panel keeps only its own small UI state here (zoom, filters, the hovered
// rank). Panels are functions `draw_x(ViewerState&, ImVec2 size)` (panels.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "comm/trace/trace_overlap.h"
#include "comm/trace/trace_summary.h"
#include "viz/app/live.h"
#include "viz/app/pixel_texture.h"
#include "viz/model/gbs.h"
#include "viz/model/load.h"
#include "viz/model/memory.h"
#include "viz/model/timeline.h"
#include "viz/model/view_model.h"

namespace ss::viz {

/// The panels, in tab order; also the names --panel accepts.
enum class Panel { overview, timeline, memory, grid, comm, pipeline, gbs, live, count };
/// "overview", "timeline", "memory", "grid", "comm", "pipeline", "gbs", "live".
const char* panel_name(Panel p);
/// Tab titles: "Overview", "Timeline", ...
const char* panel_title(Panel p);

/// Timeline panel: the view window, filters, selection.
struct TimelineUi {
    TimeView view;                 ///< t0, t1 (x0, width are set each frame)
    bool view_set = false;         ///< false: reset to default_window() on next draw
    TimelineFilter filter;         ///< axis, payload and step filters
    int selected_instance = -1;    ///< the clicked collective (all ranks of its group light up)
    float scroll_y = 0;            ///< lanes scroll (many ranks)
    std::vector<DrawRect> rects;   ///< scratch, reused every frame
};

/// Memory panel.
struct MemoryUi {
    int rank = 0;                       ///< rank whose categories are plotted over time
    uint32_t plot_mask = kAllCategories;  ///< categories in the plot over time (bit int(Mem))
    std::vector<std::vector<MemColumn>> rank_columns;  ///< scratch: per rank, one per pixel
};

/// Comm summary panel: its filter and the summary it last computed.
struct CommUi {
    TraceFilter filter;          ///< rank and step (-1: all)
    TraceFilter computed_for{-2, -2};  ///< filter of `summary`
    TraceSummary summary;        ///< the filtered totals
    TraceFilter compared_for{-2, -2};  ///< rank and step of `one_step`
    TraceSummary one_step;       ///< one rank, one step: what the planner's prediction is for
    TraceFilter overlap_for{-2, -2};  ///< rank and step of `overlap`
    size_t overlap_events = 0;   ///< events in the trace when `overlap` was computed (a guard: a loaded trace never
                                 ///< changes, and set_trace resets CommUi for each new one, a live run's too)
    OverlapRow overlap;          ///< one rank, one step: its communication and what of it was exposed
};

/// Grid panel.
struct GridUi {
    int color_axis = 2;   ///< index into the axes (tp, sp, dp_shard, dp_rep, pp)
    int focus_rank = 0;   ///< the rank whose groups are listed (hovered, else last clicked)
};

/// GBS calculator: its inputs beyond GbsInput.
struct GbsUi {
    GbsInput in;                 ///< the arithmetic's inputs
    int model = 2;               ///< index into calculator_models() (gpt2 by default)
    int sp_mode = 0;             ///< 0 Ulysses, 1 ring attention
    int zero = 1;                ///< ZeRO stage
    int recompute = 0;           ///< activation recomputation: 0 none, 1 selective, 2 full
    bool flash = false;          ///< attention as FlashAttention runs it (PlanInput::flash_attention)
    int dtype = 1;               ///< 0 fp32, 1 bf16
    float gpu_mem_gb = 80;       ///< memory per GPU in GB (1e9 bytes, as the planner and the presets count it)
    int seq = 1024;              ///< sequence length T
    int hw = 0;                  ///< index into hardware_preset_names() (src/plan/hardware.h)
};

/// Everything.
struct ViewerState {
    std::unique_ptr<ViewModel> vm;  ///< the loaded trace, or null
    std::string trace_path;         ///< what was asked for
    std::string error;              ///< why it did not load (shown in the window)
    double load_seconds = 0;        ///< read + parse + build
    LoadLimits limits;              ///< --max-events

    double cursor_t = 0;            ///< the time the Memory panel shows "now" at (µs)
    double hover_t = -1;            ///< time under the mouse in the timeline, -1 if not there

    Panel panel = Panel::overview;  ///< selected tab
    bool force_tab = true;          ///< select `panel` on the next frame (start-up, --panel)
    bool screenshot = false;        ///< headless: no hover effects that depend on the mouse

    TimelineUi timeline;
    PixelTexture lane_texture;      ///< the timeline's bars, painted (release before the GL context goes)
    PixelTexture memory_texture;    ///< the memory plot over time, painted (same)
    MemoryUi memory;
    CommUi comm;
    GridUi grid;
    GbsUi gbs;
    LiveUi live;
};

/// Loads @p path into @p s (replacing what was there); on failure s.error says why.
void open_trace(ViewerState& s, const std::string& path);
/// Takes over an already loaded result (live mode).
void set_trace(ViewerState& s, LoadResult r, const std::string& path);

}  // namespace ss::viz
