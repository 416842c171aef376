// trace_nodes.cpp — a rank's moved bytes per step, inside its node and across nodes (see trace_nodes.h).
#include "comm/trace/trace_nodes.h"

#include <limits>
#include <map>
#include <utility>

#include "comm/trace/trace_overlap.h"
#include "comm/trace/trace_summary.h"
#include "core/text.h"

namespace ss {

bool group_spans_nodes(const std::vector<int>& group, int gpus_per_node) {
    if (gpus_per_node <= 0 || group.empty()) return false;
    const int node = group.front() / gpus_per_node;
    for (int r : group)
        if (r / gpus_per_node != node) return true;
    return false;
}

double moved_across_nodes(const TraceEvent& ev, int gpus_per_node) {
    if (!group_spans_nodes(ev.group, gpus_per_node)) return 0;
    return double(ev.bytes) * busbw_factor(ev.name, int(ev.group.size()));
}

std::vector<NodeTrafficRow> node_traffic_by_step(const std::vector<TraceEvent>& events, int gpus_per_node) {
    std::vector<NodeTrafficRow> out;
    if (gpus_per_node <= 0) return out;
    // (rank, order) -> row; the same steps as the overlap table: setup (label step <= 0) first, the total last.
    std::map<std::pair<int, int>, NodeTrafficRow> rows;
    for (const TraceEvent& ev : events) {
        if (ev.kind != TraceEvent::Kind::collective) continue;
        const int step = ev.label.step > 0 ? ev.label.step : kOverlapSetup;
        const int order = step == kOverlapSetup ? 0 : step;
        const double moved = double(ev.bytes) * busbw_factor(ev.name, int(ev.group.size()));
        const double across = moved_across_nodes(ev, gpus_per_node);
        for (const auto& [key, s] :
             {std::make_pair(order, step), std::make_pair(std::numeric_limits<int>::max(), kOverlapTotal)}) {
            NodeTrafficRow& r = rows[{ev.rank, key}];
            r.rank = ev.rank;
            r.step = s;
            r.calls += 1;
            r.across += across;
            r.inside += moved - across;
        }
    }
    out.reserve(rows.size());
    for (auto& [key, r] : rows) out.push_back(r);
    return out;
}

std::string format_node_traffic_table(const std::vector<NodeTrafficRow>& rows, int gpus_per_node, bool exact) {
    auto b = [&](double v) {
        return exact ? std::to_string(v < 1.8e19 ? (unsigned long long)(v + 0.5) : ~0ULL) : bytes_str(v);
    };
    std::string out;
    auto put = [&](const char* fmt, auto... args) { out += strprintf(fmt, args...); };
    put("crosses nodes (%d ranks per node: ranks r, s share one when r / %d == s / %d)\n", gpus_per_node,
        gpus_per_node, gpus_per_node);
    put("%-6s %-7s %8s %14s %14s %8s\n", "rank", "step", "calls", "inside node", "across nodes", "across");
    for (const NodeTrafficRow& r : rows) {
        const std::string step = r.step == kOverlapTotal   ? "total"
                                 : r.step == kOverlapSetup ? "setup"
                                                           : std::to_string(r.step);
        const double moved = r.inside + r.across;
        put("%-6d %-7s %8llu %14s %14s %7.1f%%\n", r.rank, step.c_str(), (unsigned long long)r.calls,
            b(r.inside).c_str(), b(r.across).c_str(), moved > 0 ? 100.0 * r.across / moved : 0.0);
    }
    return out;
}

int trace_gpus_per_node(const nlohmann::json& other_data) {
    if (!other_data.is_object()) return 0;
    auto it = other_data.find("gpus_per_node");
    if (it == other_data.end() || !it->is_number_integer()) return 0;
    const int64_t n = it->get<int64_t>();
    return n > 0 && n <= std::numeric_limits<int>::max() ? int(n) : 0;
}

}  // namespace ss
