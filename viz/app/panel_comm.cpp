// panel_comm.cpp — the Comm summary panel: the trace's collectives added up.
//
// The same table as `shardscope trace summary FILE` (src/comm/trace/trace_summary.cpp):
// one row per (axis, op, payload), then one per payload, then the total, for all
// ranks or one, all steps or one. Each rank records its own side of every call,
// so calls, bytes and time are sums over the ranks' events.
//
//     bytes = per rank per call, as nccl-tests counts them (docs/trace-format.md)
//     moved = bytes x busbw factor: what each rank really sends on a ring
//             (the ZeRO paper's communication volume)
//     algbw = bytes / time,   busbw = algbw x factor   (nccl-tests doc/PERFORMANCE.md)
#include <array>
#include <cstdio>
#include <string>

#include "viz/app/panels.h"
#include "viz/app/widgets.h"

namespace ss::viz {

namespace {

struct Column {
    const char* name;
    const char* help;
};
const Column kColumns[] = {
    {"axis", "The mesh axis of the group (args.axis): dp, dp_shard, dp_rep, tp, sp, pp, world."},
    {"op", "The collective: all_reduce, reduce_scatter, all_gather, all_to_all, broadcast, send, recv, barrier."},
    {"payload", "What the bytes are: param, grad, act, act_grad, optim, scalar (the timeline's colours)."},
    {"calls", "Events: one per call per rank, summed over the ranks shown."},
    {"bytes", "Sum of args.bytes: per rank per call as nccl-tests counts them - all_reduce: the buffer; "
              "all_gather: the whole received buffer (count_per_rank x n x size); reduce_scatter: the whole "
              "sent buffer; broadcast, send, recv: the message (docs/trace-format.md)."},
    {"moved", "bytes x busbw factor: what each rank actually sends on a ring - all_reduce 2(n-1)/n, "
              "all_gather / reduce_scatter / all_to_all (n-1)/n, broadcast / send / recv 1. This is the ZeRO "
              "paper's communication volume: DDP moves 2 Psi per step, ZeRO-3 3 Psi (sec. 7)."},
    {"time", "Time inside the calls, summed over ranks; it includes waiting for late peers."},
    {"algbw", "algbw = bytes / time in GB/s (1e9 bytes/s), as nccl-tests reports it. A run time-scaled by "
              "--emulate: bytes / (time / the time scale), the emulated cluster's."},
    {"busbw", "busbw = algbw x factor: the bandwidth each link carried, comparable to the hardware's link "
              "bandwidth whatever n is (nccl-tests doc/PERFORMANCE.md)."},
};

// One row of the table; @p time_scale: --emulate's, so algbw and busbw are the emulated cluster's (trace_summary.h).
void row(const CollectiveTotals& t, const char* axis, const char* op, bool show_payload, bool bold, double time_scale) {
    ImGui::TableNextRow();
    if (bold) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, IM_COL32(60, 64, 80, 255));
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(axis);
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(op);
    ImGui::TableNextColumn();
    if (show_payload) {
        swatch(payload_color(t.payload));
        ImGui::TextUnformatted(payload_name(t.payload));
    }
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(fmt_int(t.calls).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(fmt_bytes(double(t.bytes)).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(fmt_bytes(t.bus_bytes).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(fmt_time_us(t.time_us).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(fmt_gbs(t.algbw_gbs(time_scale)).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(fmt_gbs(t.busbw_gbs(time_scale)).c_str());
}

// The rank and step the one-rank lines below read: the filter's, else rank 0 and the
// second step (the first is warm-up), or the only one.
TraceFilter one_rank_step(const ViewerState& s) {
    const CommUi& ui = s.comm;
    const auto& steps = s.vm->timeline.steps;
    TraceFilter f;
    f.rank = ui.filter.rank >= 0 ? ui.filter.rank : 0;
    f.step = ui.filter.step >= 0 ? ui.filter.step : (steps.size() >= 2 ? steps[1].step : (steps.empty() ? -1 : steps[0].step));
    return f;
}

// One rank, one step: how much of its communication hid under its compute
// (src/comm/trace/trace_overlap.h, the table `trace summary` prints under "overlap").
void draw_overlap_line(ViewerState& s) {
    const ViewModel& vm = *s.vm;
    CommUi& ui = s.comm;
    const TraceFilter f = one_rank_step(s);
    if (f.rank != ui.overlap_for.rank || f.step != ui.overlap_for.step || vm.trace.events.size() != ui.overlap_events) {
        ui.overlap = OverlapRow{};
        for (const OverlapRow& r : overlap_by_step(vm.trace.events))
            if (r.rank == f.rank && r.step == f.step) ui.overlap = r;
        ui.overlap_for = f;
        ui.overlap_events = vm.trace.events.size();
    }
    const OverlapRow& o = ui.overlap;
    if (o.calls == 0) {
        ImGui::TextDisabled("rank %d, step %d: no collectives", f.rank, f.step);
        return;
    }
    ImGui::TextWrapped("rank %d, step %d: comm %.2f ms, exposed %.2f ms, %.0f%% hidden under compute (%s of %s calls "
                "started ahead)", f.rank, f.step, o.comm_us / 1e3, o.exposed_us / 1e3, 100 * o.hidden_fraction(),
                fmt_int(o.async_calls).c_str(), fmt_int(o.calls).c_str());
    help_marker("comm = the union of the rank's calls in the step (two in flight at once count once); exposed = "
                "the time it was blocked in a call or a wait; hidden = 1 - exposed / comm (Holistic Trace "
                "Analysis: comm/compute overlap). `shardscope trace summary FILE` prints it for every rank and "
                "step; the timeline marks exposed time in dark red. With emulated links the times are "
                "emulated, not measured.");
}

// One rank, one step, measured beside the planner's prediction (src/plan/comm.h) by payload.
void draw_measured_vs_predicted(ViewerState& s) {
    const ViewModel& vm = *s.vm;
    CommUi& ui = s.comm;
    const Prediction& pred = vm.run.predicted;
    const TraceFilter f = one_rank_step(s);
    if (f.rank != ui.compared_for.rank || f.step != ui.compared_for.step) {
        try {
            ui.one_step = summarize_trace(vm.trace, f);
        } catch (const std::exception&) {
            ui.one_step = TraceSummary{};
        }
        ui.compared_for = f;
    }
    ImGui::Text("rank %d, step %d: measured vs predicted", f.rank, f.step);
    help_marker("Bytes per step as the trace counts them (nccl-tests' convention) for one rank, beside the "
                "planner's prediction for the same run (otherData.prediction, written by `train`; "
                "src/plan/comm.h: ZeRO paper sec. 7 for DP and ZeRO, Megatron for TP, Ulysses/ring for SP, "
                "per-boundary sends for PP). The prediction is for global rank 0 (pipeline stage 0); ranks "
                "of the same stage move the same bytes. Pick a rank and a step above to compare another.");
    std::array<uint64_t, kPayloads> measured{};
    for (const CollectiveTotals& t : ui.one_step.by_payload) measured[size_t(t.payload)] = t.bytes;
    const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_BordersInnerV;
    if (ImGui::BeginTable("predicted", 4, flags)) {
        ImGui::TableSetupColumn("payload");
        ImGui::TableSetupColumn("measured");
        ImGui::TableSetupColumn("predicted");
        ImGui::TableSetupColumn("");
        ImGui::TableHeadersRow();
        for (int p = 0; p < kPayloads; ++p) {
            const uint64_t m = measured[size_t(p)], q = pred.bytes_on_step(size_t(p), f.step);
            if (m == 0 && q == 0) continue;
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            swatch(payload_color(Payload(p)));
            ImGui::TextUnformatted(payload_name(Payload(p)));
            ImGui::TableNextColumn();
            ImGui::Text("%s B", fmt_int(m).c_str());
            ImGui::TableNextColumn();
            ImGui::Text("%s B", fmt_int(q).c_str());
            ImGui::TableNextColumn();
            gap_cell(m, q);
        }
        uint64_t m_total = 0, q_total = 0;
        for (int p = 0; p < kPayloads; ++p) {
            m_total += measured[size_t(p)];
            q_total += pred.bytes_on_step(size_t(p), f.step);
        }
        ImGui::TableNextRow();
        ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, IM_COL32(60, 64, 80, 255));
        ImGui::TableNextColumn();
        ImGui::TextUnformatted("total");
        ImGui::TableNextColumn();
        ImGui::Text("%s B", fmt_int(m_total).c_str());
        ImGui::TableNextColumn();
        ImGui::Text("%s B", fmt_int(q_total).c_str());
        ImGui::TableNextColumn();
        gap_cell(m_total, q_total);
        ImGui::EndTable();
    }
}

// The whole run's step time beside the planner's prediction, as `trace summary` ends
// (src/comm/trace/trace_prediction.h); summarize_trace read it from otherData.
void draw_step_time(const StepTimeCheck& st, bool emulated) {
    if (st.steps == 0) return;
    const std::string which = measured_steps_text(st);  // as trace summary says it (trace_prediction.h)
    if (st.predicted_ms > 0) {
        ImGui::TextWrapped("step time: measured %.2f ms (%s%s), predicted %.2f ms%s: measured / predicted %.2f",
                           st.measured_ms, which.c_str(), emulated ? ", emulated links" : "", st.predicted_ms,
                           st.caveat.empty() ? "" : " (modelled otherwise than the run: see (?))", st.ratio());
    } else {
        ImGui::TextWrapped("step time: measured %.2f ms (%s%s); no prediction", st.measured_ms, which.c_str(),
                    emulated ? ", emulated links" : "");
    }
    help_marker(("The run's own step times (otherData.steps; the trace's first step warms up and is left out "
                 "when there are more) beside the planner's prediction for the layout that ran (otherData.prediction: a "
                 "prediction, for hardware " +
                 (st.hardware.empty() ? std::string("?") : st.hardware) +
                 (st.source.empty() && !emulated ? std::string() : "; " + prediction_hardware_text(st, emulated)) +
                 (st.unavailable.empty() ? std::string() : "; none here: " + st.unavailable) +
                 (st.malformed.empty() ? std::string() : "; none here, the trace's is malformed: " + st.malformed) +
                 (st.caveat.empty() ? std::string() : "; it differs from the run: " + st.caveat) +
                 "). Above 1 the run was slower than predicted. `shardscope trace summary FILE` prints the same.")
                    .c_str());
}

}  // namespace

void draw_comm(ViewerState& s, ImVec2 size) {
    (void)size;
    const ViewModel& vm = *s.vm;
    CommUi& ui = s.comm;
    heading("Comm summary");
    ImGui::SameLine();
    ImGui::TextDisabled("collectives by axis, op and payload");
    // filters
    ImGui::SetNextItemWidth(100);
    const std::string rank_label = ui.filter.rank < 0 ? "all ranks" : "rank " + std::to_string(ui.filter.rank);
    if (ImGui::BeginCombo("##comm_rank", rank_label.c_str())) {
        if (ImGui::Selectable("all ranks", ui.filter.rank < 0)) ui.filter.rank = -1;
        for (int r = 0; r < vm.timeline.world; ++r)
            if (ImGui::Selectable(("rank " + std::to_string(r)).c_str(), ui.filter.rank == r)) ui.filter.rank = r;
        ImGui::EndCombo();
    }
    ImGui::SameLine();
    ImGui::SetNextItemWidth(100);
    const std::string step_label = ui.filter.step < 0 ? "all steps" : "step " + std::to_string(ui.filter.step);
    if (ImGui::BeginCombo("##comm_step", step_label.c_str())) {
        if (ImGui::Selectable("all steps", ui.filter.step < 0)) ui.filter.step = -1;
        for (const StepSpan& st : vm.timeline.steps)
            if (ImGui::Selectable(("step " + std::to_string(st.step)).c_str(), ui.filter.step == st.step))
                ui.filter.step = st.step;
        ImGui::EndCombo();
    }
    if (ui.filter.rank != ui.computed_for.rank || ui.filter.step != ui.computed_for.step) {
        try {
            ui.summary = summarize_trace(vm.trace, ui.filter);
        } catch (const std::exception&) {  // a span with a non-integer "step" argument
            ui.summary = TraceSummary{};
        }
        ui.computed_for = ui.filter;
    }
    const TraceSummary& sum = ui.summary;
    ImGui::SameLine();
    ImGui::Text("%s collectives, %s moved", fmt_int(sum.collectives).c_str(), fmt_bytes(sum.total.bus_bytes).c_str());
    help_marker("Pick one rank and one step to read the per-step traffic of a rank, as the papers count it: "
                "for DDP the 'moved' total is 2 Psi bytes (Psi = parameters x bytes each), for ZeRO-3 3 Psi "
                "(params gathered in forward and in backward, grads reduce-scattered). Same numbers as "
                "`shardscope trace summary FILE --rank R --step S`. Hover a column title for its formula.");
    if (sum.time_scale != 1) {  // --emulate: the run's times are the cluster's x time_scale
        ImGui::SameLine();
        ImGui::TextDisabled("algbw, busbw: the emulated cluster's, bytes / (time / %g)", sum.time_scale);
    }

    const Prediction& pred = vm.run.predicted;
    int predicted_rows = 0;
    for (int p = 0; p < kPayloads; ++p)
        predicted_rows += pred.comm_bytes[size_t(p)] + pred.sync_bytes[size_t(p)] > 0 ? 1 : 0;
    const float line = ImGui::GetTextLineHeightWithSpacing();
    const float note_h = 2 * line + (pred.present ? line * float(predicted_rows + 4) : 0.0f);
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_ScrollY |
                                  ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_BordersOuterH | ImGuiTableFlags_ScrollX;
    if (ImGui::BeginTable("comm_table", 9, flags, ImVec2(avail.x, avail.y - note_h))) {
        ImGui::TableSetupScrollFreeze(0, 1);
        for (const Column& c : kColumns) ImGui::TableSetupColumn(c.name);
        ImGui::TableNextRow(ImGuiTableRowFlags_Headers);
        for (int i = 0; i < 9; ++i) {
            ImGui::TableSetColumnIndex(i);
            ImGui::TableHeader(kColumns[i].name);
            if (ImGui::IsItemHovered()) {
                ImGui::BeginTooltip();
                ImGui::PushTextWrapPos(ImGui::GetFontSize() * 32);
                ImGui::TextUnformatted(kColumns[i].help);
                ImGui::PopTextWrapPos();
                ImGui::EndTooltip();
            }
        }
        for (const CollectiveTotals& t : sum.rows) row(t, t.axis.c_str(), t.op.c_str(), true, false, sum.time_scale);
        for (const CollectiveTotals& t : sum.by_payload) row(t, "", "all ops", true, true, sum.time_scale);
        row(sum.total, "total", "", false, true, sum.time_scale);
        ImGui::EndTable();
    }
    draw_overlap_line(s);
    if (pred.present) draw_measured_vs_predicted(s);
    draw_step_time(sum.step_time, !vm.run.emulated_links.empty());
    source_note("drawn by viz/app/panel_comm.cpp from src/comm/trace/trace_summary.cpp (summarize_trace)");
}

}  // namespace ss::viz
