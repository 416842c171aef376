// trace_summary.cpp — the collectives of a trace added up per (axis, op, payload), then the overlap table.
#include "comm/trace/trace_summary.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include "core/check.h"
#include "core/text.h"

namespace ss {

namespace {

// Ops in the order a step meets them, for sorting rows.
int op_order(const std::string& op) {
    static const char* kOps[] = {"all_reduce", "reduce_scatter", "all_gather", "all_to_all",
                                 "broadcast",  "send",           "recv",       "barrier"};
    for (int i = 0; i < 8; ++i)
        if (op == kOps[i]) return i;
    return 8;
}

// The time of a call: the device's, measured with CUDA events, where the
// backend measured it (nccl); else the host's wall time inside the call.
double call_time_us(const TraceEvent& ev) { return ev.gpu_us >= 0 ? ev.gpu_us : ev.dur_us; }

void add(CollectiveTotals& t, const TraceEvent& ev, int gpus_per_node) {
    t.calls += 1;
    t.bytes += ev.bytes;
    t.time_us += call_time_us(ev);
    t.bus_bytes += double(ev.bytes) * busbw_factor(ev.name, int(ev.group.size()));
    t.across_bytes += moved_across_nodes(ev, gpus_per_node);
}

// "0-7", "1, 3-5": a set of numbers as runs.
std::string runs_text(const std::set<int>& values) {
    std::string out;
    for (auto it = values.begin(); it != values.end();) {
        const int first = *it;
        int last = first;
        while (++it != values.end() && *it == last + 1) ++last;
        out += (out.empty() ? "" : ", ") + std::to_string(first) + (last > first ? "-" + std::to_string(last) : "");
    }
    return out.empty() ? "none" : out;
}

// @p text right-aligned in @p width columns.
std::string pad_left(const std::string& text, size_t width) {
    return text.size() >= width ? text : std::string(width - text.size(), ' ') + text;
}

// The axis column's width: 10, or the longest axis name ("dp_shard+sp" is 11), so the columns stay aligned.
template <class Row, class Axis>
int axis_width(const std::vector<Row>& rows, Axis axis) {
    size_t w = 10;
    for (const Row& r : rows) w = std::max(w, axis(r).size());
    return int(std::min<size_t>(w, 200));  // a damaged name widens its table, and not without end
}

}  // namespace

int event_step(const TraceEvent& ev) {
    if (ev.kind == TraceEvent::Kind::collective) return ev.label.step;
    if (!ev.args.is_object()) return -1;
    auto it = ev.args.find("step");
    return it != ev.args.end() && fits_int(*it, -1) ? int(it->get<int64_t>()) : -1;
}

void check_trace_filter(const Trace& trace, const TraceFilter& filter) {
    std::set<int> ranks, steps;
    for (const TraceEvent& ev : trace.events) {
        ranks.insert(ev.rank);
        if (event_step(ev) >= 0) steps.insert(event_step(ev));
    }
    SS_CHECK(filter.rank < 0 || ranks.count(filter.rank), "--rank " << filter.rank << ": the trace has no events of rank "
                                                                   << filter.rank << "; its ranks are "
                                                                   << runs_text(ranks));
    SS_CHECK(filter.step < 0 || steps.count(filter.step), "--step " << filter.step << ": the trace has no events of step "
                                                                   << filter.step << "; its steps are "
                                                                   << runs_text(steps));
}

std::string bytes_str(double bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024 && u < 4) {
        bytes /= 1024;
        ++u;
    }
    return u == 0 ? strprintf("%.0f %s", bytes, units[u]) : strprintf("%.1f %s", bytes, units[u]);
}

