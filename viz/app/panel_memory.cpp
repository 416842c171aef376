// panel_memory.cpp — the Memory panel: what each rank holds, by Ledger category.
//
//   top left    one group of bars per rank: "now" (at the amber cursor of the
//               timeline) and "peak" (the trace's sample with the highest total),
//               each stacked params, grads, optim, acts, comm, workspace;
//   top right   the selected rank's numbers, with the Ledger's own per-category peaks and
//               the planner's prediction beside the sum of the categories it predicts;
//   bottom      the selected rank's memory over the timeline's window, stacked by
//               category, with every rank's total as a line: ZeRO-3's saw-tooth
//               is the comm band (gathered parameters) rising and falling per layer.
//
// Numbers come from the trace's "memory" counters (src/core/ledger.h books them,
// src/comm/trace/trace.cpp writes them) via viz/model/memory.cpp.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "viz/app/panels.h"
#include "viz/app/widgets.h"

namespace ss::viz {

namespace {

constexpr ImU32 kAxisText = IM_COL32(170, 175, 185, 255);
constexpr ImU32 kGridLine = IM_COL32(255, 255, 255, 22);

// Whether the planner predicts category c: its memory (src/plan/report.cpp, plan_json) has
// params, grads, optim, acts, comm and hpz, neither the CPU engine's scratch (workspace) nor
// DiLoCo's outer state.
bool predicted_kind(Mem c) { return c != Mem::workspace && c != Mem::outer; }

// A round step for a byte axis: 1, 2 or 5 x 10^k of the binary unit (B, KiB, MiB, GiB)
// the axis is read in, so the labels are "2.0 MiB", "4.0 MiB", ... (at most ~6 lines).
double byte_tick(double max_bytes) {
    double unit = 1;
    while (max_bytes / unit >= 1024 && unit < 1e15) unit *= 1024;
    const double raw = std::max(max_bytes / unit / 5, 1e-9);
    const double p = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (m * p >= raw) return m * p * unit;
    return 10 * p * unit;
}

// Stacks @p mem from y_bottom upwards at scale px_per_byte, between x0 and x1 (@p alpha < 255:
// the planner's prediction, drawn see-through and outlined).
void stacked_bar(ImDrawList* dl, float x0, float x1, float y_bottom, double px_per_byte,
                 const std::array<uint64_t, kMemCategories>& mem, uint8_t alpha = 255) {
    float y = y_bottom;
    for (int c = 0; c < kMemCategories; ++c) {
        const float h = float(double(mem[size_t(c)]) * px_per_byte);
        if (h <= 0) continue;
        dl->AddRectFilled(ImVec2(x0, y - h), ImVec2(x1, y), col(memory_color(Mem(c)), alpha));
        y -= h;
    }
    if (alpha < 255) dl->AddRect(ImVec2(x0, y), ImVec2(x1, y_bottom), IM_COL32(230, 230, 240, 200));
}

void memory_tooltip(int rank, const char* what, double t, const std::array<uint64_t, kMemCategories>& mem) {
    ImGui::BeginTooltip();
    if (t >= 0)
        ImGui::Text("rank %d, %s (t = %s)", rank, what, fmt_time_us(t).c_str());
    else
        ImGui::Text("rank %d, %s", rank, what);
    uint64_t total = 0;
    for (int c = kMemCategories - 1; c >= 0; --c) {
        swatch(memory_color(Mem(c)));
        ImGui::Text("%-10s %s", mem_name(Mem(c)), fmt_bytes(double(mem[size_t(c)])).c_str());
        total += mem[size_t(c)];
    }
    ImGui::Text("total      %s", fmt_bytes(double(total)).c_str());
    ImGui::TextDisabled("click to plot this rank over time");
    ImGui::EndTooltip();
}

void draw_bars(ViewerState& s, ImVec2 size) {
    const ViewModel& vm = *s.vm;
    const MemoryModel& mm = vm.memory;
    const int world = int(mm.ranks.size());
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const ImVec2 o = ImGui::GetCursorScreenPos();
    const float axis_w = ImGui::CalcTextSize("000.0 KiB").x + 12, label_h = ImGui::GetTextLineHeight() + 4;
    const float x0 = o.x + axis_w, y_bottom = o.y + size.y - label_h, plot_h = size.y - label_h - 6;
    const float plot_w = size.x - axis_w - 4;
    ImGui::InvisibleButton("mem_bars", size);
    const bool hovered = ImGui::IsItemHovered();
    const ImVec2 mouse = ImGui::GetIO().MousePos;

    const Prediction& pred = vm.run.predicted;
    const int bars = pred.present ? 3 : 2;  // now, peak, and the planner's prediction
    const double top = std::max<double>(double(std::max(mm.max_total, pred.mem_total)), 1.0) * 1.08;
    const double px_per_byte = plot_h / top;
    const double tick = byte_tick(top);
    for (double b = 0; b <= top; b += tick) {
        const float y = float(y_bottom - b * px_per_byte);
        dl->AddLine(ImVec2(x0, y), ImVec2(x0 + plot_w, y), kGridLine);
        const std::string l = fmt_bytes(b);
        dl->AddText(ImVec2(o.x + axis_w - 6 - ImGui::CalcTextSize(l.c_str()).x, y - 8), kAxisText, l.c_str());
    }
    if (world == 0) return;
    const float group_w = plot_w / float(world);
    const float bar_w = std::min(group_w * (bars == 3 ? 0.27f : 0.38f), 40.0f);
    const float span = float(bars) * bar_w + float(bars - 1) * 2;
    const int label_every = std::max(1, int(std::ceil(44.0f / group_w)));
    for (int r = 0; r < world; ++r) {
        const RankMemory& rm = mm.ranks[size_t(r)];
        const float gx = x0 + group_w * float(r) + (group_w - span) / 2;
        const MemPoint* now = sample_at(rm, s.cursor_t);
        const MemPoint* peak = rm.peak >= 0 ? &rm.points[size_t(rm.peak)] : nullptr;
        if (now) stacked_bar(dl, gx, gx + bar_w, y_bottom, px_per_byte, now->mem);
        if (peak) stacked_bar(dl, gx + bar_w + 2, gx + 2 * bar_w + 2, y_bottom, px_per_byte, peak->mem);
        if (bars == 3) stacked_bar(dl, gx + 2 * bar_w + 4, gx + 3 * bar_w + 4, y_bottom, px_per_byte, pred.mem, 120);
        if (r == s.memory.rank)
            dl->AddRect(ImVec2(gx - 3, o.y), ImVec2(gx + span + 3, y_bottom + 1), IM_COL32(255, 255, 255, 140));
        if (r % label_every == 0) {
            char l[16];
            std::snprintf(l, sizeof l, "r%d", r);
            dl->AddText(ImVec2(gx, y_bottom + 2), kAxisText, l);
        }
        if (hovered && mouse.x >= gx - 2 && mouse.x < gx + span + 2) {
            const int which = std::clamp(int((mouse.x - gx) / (bar_w + 2)), 0, bars - 1);
            if (which == 2)
                memory_tooltip(r, "predicted by the planner", -1, pred.mem);
            else if (const MemPoint* p = which == 1 ? peak : now)
                memory_tooltip(r, which == 1 ? "at its peak" : "at the cursor", p->t, p->mem);
            if (ImGui::IsMouseClicked(ImGuiMouseButton_Left)) s.memory.rank = r;
        }
    }
}

void draw_table(ViewerState& s) {
    const ViewModel& vm = *s.vm;
    const int r = s.memory.rank;
    const RankMemory& rm = vm.memory.ranks[size_t(r)];
    const MemPoint* now = sample_at(rm, s.cursor_t);
    const MemPoint* peak = rm.peak >= 0 ? &rm.points[size_t(rm.peak)] : nullptr;
    const bool has_ledger = size_t(r) < vm.run.ledger_peak.size();
    const Prediction& pred = vm.run.predicted;
    ImGui::Text("rank %d", r);
    ImGui::SameLine();
    ImGui::TextDisabled("cursor %s, peak at %s", fmt_time_us(s.cursor_t).c_str(),
                        peak ? fmt_time_us(peak->t).c_str() : "-");
    const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingFixedFit;
    // The gap column (gap_cell, widgets.h): what the rank held (its own peak from the Ledger,
    // else the trace's peak sample) against the prediction, as the Comm summary sets bytes beside it.
    if (ImGui::BeginTable("mem_table", 3 + (has_ledger ? 1 : 0) + (pred.present ? 2 : 0), flags)) {
        ImGui::TableSetupColumn("category");
        ImGui::TableSetupColumn("now");
        ImGui::TableSetupColumn("at peak");
        if (has_ledger) ImGui::TableSetupColumn("own peak");
        if (pred.present) ImGui::TableSetupColumn("predicted");
        if (pred.present) ImGui::TableSetupColumn(has_ledger ? "own peak vs it" : "at peak vs it");
        ImGui::TableHeadersRow();
        std::array<uint64_t, 3> totals{};
        std::array<uint64_t, 2> predicted_kinds{};  // now and at peak, less what the planner does not predict
        for (int c = 0; c < kMemCategories; ++c) {
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            swatch(memory_color(Mem(c)));
            ImGui::TextUnformatted(mem_name(Mem(c)));
            ImGui::TableNextColumn();
            const uint64_t a = now ? now->mem[size_t(c)] : 0, b = peak ? peak->mem[size_t(c)] : 0;
            ImGui::TextUnformatted(fmt_bytes(double(a)).c_str());
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(fmt_bytes(double(b)).c_str());
            totals[0] += a;
            totals[1] += b;
            if (predicted_kind(Mem(c))) {
                predicted_kinds[0] += a;
                predicted_kinds[1] += b;
            }
            if (has_ledger) {
                ImGui::TableNextColumn();
                ImGui::TextUnformatted(fmt_bytes(double(vm.run.ledger_peak[size_t(r)][size_t(c)])).c_str());
            }
            if (pred.present) {
                ImGui::TableNextColumn();
                if (!predicted_kind(Mem(c)))
                    ImGui::TextDisabled("-");
                else
                    ImGui::TextUnformatted(fmt_bytes(double(pred.mem[size_t(c)])).c_str());
                ImGui::TableNextColumn();
                if (predicted_kind(Mem(c)))
                    gap_cell(has_ledger ? vm.run.ledger_peak[size_t(r)][size_t(c)] : b, pred.mem[size_t(c)]);
            }
        }
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextUnformatted("total");
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(fmt_bytes(double(totals[0])).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(fmt_bytes(double(totals[1])).c_str());
        if (has_ledger) ImGui::TableNextColumn();
        if (pred.present) {  // the planner's total leaves workspace and outer out: set beside the like sum below
            ImGui::TableNextColumn();
            ImGui::TextDisabled("-");
            ImGui::TableNextColumn();
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            ImGui::TextUnformatted("predicted kinds");  // explained in the help marker under the table
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(fmt_bytes(double(predicted_kinds[0])).c_str());
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(fmt_bytes(double(predicted_kinds[1])).c_str());
            if (has_ledger) ImGui::TableNextColumn();
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(fmt_bytes(double(pred.mem_total)).c_str());
            ImGui::TableNextColumn();
            gap_cell(predicted_kinds[1], pred.mem_total);  // the peak sample's predicted kinds: one moment, as the plan
        }
        ImGui::EndTable();
    }
    help_marker("Live bytes per Ledger category (src/core/ledger.h): params and grads as the model reads them, "
                "optim = fp32 master weights + Adam m and v, acts = saved activations, comm = communication "
                "buffers and ZeRO-3's gathered parameters, workspace = scratch.\n\n"
                "now = the sample in force at the amber cursor (click the timeline to move it); at peak = the "
                "sample with the highest total (the trace keeps it even when it merges samples 20 us apart); "
                "own peak = each category's highest value on its own, from the Ledger (they need not happen "
                "at the same time, so they add up to more than the peak).\n\n"
                "Model states per parameter (ZeRO paper, Rajbhandari et al. 2020, sec. 3.1): bf16 2 + 2 + 12 "
                "bytes, fp32 4 + 4 + 8. ZeRO-1 divides optim by N (the shard group), ZeRO-2 also grads, "
                "ZeRO-3 also params.");
    if (pred.present) {
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
        ImGui::TextWrapped("predicted: %s (src/plan/memory.h)", pred.layout.c_str());
        ImGui::PopStyleColor();
        help_marker("The planner's answer for this run (stored by `train` in the trace's otherData.prediction): "
                    "model states by the ZeRO paper's table, counted per unit as the engine partitions them "
                    "(sum of ceil(P_u / N)); activations by Korthikanti et al. 2022 in the engine's own layout "
                    "(fp32, no dropout); comm = ZeRO-3's largest gathered unit or the DDP buckets. It is for the "
                    "pipeline stage that needs the most (every rank when PP = 1). Workspace (fp32 compute "
                    "copies, scratch) and DiLoCo's outer state are not predicted: the row \"predicted kinds\" "
                    "sums the categories that are, to set beside the planner's total (the row \"total\" "
                    "includes the rest). The last column is the rank's own peak per category (the Ledger's; "
                    "without it, the peak sample's) against the prediction, and for \"predicted kinds\" the "
                    "peak sample's sum against the planner's total: + when the rank held more than predicted. "
                    "Formulas: docs/formulas.md.");
    } else if (!pred.unavailable.empty()) {
        ImGui::TextDisabled("no prediction: %s", pred.unavailable.c_str());
    } else {
        ImGui::TextDisabled("no prediction in this trace (written by `shardscope train --trace`)");
    }
}

// The plot over time is painted into a texture (pixel_texture.h): one column per pixel,
// the selected rank's categories stacked, and every drawn rank's total as a step line.
void draw_over_time(ViewerState& s, ImVec2 size) {
    const ViewModel& vm = *s.vm;
    const MemoryModel& mm = vm.memory;
    MemoryUi& ui = s.memory;
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const ImVec2 o = ImGui::GetCursorScreenPos();
    const float axis_w = ImGui::CalcTextSize("000.0 KiB").x + 12;
    const float x0 = std::floor(o.x + axis_w), y0 = std::floor(o.y);
    const int n = std::max(1, int(size.x - axis_w - 4)), H = std::max(8, int(size.y - 2));
    ImGui::InvisibleButton("mem_time", size);
    const TimeView& v = s.timeline.view;
    const int world = int(mm.ranks.size());

    // Columns of every rank drawn (the selected one, and up to ~16 others as lines), then
    // a y scale that fits what is in the window, so a zoomed saw-tooth fills the plot.
    const int line_every = world > 16 ? world / 16 : 1;
    ui.rank_columns.resize(size_t(world));
    uint64_t top_bytes = 1;
    for (int r = 0; r < world; ++r) {
        if (r != ui.rank && r % line_every != 0) continue;
        columns(mm.ranks[size_t(r)], v.t0, v.t1, n, ui.rank_columns[size_t(r)], ui.plot_mask);
        for (const MemColumn& c : ui.rank_columns[size_t(r)]) top_bytes = std::max(top_bytes, c.hi);
    }
    const double top = double(top_bytes) * 1.1;
    const double px_per_byte = double(H - 1) / top;
    auto y_of = [&](double bytes) { return std::clamp(int(std::lround(double(H - 1) - bytes * px_per_byte)), 0, H - 1); };

    PixelTexture& tex = s.memory_texture;
    tex.resize(n, H);
    const uint32_t bg = IM_COL32(30, 33, 40, 255), grid = IM_COL32(52, 56, 66, 255);
    for (int y = 0; y < H; ++y) std::fill(tex.row(y), tex.row(y) + n, bg);
    const double tick = byte_tick(top);
    for (double b = tick; b <= top; b += tick) std::fill(tex.row(y_of(b)), tex.row(y_of(b)) + n, grid);
    // the selected rank, stacked by category (those ticked)
    const RankMemory& sel = mm.ranks[size_t(ui.rank)];
    const std::vector<MemColumn>& sc = ui.rank_columns[size_t(ui.rank)];
    for (int c = 0; c < n; ++c) {
        if (sc[size_t(c)].top < 0) continue;
        const MemPoint& p = sel.points[size_t(sc[size_t(c)].top)];
        double below = 0;
        for (int k = 0; k < kMemCategories; ++k) {
            if (!((ui.plot_mask >> k) & 1u) || p.mem[size_t(k)] == 0) continue;
            const int ya = y_of(below + double(p.mem[size_t(k)])), yb = y_of(below);
            const uint32_t colour = col(memory_color(Mem(k)));
            for (int y = ya; y <= yb; ++y) tex.row(y)[c] = colour;
            below += double(p.mem[size_t(k)]);
        }
    }
    // every drawn rank's total as a step line (its highest value per column), the selected one last
    for (int pass = 0; pass < 2; ++pass) {
        for (int r = 0; r < world; ++r) {
            if ((r == ui.rank) != (pass == 1) || (pass == 0 && r % line_every != 0)) continue;
            const uint32_t colour = pass == 1 ? IM_COL32(255, 255, 255, 255) : col(rank_color(r));
            int prev = -1;
            for (int c = 0; c < n; ++c) {
                const MemColumn& mc = ui.rank_columns[size_t(r)][size_t(c)];
                if (mc.top < 0) continue;
                const int y = y_of(double(mc.hi));
                const int a = prev < 0 ? y : std::min(prev, y), b = prev < 0 ? y : std::max(prev, y);
                for (int yy = a; yy <= b; ++yy) tex.row(yy)[c] = colour;  // the step joins the last value
                prev = y;
            }
        }
    }
    tex.upload();
    dl->AddImage(tex.id(), ImVec2(x0, y0), ImVec2(x0 + float(n), y0 + float(H)));
    // axis labels, the cursor, the title (a few items: drawn by ImGui)
    for (double b = 0; b <= top; b += tick) {
        const std::string l = fmt_bytes(b);
        dl->AddText(ImVec2(x0 - 6 - ImGui::CalcTextSize(l.c_str()).x, y0 + float(y_of(b)) - 8), kAxisText, l.c_str());
    }
    const float cursor_x = x0 + float((s.cursor_t - v.t0) / (v.t1 - v.t0) * n);
    if (cursor_x >= x0 && cursor_x <= x0 + float(n))
        dl->AddLine(ImVec2(cursor_x, y0), ImVec2(cursor_x, y0 + float(H)), IM_COL32(255, 200, 60, 255), 1.5f);
    char l[96];
    std::snprintf(l, sizeof l, "rank %d, %s .. %s", ui.rank, fmt_time_us(v.t0).c_str(), fmt_time_us(v.t1).c_str());
    dl->AddText(ImVec2(x0 + 6, y0 + 2), IM_COL32(230, 230, 235, 255), l);
}

}  // namespace

void draw_memory(ViewerState& s, ImVec2 size) {
    (void)size;
    if (s.memory.rank >= int(s.vm->memory.ranks.size())) s.memory.rank = 0;
    heading("Memory");
    ImGui::SameLine();
    ImGui::TextDisabled("bytes each rank holds, by what they are for");
    ImGui::SameLine(0, 16);
    for (int c = 0; c < kMemCategories; ++c) {
        swatch(memory_color(Mem(c)));
        ImGui::TextUnformatted(mem_name(Mem(c)));
        ImGui::SameLine(0, 10);
    }
    ImGui::NewLine();
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float note_h = ImGui::GetTextLineHeightWithSpacing();
    const float top_h = (avail.y - note_h) * 0.52f;
    const float table_w = std::min(avail.x * 0.45f, 600.0f);  // six columns with the prediction and its gap
    // top: bars | table
    ImGui::BeginGroup();
    ImGui::TextUnformatted(s.vm->run.predicted.present ? "per rank: now | at peak | predicted" : "per rank: now | at peak");
    help_marker("Bars per rank: at the amber cursor (left), at that rank's peak (middle) and, see-through, "
                "the planner's prediction (right, when the trace has one), stacked by category; the "
                "prediction has no workspace band (the planner does not predict scratch), so it stands "
                "lower by that much. With ZeRO-3 every rank holds 1/N of params, grads and optim, so the "
                "bottom of the stack is small and equal on all ranks; what rises at the peak is acts (saved "
                "activations) and comm (a whole layer's gathered parameters). Hover for numbers, click to "
                "pick the rank plotted below.");
    draw_bars(s, ImVec2(avail.x - table_w - 12, top_h - ImGui::GetTextLineHeightWithSpacing()));
    ImGui::EndGroup();
    ImGui::SameLine(0, 12);
    // scrolls sideways where the six columns are wider than table_w (an Overview tile)
    ImGui::BeginChild("mem_table_child", ImVec2(table_w, top_h), false, ImGuiWindowFlags_HorizontalScrollbar);
    draw_table(s);
    ImGui::EndChild();
    // bottom: over time
    ImGui::TextUnformatted("over time:");
    for (int c = 0; c < kMemCategories; ++c) {
        ImGui::SameLine(0, 8);
        swatch(memory_color(Mem(c)), (s.memory.plot_mask >> c) & 1u);
        bool on = (s.memory.plot_mask >> c) & 1u;
        ImGui::PushStyleVar(ImGuiStyleVar_FramePadding, ImVec2(2, 0));
        if (ImGui::Checkbox((std::string(mem_name(Mem(c))) + "##plot").c_str(), &on)) s.memory.plot_mask ^= 1u << c;
        ImGui::PopStyleVar();
    }
    ImGui::SameLine(0, 8);
    if (ImGui::SmallButton("ZeRO-3 view")) s.memory.plot_mask = (1u << int(Mem::params)) | (1u << int(Mem::comm));
    ImGui::SameLine();
    if (ImGui::SmallButton("all")) s.memory.plot_mask = kAllCategories;
    help_marker("The selected rank's memory, one column per pixel, stacked by category as above, under the "
                "thin lines of every rank's total (each column shows the highest value in it, so a peak "
                "narrower than a pixel still shows). ZeRO-3 gathers each layer's parameters before using it "
                "and frees them after: the comm band rises and falls once per layer in forward and again in "
                "backward - the saw-tooth. With prefetch, ZeRO-3's prefetched units (the next layer's "
                "parameters, gathered while this one computes) are booked in comm too, so the band can hold "
                "two units at once. 'ZeRO-3 view' plots params + comm only, so the teeth fill the plot. "
                "The white line is the selected rank's total of the ticked categories; the thin coloured "
                "lines are the other ranks' (at most 16). The plot follows the timeline's window: zoom the "
                "timeline to zoom it; the y axis fits what is in the window.");
    const ImVec2 rest = ImGui::GetContentRegionAvail();
    draw_over_time(s, ImVec2(rest.x, std::max(rest.y - note_h, 40.0f)));
    source_note("drawn by viz/app/panel_memory.cpp from viz/model/memory.cpp (the trace's memory counters)");
}

}  // namespace ss::viz
