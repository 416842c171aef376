// view_model.cpp — build every panel's data from one trace (see view_model.h).
#include "viz/model/view_model.h"

namespace ss::viz {

std::unique_ptr<ViewModel> build_view_model(Trace trace, const std::string& source) {
    RunInfo run = read_run_info(trace);
    auto vm = std::unique_ptr<ViewModel>(new ViewModel{source, std::move(trace), run,
                                                       ProcessMesh(run.world, run.shape), {}, {}, {}, {}, 0, {}});
    vm->timeline = build_timeline(vm->trace);
    vm->memory = build_memory(vm->trace);
    vm->grid = layout_grid(vm->mesh);
    vm->summary = summarize_trace(vm->trace);
    vm->steps = int(vm->timeline.steps.size());
    vm->pipeline = read_pipeline(vm->trace, run.shape, run.has_mesh);
    return vm;
}

}  // namespace ss::viz
