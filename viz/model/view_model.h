// view_model.h — everything the panels draw, computed once from a trace.
//
// The panels (viz/app/panel_*.cpp) only read this: a ViewModel is plain data
// built by plain functions, so the tests (tests/test_viz.cpp) check every
// number a panel shows without a window or OpenGL.
//
//     trace file --load_trace (load.h)--> Trace --build_view_model--> ViewModel
//                                                                    |- run       (run_info.h)  otherData
//                                                                    |- timeline  (timeline.h)  lanes, bars, instances
//                                                                    |- memory    (memory.h)    series per rank
//                                                                    |- grid      (grid.h)      cell positions
//                                                                    |- pipeline  (pipeline.h)  the schedule as boxes
//                                                                    '- summary   (trace_summary.h) comm totals
#pragma once

#include <memory>
#include <string>

#include "comm/trace/trace.h"
#include "comm/trace/trace_summary.h"
#include "viz/model/grid.h"
#include "viz/model/memory.h"
#include "viz/model/pipeline.h"
#include "viz/model/run_info.h"
#include "viz/model/timeline.h"

namespace ss::viz {

/// A loaded trace, ready to draw.
struct ViewModel {
    std::string source;        ///< the file it came from
    Trace trace;               ///< the events, as read
    RunInfo run;               ///< otherData
    ProcessMesh mesh;          ///< the rank grid (from run.shape)
    TimelineModel timeline;    ///< lanes
    MemoryModel memory;        ///< memory series
    GridLayout grid;           ///< the Grid panel's cells
    TraceSummary summary;      ///< all collectives added up (the Comm panel filters its own)
    int steps = 0;             ///< distinct training steps in the trace
    PipelineView pipeline;     ///< otherData.pipeline simulated, and the measured boxes (pp > 1)
};

/// Builds the view of @p trace (taken over). Never throws for a trace that load_trace accepted.
std::unique_ptr<ViewModel> build_view_model(Trace trace, const std::string& source);

}  // namespace ss::viz
