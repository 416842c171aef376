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

/// Bytes in decimal units, as GPU memory and link speeds are quoted and as
/// every planner output counts them: 1 kB = 1e3, 1 MB = 1e6, 1 GB = 1e9,
/// 1 TB = 1e12 bytes. 80e9 -> "80.00 GB", 512 -> "512 B". The viewer's GBS
/// calculator prints the planner's numbers with it, so both say the same.
std::string decimal_bytes(double bytes);

}  // namespace ss