TraceSummary summarize_trace(const Trace& trace, const TraceFilter& filter, int gpus_per_node) {
    TraceSummary s;
    s.world = trace.world();
    {  // a trace cut down by hand, or damaged: which ranks the run had and the file lacks
        const nlohmann::json& od = trace.other_data;
        if (od.is_object() && od.contains("mesh") && od["mesh"].is_object() && od["mesh"].contains("world") &&
            od["mesh"]["world"].is_number_integer())
            s.mesh_world = int(std::clamp<int64_t>(od["mesh"]["world"].get<int64_t>(), 0, 1 << 24));
        const int n = std::max(s.world, s.mesh_world);  // read_checked_trace holds ranks under 4096
        std::vector<bool> seen(size_t(n <= (1 << 20) ? n : 0), false);
        for (const TraceEvent& ev : trace.events)
            if (size_t(ev.rank) < seen.size()) seen[size_t(ev.rank)] = true;
        for (size_t r = 0; r < seen.size(); ++r)
            if (!seen[r]) s.missing_ranks.push_back(int(r));
    }
    s.gpus_per_node = gpus_per_node > 0 ? gpus_per_node : trace_gpus_per_node(trace.other_data);
    const int gpn = s.gpus_per_node;
    std::map<std::tuple<std::string, int, std::string, int>, CollectiveTotals> rows;
    std::map<int, CollectiveTotals> by_payload;
    std::vector<TraceEvent> picked;  // the filtered collectives, for the overlap table
    for (const TraceEvent& ev : trace.events) {
        if (filter.rank >= 0 && ev.rank != filter.rank) continue;
        if (filter.step >= 0 && event_step(ev) != filter.step) continue;
        if (ev.kind == TraceEvent::Kind::span) ++s.spans;
        if (ev.kind != TraceEvent::Kind::collective) continue;
        picked.push_back(ev);
        ++s.collectives;
        if (ev.gpu_us >= 0) ++s.gpu_timed;
        CollectiveTotals& row = rows[{ev.axis, op_order(ev.name), ev.name, int(ev.label.payload)}];
        row.axis = ev.axis;
        row.op = ev.name;
        row.payload = ev.label.payload;
        add(row, ev, gpn);
        CollectiveTotals& p = by_payload[int(ev.label.payload)];
        p.payload = ev.label.payload;
        add(p, ev, gpn);
        add(s.total, ev, gpn);
    }
    for (auto& [key, row] : rows) s.rows.push_back(row);
    for (auto& [key, row] : by_payload) s.by_payload.push_back(row);
    s.overlap = overlap_by_step(picked);
    s.nodes = node_traffic_by_step(picked, gpn);
    s.emulated_links = emulated_links_note(trace.other_data);
    s.time_scale = emulated_time_scale(trace.other_data);
    s.step_time = step_time_check(trace.other_data);
    return s;
}

