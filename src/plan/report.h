// report.h — the planner's answers as people and programs read them: the
// text `shardscope plan` prints and the JSON it writes with --json.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "plan/search.h"

namespace ss {

/// One layout written out: model, cluster, GBS arithmetic, memory by category,
/// every collective of a step, and where the step's time goes.
std::string format_plan(const PlanResult& r);

/// The search's best layouts as a table, fastest first, with the constraints and its stats.
std::string format_search(const SearchInput& in, const std::vector<PlanResult>& best, const SearchStats& stats);

/// One layout as JSON (every number of format_plan, bytes exact).
nlohmann::json plan_json(const PlanResult& r);

/// The search as JSON: constraints, stats and each result as plan_json.
nlohmann::json search_json(const SearchInput& in, const std::vector<PlanResult>& best, const SearchStats& stats);

/// 1234567 -> "1,234,567".
std::string commas(int64_t v);

}  // namespace ss
