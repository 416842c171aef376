// panel_pipeline.cpp — the Pipeline panel: the run's schedule as boxes, one row per pp rank.
//
//     Simulated: forward 1/v, backward 2/v, messages free           bubble (p-1)/m = ... (counted: ...)
//     rank 0 |F0|F1|    |B0 B0|F2|B1 B1|F3|B2 B2|    |B3 B3|
//     rank 1 |  |F0|B0 B0|F1|B1 B1|F2|B2 B2|F3|B3 B3|    |  |          grey = idle (the bubble)
//     Measured: step 2, global ranks 0, 1 (µs)
//     rank 0 |F0 |F1|       |B0  B0|F2|...
//
// Boxes are coloured by micro-batch, so one micro-batch's forward and backward
// are found on every row; "F3"/"B3" as in `shardscope schedule`'s chart
// (interleaved adds the chunk: "F3a", "F3b"). The boxes come from
// viz/model/pipeline.cpp: the simulation of otherData.pipeline.actions, and the
// trace's forward/backward spans of one step (read_pipeline).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "viz/app/panels.h"
#include "viz/app/widgets.h"

namespace ss::viz {

namespace {

const Rgb kIdle{72, 74, 80};  // a row's background: the time a rank computes nothing

// "1F1B", "GPipe", "interleaved 1F1B" from what train wrote.
std::string schedule_title(const std::string& s) {
    if (s == "1f1b")
        return "1F1B";
    if (s == "gpipe")
        return "GPipe";
    if (s == "interleaved")
        return "interleaved 1F1B";
    return s.empty() ? "schedule" : s;
}

// A tick spacing of 1, 2 or 5 x 10^k that puts at most @p max_ticks ticks on @p range.
double nice_step(double range, int max_ticks) {
    const double raw = range / std::max(1, max_ticks);
    const double p10 = std::pow(10.0, std::floor(std::log10(raw > 0 ? raw : 1.0)));
    for (double f : {1.0, 2.0, 5.0, 10.0})
        if (f * p10 >= raw)
            return f * p10;
    return 10 * p10;
}

// Black or white, whichever reads on @p c.
ImU32 text_on(Rgb c) {
    return (c.r * 299 + c.g * 587 + c.b * 114) / 1000 > 120 ? IM_COL32(20, 20, 24, 255) : IM_COL32_WHITE;
}

// One chart: a row per pp rank over [0, t_end], boxes on an idle-grey row, a time axis
// under it (@p unit_us: ticks in µs, else in forward times). Returns the hovered box or null.
const PipeBox* chart(const char* id, const PipeTimeline& t, const PipelineView& pv,
                     const std::vector<std::string>& labels, double t_end, bool unit_us, float width, float row_h) {
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const ImVec2 o = ImGui::GetCursorScreenPos();
    const float label_w = 70, axis_h = ImGui::GetTextLineHeight() + 6;
    const float x0 = o.x + label_w, w = std::max(40.0f, width - label_w - 16);
    const float h = row_h * float(pv.pp) + axis_h;
    ImGui::InvisibleButton(id, ImVec2(width, h));
    const bool hovered = ImGui::IsItemHovered();
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    auto x_of = [&](double tt) { return float(x0 + tt / t_end * w); };
    for (int r = 0; r < pv.pp; ++r) {
        const float y = o.y + row_h * float(r);
        dl->AddText(ImVec2(o.x, y + (row_h - ImGui::GetTextLineHeight()) / 2), IM_COL32(200, 205, 215, 255),
                    labels[size_t(r)].c_str());
        dl->AddRectFilled(ImVec2(x0, y + 1), ImVec2(x0 + w, y + row_h - 1), col(kIdle));
    }
    const PipeBox* hit = nullptr;
    for (const PipeBox& b : t.boxes) {
        const float y = o.y + row_h * float(b.rank);
        const ImVec2 a(x_of(b.start), y + 1), c(std::max(x_of(b.end) - 1, x_of(b.start) + 1), y + row_h - 1);
        const Rgb fill = axis_index_color(b.micro, pv.m);
        dl->AddRectFilled(a, c, col(fill));
        if (b.backward)  // a darker foot: backward, even where the box is too narrow for its letters
            dl->AddRectFilled(ImVec2(a.x, c.y - 3), c,
                              col(Rgb{uint8_t(fill.r / 2), uint8_t(fill.g / 2), uint8_t(fill.b / 2)}));
        const std::string text = pipe_box_label(b, pv.v);
        const ImVec2 ts = ImGui::CalcTextSize(text.c_str());
        if (ts.x + 4 <= c.x - a.x && ts.y <= c.y - a.y)
            dl->AddText(ImVec2((a.x + c.x - ts.x) / 2, (a.y + c.y - ts.y) / 2), text_on(fill), text.c_str());
        if (hovered && mouse.x >= a.x && mouse.x < c.x + 1 && mouse.y >= a.y && mouse.y < c.y)
            hit = &b;
    }
    // The time axis.
    const float ay = o.y + row_h * float(pv.pp) + 2;
    const double step = nice_step(t_end, std::max(2, int(w / 70)));
    float last_label_end = -1e9f;  // right end of the last label drawn
    for (double tt = 0; tt <= t_end + 1e-9; tt += step) {
        const float x = x_of(tt);
        dl->AddLine(ImVec2(x, ay), ImVec2(x, ay + 4), IM_COL32(150, 155, 165, 255));
        char buf[32];
        if (unit_us)
            std::snprintf(buf, sizeof buf, "%s", fmt_time_us(tt).c_str());
        else
            std::snprintf(buf, sizeof buf, "%g", tt);
        // right of its tick; the last, at the chart's end, left of it where it would run past the edge
        const float text_w = ImGui::CalcTextSize(buf).x;
        const float lx = x + 2 + text_w <= o.x + width ? x + 2 : x - 2 - text_w;
        if (lx < last_label_end + 6) continue;  // would overlap the label before it
        dl->AddText(ImVec2(lx, ay + 1), IM_COL32(150, 155, 165, 255), buf);
        last_label_end = lx + text_w;
    }
    return hit;
}

void box_tooltip(const PipeBox& b, const PipelineView& pv, bool unit_us) {
    const int vs = b.chunk * pv.pp + b.rank;
    ImGui::BeginTooltip();
    ImGui::Text("%s: %s of micro-batch %d, chunk %d (virtual stage %d)", pipe_box_label(b, pv.v).c_str(),
                b.backward ? "backward" : "forward", b.micro, b.chunk, vs);
    if (unit_us)
        ImGui::Text("%s .. %s (%s)", fmt_time_us(b.start).c_str(), fmt_time_us(b.end).c_str(),
                    fmt_time_us(b.end - b.start).c_str());
    else
        ImGui::Text("%.3g .. %.3g forward times", b.start, b.end);
    ImGui::EndTooltip();
}

void draw_no_pipeline(const PipelineView& pv) {
    ImGui::TextWrapped("%s", pv.message.c_str());
    ImGui::Spacing();
    ImGui::TextWrapped(
        "This panel draws a pipeline-parallel run's schedule: which micro-batch each pipeline "
        "rank computes when, and the bubble, the time it waits. A trace has one when it was "
        "written with --pp 2 or more:");
    ImGui::TextDisabled(
        "  shardscope train --model tiny --layers 4 --ranks 2 --pp 2 --ga 4 --steps 2 --trace pp2.json");
    ImGui::TextWrapped(
        "The same schedule as text, without a run: shardscope schedule --pp 2 --micro 4 --schedule 1f1b "
        "(tutorials/08-pipeline-parallel.md).");
}

}  // namespace

void draw_pipeline(ViewerState& s, ImVec2 size) {
    const PipelineView& pv = s.vm->pipeline;
    heading("Pipeline");
    if (!pv.drawable()) {
        draw_no_pipeline(pv);
        source_note("drawn by viz/app/panel_pipeline.cpp from viz/model/pipeline.cpp (otherData.pipeline)");
        return;
    }
    ImGui::SameLine();
    const std::string chunks = pv.v > 1 ? "  \xC2\xB7  v = " + std::to_string(pv.v) + " chunks per rank" : "";
    ImGui::Text("%s  \xC2\xB7  p = %d pp ranks  \xC2\xB7  m = %d micro-batches%s", schedule_title(pv.schedule).c_str(),
                pv.pp, pv.m, chunks.c_str());
    help_marker(
        "otherData.pipeline, written by `shardscope train --pp N --trace FILE` (src/train/train.cpp): "
        "each pp rank's list of actions for one optimizer step, as make_pipe_schedule made them "
        "(src/schedule/pipeline_schedule.h) and the executor ran them (src/parallel/pipeline.cpp). "
        "p = pipeline ranks, m = micro-batches per step (GA), v = model chunks per rank (interleaved).");
    char line[256];
    if (pv.v > 1)
        std::snprintf(line, sizeof line,
                      "bubble: (p-1)/(v m) = %d/(%d x %d) = %.3f of the compute time (counted: %.3f)", pv.pp - 1, pv.v,
                      pv.m, pv.bubble_formula, pv.simulated.bubble);
    else
        std::snprintf(line, sizeof line, "bubble: (p-1)/m = %d/%d = %.3f of the compute time (counted: %.3f)",
                      pv.pp - 1, pv.m, pv.bubble_formula, pv.simulated.bubble);
    ImGui::TextUnformatted(line);
    help_marker(
        "The bubble: the time a pp rank computes nothing, as a fraction of the time it computes. "
        "Formula: (p-1)/m for GPipe and 1F1B, (p-1)/(v m) interleaved (Narayanan et al. 2021, "
        "arXiv:2104.04473, sec. 2.2 and 2.2.1; pipe_bubble_formula in src/schedule/pipeline_schedule.h, "
        "stored as otherData.pipeline.bubble). Counted: (p x makespan - busy) / busy over the simulated "
        "boxes below (count_bubble, viz/model/pipeline.cpp): each rank runs its list in order, a forward "
        "takes 1/v, a backward 2/v, messages are free, a receive waits for its send.");

    // Two charts share the height left: the simulation and the measured step.
    const float text_h = ImGui::GetTextLineHeightWithSpacing();
    const bool measured = pv.measured_message.empty();
    const float chart_h = std::max(60.0f, (size.y - text_h * (measured ? 8.0f : 7.0f)) / (measured ? 2.0f : 1.0f));
    const float row_h = std::clamp((chart_h - text_h) / float(pv.pp), 14.0f, 64.0f);
    std::vector<std::string> labels;
    for (int r = 0; r < pv.pp; ++r) labels.push_back("rank " + std::to_string(r));

    ImGui::Spacing();
    ImGui::Text("Simulated: forward %s, backward %s, messages free; time in forwards of one stage",
                pv.v > 1 ? "1/v" : "1", pv.v > 1 ? "2/v" : "2");
    help_marker(
        "Each rank runs otherData.pipeline.actions[rank] in order (simulate_pipeline, viz/model/pipeline.cpp, "
        "through the engine's own simulate_pipe_lists, src/schedule/pipeline_simulate.cpp). "
        "A receive is matched to its send as the comm matches them: by payload, micro-batch and boundary "
        "(comm/label.h, p2p_key); chunk c on rank r is virtual stage c p + r, whose activation goes to "
        "the next virtual stage on rank (vs + 1) % p. Grey: idle, the bubble. Colour: the micro-batch.");
    const PipeBox* hit =
        chart("##sim", pv.simulated, pv, labels, std::max(pv.simulated.makespan, 1e-9), false, size.x, row_h);
    if (hit)
        box_tooltip(*hit, pv, false);

    if (measured) {
        ImGui::Spacing();
        std::string ranks;
        for (size_t i = 0; i < pv.measured_ranks.size(); ++i)
            ranks += (i ? ", " : "") + std::to_string(pv.measured_ranks[i]);
        // On emulated links the sends' times are the emulation's: said here too, not only in the header.
        ImGui::Text("Measured%s: step %d on global ranks %s; idle %.3f of the compute time",
                    s.vm->run.emulated_links.empty() ? "" : " (on emulated links)", pv.measured_step, ranks.c_str(),
                    pv.measured.bubble);
        help_marker(
            "The trace's compute spans named forward and backward (args step, microbatch, stage = the "
            "virtual stage), recorded by src/parallel/pipeline.cpp, of one step (the second: the first "
            "warms up) on the ranks of global rank 0's pp group (pp is the mesh's outermost axis: pp rank "
            "r is global rank r x world / pp). Idle is counted as above: (p x makespan - busy) / busy; "
            "it includes waiting in receives, the messages themselves, and, on the threads backend, "
            "ranks sharing the machine's cores.");
        std::vector<std::string> mlabels;
        for (int r = 0; r < pv.pp; ++r) mlabels.push_back("rank " + std::to_string(pv.measured_ranks[size_t(r)]));
        hit = chart("##measured", pv.measured, pv, mlabels, std::max(pv.measured.makespan, 1e-9), true, size.x, row_h);
        if (hit)
            box_tooltip(*hit, pv, true);
    } else {
        ImGui::TextDisabled("Measured: %s", pv.measured_message.c_str());
    }

    // Legend: the micro-batches' colours.
    ImGui::TextUnformatted("micro-batch:");
    ImGui::SameLine();
    for (int i = 0; i < std::min(pv.m, 16); ++i) {
        swatch(axis_index_color(i, pv.m));
        ImGui::Text("%d", i);
        ImGui::SameLine(0, 10);
    }
    ImGui::TextDisabled(pv.m > 16 ? "...  F = forward, B = backward (darker foot), grey = idle"
                                  : " F = forward, B = backward (darker foot), grey = idle");
    source_note(
        "drawn by viz/app/panel_pipeline.cpp from viz/model/pipeline.cpp (otherData.pipeline, the trace's "
        "forward/backward spans)");
}

}  // namespace ss::viz