std::string format_trace_summary(const TraceSummary& s, const std::string& source, bool exact) {
    // moved (bytes x factor) may pass 2^64 in a hand-made trace: clamp before converting.
    auto b = [&](double v) {
        return exact ? std::to_string(v < 1.8e19 ? (unsigned long long)(v + 0.5) : ~0ULL) : bytes_str(v);
    };
    std::string out;
    auto put = [&](const char* fmt, auto... args) { out += strprintf(fmt, args...); };
    put("%s: %d ranks, %llu collective events, %llu compute spans\n\n", source.c_str(), s.world,
        (unsigned long long)s.collectives, (unsigned long long)s.spans);
    if (!s.missing_ranks.empty())  // before any total: they are of the ranks the file holds
        out += "INCOMPLETE: " + std::string(s.mesh_world > 0 ? "the run had " + std::to_string(s.mesh_world) +
                                                                    " ranks (otherData.mesh); "
                                                              : "") +
               "no event of rank" + (s.missing_ranks.size() > 1 ? "s " : " ") + join_ints(s.missing_ranks) +
               " in this file: every total below is of the ranks it holds\n\n";
    // Before any number: the times below are the emulation's sleeps, not a network's.
    if (!s.emulated_links.empty()) out += s.emulated_links + "\n\n";
    const std::string step_time = format_step_time_check(s.step_time, !s.emulated_links.empty());
    if (s.rows.empty()) {
        out += "no collectives in this trace\n" + step_time;
        return out;
    }
    // The "across nodes" column only where the trace knows its nodes, so other traces print as before.
    const bool nodes = s.gpus_per_node > 0;
    auto across = [&](const CollectiveTotals& r) { return nodes ? " " + pad_left(b(r.across_bytes), 13) : ""; };
    const int axis_w = axis_width(s.rows, [](const CollectiveTotals& r) -> const std::string& { return r.axis; });
    put("%-*s %-15s %-9s %8s %12s %12s %12s %13s %13s%s\n", axis_w, "axis", "op", "payload", "calls", "bytes", "moved",
        "time (ms)", "algbw (GB/s)", "busbw (GB/s)", nodes ? "  across nodes" : "");
    for (const auto& r : s.rows)
        put("%-*s %-15s %-9s %8llu %12s %12s %12.3f %13.3f %13.3f%s\n", axis_w, r.axis.c_str(), r.op.c_str(),
            payload_name(r.payload), (unsigned long long)r.calls, b(double(r.bytes)).c_str(), b(r.bus_bytes).c_str(),
            r.time_us / 1e3, r.algbw_gbs(s.time_scale), r.busbw_gbs(s.time_scale), across(r).c_str());
    out += "\n";
    put("%-10s %8s %12s %12s %12s %13s %13s%s\n", "payload", "calls", "bytes", "moved", "time (ms)", "algbw (GB/s)",
        "busbw (GB/s)", nodes ? "  across nodes" : "");
    auto total_line = [&](const char* name, const CollectiveTotals& r) {
        put("%-10s %8llu %12s %12s %12.3f %13.3f %13.3f%s\n", name, (unsigned long long)r.calls,
            b(double(r.bytes)).c_str(), b(r.bus_bytes).c_str(), r.time_us / 1e3, r.algbw_gbs(s.time_scale),
            r.busbw_gbs(s.time_scale), across(r).c_str());
    };
    for (const auto& r : s.by_payload) total_line(payload_name(r.payload), r);
    total_line("total", s.total);
    out +=
        "\ncalls, bytes and time are summed over every rank's own events (use --rank and --step to\n"
        "pick some). bytes are per rank as nccl-tests counts them; moved = bytes x factor, what a\n"
        "rank sends on a ring (all_reduce 2(n-1)/n; all_gather, reduce_scatter, all_to_all (n-1)/n;\n"
        "broadcast, send, recv 1); algbw = bytes / time; busbw = algbw x factor. See docs/trace-format.md.\n";
    if (s.time_scale != 1)
        put("time is the run's, time-scaled x %g by --emulate; algbw and busbw are the emulated cluster's:\n"
            "bytes / (time / %g), with the scale as otherData.emulated_links rounds it.\n",
            s.time_scale, s.time_scale);
    if (s.gpu_timed > 0)
        put("times: CUDA events (device time) where measured (%llu of %llu events), else host wall time.\n",
            (unsigned long long)s.gpu_timed, (unsigned long long)s.collectives);
    if (nodes) {
        out += "\n" + format_node_traffic_table(s.nodes, s.gpus_per_node, exact);
        out +=
            "\nacross nodes = the moved bytes of calls whose group spans more than one node (for send/recv:\n"
            "src and dst), all of a call or none; inside node = the rest. It is the tier the bytes travel\n";
        // "as two-tier links time them" only where the run had such links (describe(): "..., N ranks per node").
        if (s.emulated_links.find(" ranks per node") != std::string::npos)
            out +=
                "on, as two-tier links time them (a ring over two nodes crosses on 2 of its hops, and\n"
                "every hop waits for them). See src/comm/trace/trace_nodes.h.\n";
        else
            out +=
                "on (a ring over two nodes crosses on 2 of its hops, and every hop waits for them), the rule\n"
                "two-tier emulated links time calls by; this run had none. See src/comm/trace/trace_nodes.h.\n";
    }
    out += "\noverlap\n" + format_overlap_table(s.overlap);
    out +=
        "\ncomm = the union of the rank's calls [ts, ts + dur] (calls in flight together count once);\n"
        "exposed = the time the rank was blocked in them (exposed_us; a blocking call's whole dur),\n"
        "at most comm; hidden = 1 - exposed / comm, the share that ran under compute (Holistic Trace\n"
        "Analysis' comm/compute overlap). async = calls issued before they ran. setup = before step 1.\n"
        "See src/comm/trace/trace_overlap.h.\n";
    return out + step_time;
}

