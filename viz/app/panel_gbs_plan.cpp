// panel_gbs_plan.cpp — the planner's columns of the GBS calculator.
//
// Memory per rank, communication per step by payload and predicted step time
// come from the analytic planner (src/plan/plan.h), which is not in this build
// yet: until it lands this section says so.
#include "viz/app/panels.h"
#include "viz/app/widgets.h"

namespace ss::viz {

void plan_section(ViewerState& s, const GbsResult& r) {
    (void)s;
    (void)r;
    ImGui::TextUnformatted("memory per rank, communication per step, step time");
    ImGui::TextDisabled("(the planner, src/plan/, is not in this build yet)");
}

}  // namespace ss::viz
