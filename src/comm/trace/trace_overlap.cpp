// trace_overlap.cpp — comm time as a union of intervals, exposed time, % hidden (see trace_overlap.h).
#include "comm/trace/trace_overlap.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <utility>

#include "core/text.h"

namespace ss {

double issued_time_us(const TraceEvent& ev) {
    // A value after the start (a clock read out of order) or not a number is taken as "not issued early".
    return ev.issued_us >= 0 && ev.issued_us < ev.ts_us ? ev.issued_us : ev.ts_us;
}

double exposed_time_us(const TraceEvent& ev) {
    const double dur = std::isfinite(ev.dur_us) ? std::max(ev.dur_us, 0.0) : 0.0;
    if (!(ev.exposed_us >= 0)) return dur;  // -1 (not recorded), or NaN: the whole call
    return std::min(ev.exposed_us, dur);
}

bool has_overlap_fields(const TraceEvent& ev) { return ev.issued_us >= 0 || ev.exposed_us >= 0; }

namespace {

// The calls of one row while it is being added up.
struct Pending {
    OverlapRow row;
    std::vector<std::pair<double, double>> spans;  // [ts, ts + dur] of each call
};

void add_call(Pending& p, const TraceEvent& ev) {
    const double dur = std::isfinite(ev.dur_us) ? std::max(ev.dur_us, 0.0) : 0.0;
    p.row.calls += 1;
    if (issued_time_us(ev) < ev.ts_us) p.row.async_calls += 1;
    p.row.exposed_us += exposed_time_us(ev);
    if (std::isfinite(ev.ts_us)) p.spans.emplace_back(ev.ts_us, ev.ts_us + dur);
}

// Length of the union of intervals: sort by start, merge what touches, add up.
double union_length(std::vector<std::pair<double, double>>& spans) {
    std::sort(spans.begin(), spans.end());
    double total = 0, a = 0, b = 0;
    bool open = false;
    for (const auto& [s, e] : spans) {
        if (open && s <= b) {
            b = std::max(b, e);
            continue;
        }
        if (open) total += b - a;
        a = s;
        b = e;
        open = true;
    }
    if (open) total += b - a;
    return total;
}

OverlapRow finish(Pending& p) {
    p.row.comm_us = union_length(p.spans);
    p.row.exposed_us = std::min(p.row.exposed_us, p.row.comm_us);  // overlapping exposed parts count once
    return p.row;
}

}  // namespace

std::vector<OverlapRow> overlap_by_step(const std::vector<TraceEvent>& events) {
    // (rank, order) -> row; order puts setup first and the total last within a rank.
    std::map<std::pair<int, int>, Pending> rows;
    for (const TraceEvent& ev : events) {
        if (ev.kind != TraceEvent::Kind::collective) continue;
        const int step = ev.label.step > 0 ? ev.label.step : kOverlapSetup;
        const int order = step == kOverlapSetup ? 0 : step;
        for (const auto& [key, s] : {std::make_pair(order, step), std::make_pair(std::numeric_limits<int>::max(), kOverlapTotal)}) {
            Pending& p = rows[{ev.rank, key}];
            p.row.rank = ev.rank;
            p.row.step = s;
            add_call(p, ev);
        }
    }
    std::vector<OverlapRow> out;
    out.reserve(rows.size());
    for (auto& [key, p] : rows) out.push_back(finish(p));
    return out;
}

std::string format_overlap_table(const std::vector<OverlapRow>& rows) {
    std::string out;
    auto put = [&](const char* fmt, auto... args) { out += strprintf(fmt, args...); };
    put("%-6s %-7s %8s %8s %12s %13s %9s\n", "rank", "step", "calls", "async", "comm (ms)", "exposed (ms)",
        "hidden");
    for (const OverlapRow& r : rows) {
        const std::string step = r.step == kOverlapTotal   ? "total"
                                 : r.step == kOverlapSetup ? "setup"
                                                           : std::to_string(r.step);
        put("%-6d %-7s %8llu %8llu %12.3f %13.3f %8.1f%%\n", r.rank, step.c_str(), (unsigned long long)r.calls,
            (unsigned long long)r.async_calls, r.comm_us / 1e3, r.exposed_us / 1e3, 100.0 * r.hidden_fraction());
    }
    return out;
}

std::string emulated_links_note(const nlohmann::json& other_data) {
    if (!other_data.is_object()) return "";
    auto it = other_data.find("emulated_links");
    return it != other_data.end() && it->is_string() ? it->get<std::string>() : "";
}

double emulated_time_scale(const nlohmann::json& other_data) {
    // The number itself (train writes it since 2026-12-06); older traces carry it in the sentence only.
    if (other_data.is_object() && other_data.contains("emulated_time_scale") &&
        other_data["emulated_time_scale"].is_number()) {
        const double scale = other_data["emulated_time_scale"].get<double>();
        return std::isfinite(scale) && scale > 0 ? scale : 1;
    }
    const std::string note = emulated_links_note(other_data);
    const char* kScaled = "time-scaled x ";
    const size_t at = note.find(kScaled);
    if (at == std::string::npos) return 1;
    const double scale = std::strtod(note.c_str() + at + std::strlen(kScaled), nullptr);
    return std::isfinite(scale) && scale > 0 ? scale : 1;
}

}  // namespace ss