std::vector<TraceEvent> largest_calls(const Trace& trace, const TraceFilter& filter, int n) {
    std::vector<TraceEvent> calls;
    for (const TraceEvent& ev : trace.events) {
        if (ev.kind != TraceEvent::Kind::collective) continue;
        if (filter.rank >= 0 && ev.rank != filter.rank) continue;
        if (filter.step >= 0 && event_step(ev) != filter.step) continue;
        calls.push_back(ev);
    }
    // One call's copies (its members' events) side by side: the calls of equal size by
    // their slowest copy's time, each call's copies by their own.
    auto call_of = [](const TraceEvent& e) {
        return std::make_tuple(e.bytes, e.name, e.axis, e.group, e.label.step, e.label.layer, int(e.label.phase),
                               e.label.microbatch, int(e.label.payload));
    };
    using Call = decltype(call_of(TraceEvent{}));
    std::map<Call, double> slowest;
    for (const TraceEvent& e : calls) {
        double& t = slowest[call_of(e)];
        t = std::max(t, call_time_us(e));
    }
    struct Row {
        const TraceEvent* ev;
        const Call* call;
        double call_time;
    };
    std::vector<Row> rows;
    rows.reserve(calls.size());
    for (const TraceEvent& e : calls) {
        auto it = slowest.find(call_of(e));
        rows.push_back(Row{&e, &it->first, it->second});
    }
    auto larger = [](const Row& x, const Row& y) {
        const TraceEvent &a = *x.ev, &b = *y.ev;
        if (a.bytes != b.bytes) return a.bytes > b.bytes;
        if (x.call != y.call) return x.call_time != y.call_time ? x.call_time > y.call_time : *x.call < *y.call;
        if (call_time_us(a) != call_time_us(b)) return call_time_us(a) > call_time_us(b);
        return std::tie(a.rank, a.ts_us) < std::tie(b.rank, b.ts_us);
    };
    const size_t keep = std::min(rows.size(), size_t(std::max(n, 0)));
    std::partial_sort(rows.begin(), rows.begin() + keep, rows.end(), larger);
    std::vector<TraceEvent> out;
    out.reserve(keep);
    for (size_t i = 0; i < keep; ++i) out.push_back(*rows[i].ev);
    return out;
}

std::string format_largest_calls(const std::vector<TraceEvent>& calls, bool exact) {
    auto b = [&](double v) { return exact ? std::to_string((unsigned long long)(v + 0.5)) : bytes_str(v); };
    auto num = [](int v) { return v >= 0 ? std::to_string(v) : std::string("-"); };
    const int axis_w = axis_width(calls, [](const TraceEvent& ev) -> const std::string& { return ev.axis; });
    std::string out = strprintf("%-15s %-*s %-9s %12s %12s %10s %5s %5s %5s  %s\n", "op", axis_w, "axis", "payload",
                                "bytes", "moved", "time (ms)", "rank", "step", "layer", "group");
    for (const TraceEvent& ev : calls) {
        std::string group;  // last, and unpadded: a group of 64 ranks is long
        for (int r : ev.group) group += (group.empty() ? "" : ",") + std::to_string(r);
        out += strprintf("%-15s %-*s %-9s %12s %12s %10.3f %5d %5s %5s  ", ev.name.c_str(), axis_w, ev.axis.c_str(),
                         payload_name(ev.label.payload), b(double(ev.bytes)).c_str(),
                         b(double(ev.bytes) * busbw_factor(ev.name, int(ev.group.size()))).c_str(),
                         call_time_us(ev) / 1e3, ev.rank, num(ev.label.step).c_str(), num(ev.label.layer).c_str());
        out += "[" + group + "]\n";
    }
    if (calls.empty()) out += "no collectives\n";
    return out;
}

}  // namespace ss
