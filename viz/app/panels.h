// panels.h — one function per panel, each drawing into a region of @p size.
//
//   panel_timeline.cpp  who sent what to whom, and when (lanes per rank)
//   panel_memory.cpp    bytes per rank by Ledger category: at the cursor, at peak, over time
//   panel_grid.cpp      the rank grid and each rank's groups (the mpu view)
//   panel_comm.cpp      collectives added up by axis, op and payload
//   panel_pipeline.cpp  the pipeline schedule: simulated and measured boxes per pp rank
//   panel_gbs.cpp       the global-batch-size arithmetic for any cluster (no trace needed)
//   panel_live.cpp      run the engine here and watch the trace it writes
//   panels.cpp          the header, the tabs and the overview that tiles the first four
#pragma once

#include <string>
#include <vector>

#include "imgui.h"
#include "model/config.h"
#include "viz/app/state.h"

namespace ss::viz {

void draw_timeline(ViewerState& s, ImVec2 size);
void draw_memory(ViewerState& s, ImVec2 size);
void draw_grid(ViewerState& s, ImVec2 size);
void draw_comm(ViewerState& s, ImVec2 size);
void draw_pipeline(ViewerState& s, ImVec2 size);
void draw_gbs(ViewerState& s, ImVec2 size);
void draw_live(ViewerState& s, ImVec2 size);

/// The GBS calculator's models: GPT-2's presets (model/config.h), then GPT-3's shapes (plan/models.h).
std::vector<std::string> calculator_models();
/// Shape of calculator_models()[@p i].
GPT2Config calculator_model(int i);

/// The whole window: header, tabs, the selected panel (or the overview's tiles).
void draw_window(ViewerState& s);

/// A box with the error of a trace that did not load, and what to do.
void draw_load_error(const ViewerState& s);

}  // namespace ss::viz
