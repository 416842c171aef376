// panel_timeline.cpp — the Timeline panel: every rank's compute and collectives over time.
//
//     time ->      | 120 ms       | 125 ms       | 130 ms
//     rank 0  compute [forward                        ][backward ...
//             comm     |ag||ag| |ag|               |rs| |rs|      <- colour = payload
//     rank 1  ...
//
// Collectives are coloured by what they carry (palette.h): a ZeRO-3 run is
// blue (param all_gathers) and orange (grad reduce_scatters); tensor
// parallelism adds green (act) all_reduces. Hover a bar for its fields; click
// a collective to light up the same call on every rank of its group (and see
// how far apart the ranks arrived). An asynchronous collective (a trace with
// issued_us / exposed_us, src/comm/trace/trace_overlap.h) also shows a thin
// line from when it was issued to when it ran, and a dark red strip at the end
// of the call for the part the rank was blocked in it; calls in flight at once
// stack in rows, as nested spans do. Wheel zooms about the mouse, drag pans,
// Shift+wheel scrolls the ranks, double-click fits the whole run.
//
// The bars come from viz/model/timeline.cpp (lanes, instances, and
// layout_lane(), which merges sub-pixel bars so a frame draws at most about
// one rect per pixel per lane).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "comm/trace/trace_overlap.h"
#include "viz/app/panels.h"
#include "viz/app/widgets.h"

namespace ss::viz {

namespace {

constexpr float kLabelW = 74.0f;  // rank labels on the left
constexpr float kTimeRowH = 20.0f;                  // time axis on top
constexpr float kStepRowH = 15.0f;                  // under it, the steps' names (not over rank 0's bars)
constexpr float kRulerH = kTimeRowH + kStepRowH;
constexpr ImU32 kLaneBg = IM_COL32(32, 36, 44, 255);
constexpr ImU32 kLaneBgAlt = IM_COL32(38, 42, 52, 255);
constexpr ImU32 kCursor = IM_COL32(255, 200, 60, 255);

// A "nice" tick interval (1, 2 or 5 x 10^k µs) giving ticks at least min_px apart.
double tick_interval(const TimeView& v, float min_px) {
    const double raw = (v.t1 - v.t0) * min_px / v.width;
    const double p = std::pow(10.0, std::floor(std::log10(std::max(raw, 1e-6))));
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (m * p >= raw) return m * p;
    return 10 * p;
}

// Vertical layout of one rank's row.
struct RowGeom {
    float compute_y, compute_h;  // all compute depth rows together
    float comm_y, comm_h;
};
RowGeom row_geom(float y, float rank_h) {
    const float pad = std::max(1.0f, rank_h * 0.08f);
    const float inner = rank_h - 2 * pad;
    return {y + pad, inner * 0.42f, y + pad + inner * 0.46f, inner * 0.54f};
}

std::string group_str(const std::vector<int>& g) {
    std::string s = "[";
    for (size_t i = 0; i < g.size(); ++i) {
        if (i == 8 && g.size() > 10) {
            s += "..., " + std::to_string(g.back());
            break;
        }
        s += (i ? ", " : "") + std::to_string(g[i]);
    }
    return s + "]";
}

void collective_tooltip(const TraceEvent& e) {
    ImGui::BeginTooltip();
    swatch(payload_color(e.label.payload));
    ImGui::Text("%s of %s", e.name.c_str(), payload_name(e.label.payload));
    ImGui::Text("axis %s, group %s (%zu ranks)", e.axis.c_str(), group_str(e.group).c_str(), e.group.size());
    ImGui::Text("bytes %s per rank (%s B)", fmt_bytes(double(e.bytes)).c_str(), fmt_int(e.bytes).c_str());
    ImGui::Text("layer %d, phase %s, micro-batch %d, step %d", e.label.layer, phase_name(e.label.phase),
                e.label.microbatch, e.label.step);
    ImGui::Text("start %s, time in the call %s", fmt_time_us(e.ts_us).c_str(), fmt_time_us(e.dur_us).c_str());
    if (has_overlap_fields(e)) {
        const double issued = issued_time_us(e), exposed = exposed_time_us(e);
        ImGui::Text("issued %s (queued %s before it ran); exposed %s, hidden %s (%.0f%%)",
                    fmt_time_us(issued).c_str(), fmt_time_us(e.ts_us - issued).c_str(),
                    fmt_time_us(exposed).c_str(), fmt_time_us(e.dur_us - exposed).c_str(),
                    e.dur_us > 0 ? 100.0 * (1.0 - exposed / e.dur_us) : 0.0);
    }
    if (e.dur_us > 0) {
        const double algbw = double(e.bytes) / e.dur_us * 1e-3;
        const double f = busbw_factor(e.name, int(e.group.size()));
        ImGui::Text("algbw = bytes / time = %s;  busbw = algbw x %.3f = %s", fmt_gbs(algbw).c_str(), f,
                    fmt_gbs(algbw * f).c_str());
    }
    ImGui::TextDisabled("bytes as nccl-tests counts them; busbw factor 2(n-1)/n for all_reduce,\n"
                        "(n-1)/n for all_gather, reduce_scatter, all_to_all (docs/trace-format.md).\n"
                        "The time includes waiting for late peers. Click to light up this call on every rank.");
    ImGui::EndTooltip();
}

void span_tooltip(const TraceEvent& e) {
    ImGui::BeginTooltip();
    swatch(span_color(e.cat));
    ImGui::Text("%s  (%s)", e.name.c_str(), e.cat.c_str());
    ImGui::Text("start %s, duration %s", fmt_time_us(e.ts_us).c_str(), fmt_time_us(e.dur_us).c_str());
    if (!e.args.empty()) ImGui::TextDisabled("%s", e.args.dump().c_str());
    ImGui::EndTooltip();
}

// The longest of "all_gather L2", "AG L2", "AG" (or a span's name) that fits in @p width pixels; "" if none.
std::string bar_label(const TraceEvent& e, bool comm, float width) {
    auto fits = [&](const std::string& t) { return ImGui::CalcTextSize(t.c_str()).x <= width; };
    if (!comm) return fits(e.name) ? e.name : "";
    static const std::pair<const char*, const char*> kShort[] = {
        {"all_gather", "AG"}, {"reduce_scatter", "RS"}, {"all_reduce", "AR"}, {"all_to_all", "A2A"},
        {"broadcast", "BC"},  {"barrier", "BAR"},       {"send", "send"},     {"recv", "recv"}};
    std::string abbrev = e.name;
    for (const auto& [op, a] : kShort)
        if (e.name == op) abbrev = a;
    const std::string layer = e.label.layer >= 0 ? " L" + std::to_string(e.label.layer) : "";
    for (const std::string& t : {e.name + layer, abbrev + layer, abbrev})
        if (fits(t)) return t;
    return "";
}

// Row 1 and 2 of the panel: payload legend (with filters), axes, step, fit.
void draw_controls(ViewerState& s) {
    TimelineUi& ui = s.timeline;
    const TimelineModel& m = s.vm->timeline;
    ImGui::TextUnformatted("payload:");
    for (int p = 0; p < kPayloads; ++p) {
        ImGui::SameLine();
        const bool present = m.payload_calls[size_t(p)] > 0;
        swatch(payload_color(Payload(p)), present);
        bool on = (ui.filter.payload_mask >> p) & 1u;
        char label[64];
        std::snprintf(label, sizeof label, "%s %s##pl%d", payload_name(Payload(p)),
                      fmt_int(m.payload_calls[size_t(p)]).c_str(), p);
        ImGui::PushStyleVar(ImGuiStyleVar_FramePadding, ImVec2(2, 1));
        if (ImGui::Checkbox(label, &on)) ui.filter.payload_mask ^= 1u << p;
        ImGui::PopStyleVar();
    }
    help_marker("Collectives are coloured by what their bytes are (the trace's payload): param = parameters "
                "(ZeRO-3 gathers them before each layer), grad = gradients (DDP all_reduce, ZeRO "
                "reduce_scatter), act / act_grad = activations and their gradients (tensor, sequence and "
                "pipeline parallelism), optim = optimizer state, scalar = the loss. The number is how many "
                "calls the trace holds, summed over ranks; an outlined square means none. Untick to hide. "
                "Colours: Okabe-Ito (viz/model/palette.cpp).");

    ImGui::TextUnformatted("axis:");
    for (size_t a = 0; a < m.axes.size() && a < 32; ++a) {
        ImGui::SameLine();
        bool on = (ui.filter.axis_mask >> a) & 1u;
        ImGui::PushStyleVar(ImGuiStyleVar_FramePadding, ImVec2(2, 1));
        if (ImGui::Checkbox((m.axes[a] + "##ax").c_str(), &on)) ui.filter.axis_mask ^= 1u << a;
        ImGui::PopStyleVar();
    }
    ImGui::SameLine(0, 24);
    ImGui::SetNextItemWidth(110);
    std::string cur = ui.filter.step < 0 ? "all steps" : "step " + std::to_string(ui.filter.step);
    if (ImGui::BeginCombo("##step", cur.c_str())) {
        if (ImGui::Selectable("all steps", ui.filter.step < 0)) {
            ui.filter.step = -1;
            ui.view.fit(m.t_min, m.t_max);
        }
        for (const StepSpan& st : m.steps)
            if (ImGui::Selectable(("step " + std::to_string(st.step)).c_str(), ui.filter.step == st.step)) {
                ui.filter.step = st.step;
                ui.view.fit(st.t0, st.t1);
            }
        ImGui::EndCombo();
    }
    ImGui::SameLine();
    if (ImGui::SmallButton("fit all")) ui.view.fit(m.t_min, m.t_max);
    ImGui::SameLine();
    ImGui::TextDisabled("showing %s", fmt_time_us(ui.view.t1 - ui.view.t0).c_str());
    help_marker("Mouse wheel: zoom about the mouse.  Drag: pan.  Shift + wheel: scroll through ranks.  "
                "Double-click: fit the whole run.  Click a collective: light up the same call on every "
                "rank of its group; click empty space to move the memory cursor (amber line) there.  "
                "The view starts on step 2 (step 1 warms up).");
    if (m.has_overlap) {
        ImGui::SameLine(0, 24);
        ImGui::TextUnformatted("overlap:");
        ImGui::SameLine();
        ImGui::TextDisabled("queued ---");
        ImGui::SameLine();
        swatch(exposed_color());
        ImGui::TextDisabled("exposed");
        help_marker("An asynchronous collective is issued, runs while the rank computes, and is waited for "
                    "later. The thin line runs from when the rank issued it (issued_us) to when it ran (ts): "
                    "queued. The box is the call, as for any collective. The dark red strip at its end is "
                    "exposed_us long: the part of the call during which this rank was blocked waiting for it. "
                    "It sits at the end because a rank that waits is blocked from its wait() until the call "
                    "completes; the rest of the box ran under compute (hidden). A blocking call is red end to "
                    "end. Calls in flight at the same time stack in rows. Per step: comm = union of the calls, "
                    "hidden = 1 - exposed / comm (`shardscope trace summary`, src/comm/trace/trace_overlap.h; "
                    "Holistic Trace Analysis' comm/compute overlap).");
    }
}

}  // namespace

void draw_timeline(ViewerState& s, ImVec2 size) {
    (void)size;
    const ViewModel& vm = *s.vm;
    const TimelineModel& m = vm.timeline;
    TimelineUi& ui = s.timeline;
    if (!ui.view_set) {
        const auto w = default_window(m);
        ui.view.fit(w[0], w[1]);
        ui.view_set = true;
    }
    heading("Timeline");
    ImGui::SameLine();
    ImGui::TextDisabled("every rank's compute (top) and collectives (bottom) over time");
    if (!vm.run.emulated_links.empty()) {  // the times of the comm lanes are the emulation's
        ImGui::SameLine(0, 16);
        ImGui::TextColored(ImVec4(1.0f, 0.78f, 0.24f, 1.0f), "%s", vm.run.emulated_links.c_str());
    }
    draw_controls(s);

    // ---- geometry -----------------------------------------------------------------
    const float note_h = ImGui::GetTextLineHeightWithSpacing() * (ui.selected_instance >= 0 ? 2 : 1);
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float canvas_h = std::max(avail.y - note_h, kRulerH + 20);
    // Whole pixels, so the lane texture's texels land exactly on screen pixels.
    const float lanes_x = std::floor(origin.x + kLabelW), lanes_w = std::floor(std::max(avail.x - kLabelW, 10.0f));
    const float lanes_y = origin.y + kRulerH, lanes_h = canvas_h - kRulerH;
    const int world = m.world;
    const float rank_h = std::max(lanes_h / float(std::max(world, 1)), 14.0f);
    const float content_h = rank_h * float(world);
    ui.scroll_y = std::clamp(ui.scroll_y, 0.0f, std::max(0.0f, content_h - lanes_h));
    ui.view.x0 = lanes_x;
    ui.view.width = lanes_w;

    ImGui::InvisibleButton("timeline_canvas", ImVec2(avail.x, canvas_h));
    const bool hovered = ImGui::IsItemHovered();
    ImGuiIO& io = ImGui::GetIO();
    ImDrawList* dl = ImGui::GetWindowDrawList();

    // ---- interaction ----------------------------------------------------------------
    const ImVec2 mouse = io.MousePos;
    const bool in_lanes = hovered && mouse.x >= lanes_x && mouse.y >= lanes_y;
    if (hovered && io.MouseWheel != 0) {
        if (io.KeyShift)
            ui.scroll_y = std::clamp(ui.scroll_y - io.MouseWheel * rank_h * 2, 0.0f,
                                     std::max(0.0f, content_h - lanes_h));
        else
            ui.view.zoom(std::pow(1.25, double(io.MouseWheel)), std::max(double(mouse.x), double(lanes_x)));
    }
    if (ImGui::IsItemActive() && ImGui::IsMouseDragging(ImGuiMouseButton_Left, 3.0f)) {
        ui.view.pan_pixels(io.MouseDelta.x);
        ui.scroll_y = std::clamp(ui.scroll_y - io.MouseDelta.y, 0.0f, std::max(0.0f, content_h - lanes_h));
    }
    if (hovered && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) ui.view.fit(m.t_min, m.t_max);

    // What is under the mouse: rank, lane, depth row, bar.
    int hover_rank = -1, hover_bar = -1;
    bool hover_comm = false;
    s.hover_t = -1;
    if (in_lanes && !s.screenshot) {
        s.hover_t = ui.view.t_of(mouse.x);
        hover_rank = int((mouse.y - lanes_y + ui.scroll_y) / rank_h);
        if (hover_rank >= 0 && hover_rank < world) {
            const RowGeom g = row_geom(lanes_y - ui.scroll_y + float(hover_rank) * rank_h, rank_h);
            if (mouse.y >= g.comm_y && mouse.y < g.comm_y + g.comm_h) {
                hover_comm = true;
                const Lane& lane = m.lane(hover_rank, true);
                const int depth = int((mouse.y - g.comm_y) / (g.comm_h / float(lane.depths)));
                hover_bar = pick_bar(lane, ui.view, ui.filter, mouse.x, depth);
            } else if (mouse.y >= g.compute_y && mouse.y < g.compute_y + g.compute_h) {
                const Lane& lane = m.lane(hover_rank, false);
                const int depth = int((mouse.y - g.compute_y) / (g.compute_h / float(lane.depths)));
                hover_bar = pick_bar(lane, ui.view, ui.filter, mouse.x, depth);
            }
        } else {
            hover_rank = -1;
        }
    }
    if (hovered && ImGui::IsMouseReleased(ImGuiMouseButton_Left) &&
        io.MouseDragMaxDistanceSqr[ImGuiMouseButton_Left] < 9.0f && in_lanes) {  // a click, not a drag
        if (hover_bar >= 0 && hover_comm)
            ui.selected_instance = m.lane(hover_rank, true).bars[size_t(hover_bar)].instance;
        else {
            ui.selected_instance = -1;
            s.cursor_t = ui.view.t_of(mouse.x);
        }
    }

    // ---- ruler ----------------------------------------------------------------------
    const ImVec2 clip_a(lanes_x, origin.y), clip_b(lanes_x + lanes_w, origin.y + canvas_h);
    dl->AddRectFilled(ImVec2(origin.x, origin.y), ImVec2(origin.x + avail.x, origin.y + kRulerH),
                      IM_COL32(24, 27, 33, 255));
    dl->PushClipRect(clip_a, clip_b, true);
    const double tick = tick_interval(ui.view, 90);
    const double first_tick = std::ceil(ui.view.t0 / tick);
    for (int k = 0; k < 64; ++k) {  // counted, not t += tick: at huge t a tiny tick would not advance t
        const double t = (first_tick + k) * tick;
        if (t > ui.view.t1) break;
        const float x = float(ui.view.x_of(t));
        dl->AddLine(ImVec2(x, origin.y + kTimeRowH - 6), ImVec2(x, origin.y + kTimeRowH), IM_COL32(150, 150, 160, 255));
        dl->AddText(ImVec2(x + 3, origin.y + 2), IM_COL32(170, 175, 185, 255), fmt_time_us(t).c_str());
    }
    dl->PopClipRect();
    dl->AddText(ImVec2(origin.x + 4, origin.y + 2), IM_COL32(170, 175, 185, 255), "time");
    dl->AddText(ImVec2(origin.x + 4, origin.y + kTimeRowH), IM_COL32(170, 175, 185, 255), "steps");

    // ---- lanes ----------------------------------------------------------------------
    dl->PushClipRect(ImVec2(origin.x, lanes_y), ImVec2(origin.x + avail.x, lanes_y + lanes_h), true);
    const int first = std::max(0, int(ui.scroll_y / rank_h));
    const int last = std::min(world - 1, int((ui.scroll_y + lanes_h) / rank_h));
    const float font_h = ImGui::GetFontSize();
    // One texture for all lanes in view: kRowsPerRank pixel rows per rank (pixel_texture.h):
    // the compute depth rows, the comm depth rows, then the comm rows' queued and exposed overlays.
    constexpr int kDepthRows = kMaxDepth + 1;
    constexpr int kRowsPerRank = 4 * kDepthRows;
    const int tex_w = int(lanes_w);
    PixelTexture& tex = s.lane_texture;
    tex.resize(tex_w, std::max(last - first + 1, 1) * kRowsPerRank);
    const int label_every = std::max(1, int(std::ceil(font_h * 1.1f / rank_h)));
    // Two draw-list channels, so that all lane quads (one texture) and all text (the font
    // texture) each become one draw call: a software rasterizer pays per call too.
    dl->ChannelsSplit(2);
    for (int r = first; r <= last; ++r) {
        const float y = lanes_y - ui.scroll_y + float(r) * rank_h;
        const RowGeom g = row_geom(y, rank_h);
        // The lane background is painted into the texture rows; only the label column gets a rect.
        const ImU32 lane_bg = r % 2 ? kLaneBgAlt : kLaneBg;
        dl->ChannelsSetCurrent(1);
        dl->AddRectFilled(ImVec2(origin.x, y), ImVec2(lanes_x, y + rank_h), lane_bg);
        char label[32];
        std::snprintf(label, sizeof label, "rank %d", r);
        if (rank_h >= 2.2f * font_h) {
            dl->AddText(ImVec2(origin.x + 4, g.compute_y + (g.compute_h - font_h) / 2), IM_COL32(220, 220, 230, 255),
                        label);
            dl->AddText(ImVec2(origin.x + 4, g.comm_y + (g.comm_h - font_h) / 2), IM_COL32(140, 145, 160, 255),
                        "  comm");
        } else if (r % label_every == 0) {  // thin rows: every k-th rank, so labels do not overlap
            dl->AddText(ImVec2(origin.x + 4, y + (rank_h - font_h) / 2), IM_COL32(220, 220, 230, 255), label);
        }
        for (int comm = 0; comm < 2; ++comm) {
            const Lane& lane = m.lane(r, comm == 1);
            ui.rects.clear();
            layout_lane(lane, ui.view, ui.filter, ui.rects);
            // The bars: painted into this lane's texture rows, drawn as one quad per row. Comm
            // rows stack like compute rows: asynchronous calls can be in flight at once.
            const int rows = lane.depths;
            const float row_h = (comm ? g.comm_h : g.compute_h) / float(lane.depths);
            const float top = comm ? g.comm_y : g.compute_y;
            const float gap = (!comm || rows > 1) ? 1.0f : 0.0f;
            auto tex_row = [&](int block, int d) { return (r - first) * kRowsPerRank + block * kDepthRows + d; };
            // Paints row d of @p block with @p background and draws it from y0 to y1.
            auto draw_row = [&](int block, int d, uint32_t background, float y0, float y1) {
                const int t = tex_row(block, d);
                paint_row(ui.rects, d, lanes_x, tex_w, tex.row(t), background);
                dl->AddImage(tex.id(), ImVec2(lanes_x, y0), ImVec2(lanes_x + float(tex_w), y1),
                             ImVec2(0, tex.v(t)), ImVec2(1, tex.v(t)));
            };
            dl->ChannelsSetCurrent(0);
            for (int d = 0; d < rows; ++d) {
                const float y0 = top + row_h * float(d);
                draw_row(comm, d, lane_bg, y0, y0 + row_h - gap);
            }
            // Names on the bars wide enough to hold one (the longest form that fits, no clipping).
            dl->ChannelsSetCurrent(1);
            for (const DrawRect& d : ui.rects) {
                if (row_h < font_h) break;
                if (d.merged != 1 || d.x1 - d.x0 < 24) continue;
                const TraceEvent& e = vm.trace.events[lane.bars[d.bar].event];
                const std::string text = bar_label(e, comm == 1, d.x1 - d.x0 - 6);
                if (text.empty()) continue;
                const float y0 = top + row_h * float(d.depth);
                dl->AddText(ImVec2(d.x0 + 3, y0 + (row_h - font_h) / 2), IM_COL32(255, 255, 255, 235), text.c_str());
            }
            if (!comm || !m.has_overlap) continue;
            // Overlap (viz/model/timeline.h, BarPart): over each comm row, the queued line through
            // its middle and the exposed strip along its bottom, on transparent texture rows.
            dl->ChannelsSetCurrent(0);
            const float line_h = std::max(2.0f, std::floor(row_h * 0.2f));
            const float strip_h = std::max(2.0f, std::floor(row_h * 0.35f));
            ui.rects.clear();
            layout_lane(lane, ui.view, ui.filter, ui.rects, BarPart::queued);
            for (int d = 0; d < rows; ++d) {
                const float mid = top + row_h * (float(d) + 0.5f);
                draw_row(2, d, 0, mid - line_h / 2, mid + line_h / 2);
            }
            ui.rects.clear();
            layout_lane(lane, ui.view, ui.filter, ui.rects, BarPart::exposed);
            for (int d = 0; d < rows; ++d) {
                const float y1 = top + row_h * float(d + 1) - gap;
                draw_row(3, d, 0, y1 - strip_h, y1);
            }
        }
    }
    dl->ChannelsMerge();
    tex.upload();
    // step boundaries over the lanes (clipped to them), and their names in the ruler's step row
    // (its own clip, not the lanes': intersect_with_current_clip_rect = false) where there is room
    dl->PushClipRect(ImVec2(lanes_x, lanes_y), ImVec2(lanes_x + lanes_w, lanes_y + lanes_h), true);
    std::vector<std::pair<float, int>> step_names;  // x and step, drawn after the lines
    float last_label_x = -1e9f;
    for (size_t i = 0; i < m.steps.size(); ++i) {
        const StepSpan& st = m.steps[i];
        const float x = float(ui.view.x_of(st.t0));
        if (x < lanes_x || x > lanes_x + lanes_w) continue;
        if (i > 0 && x - float(ui.view.x_of(m.steps[i - 1].t0)) < 6) continue;  // too dense to draw
        dl->AddLine(ImVec2(x, lanes_y), ImVec2(x, lanes_y + lanes_h), IM_COL32(200, 200, 220, 70));
        char t[24];
        std::snprintf(t, sizeof t, "step %d", st.step);
        if (x - last_label_x < ImGui::CalcTextSize(t).x + 12) continue;
        step_names.emplace_back(x, st.step);
        last_label_x = x;
    }
    dl->PushClipRect(ImVec2(lanes_x, origin.y + kTimeRowH), ImVec2(lanes_x + lanes_w, lanes_y), false);
    for (const auto& [x, step] : step_names) {
        char t[24];
        std::snprintf(t, sizeof t, "step %d", step);
        dl->AddLine(ImVec2(x, origin.y + kTimeRowH), ImVec2(x, lanes_y), IM_COL32(200, 200, 220, 110));
        dl->AddText(ImVec2(x + 3, origin.y + kTimeRowH), IM_COL32(200, 200, 220, 190), t);
    }
    dl->PopClipRect();
    // the selected collective on every rank of its group
    if (ui.selected_instance >= 0 && size_t(ui.selected_instance) < m.instances.size()) {
        for (uint32_t ei : m.instances[size_t(ui.selected_instance)]) {
            const TraceEvent& e = vm.trace.events[ei];
            const RowGeom g = row_geom(lanes_y - ui.scroll_y + float(e.rank) * rank_h, rank_h);
            float x0 = float(ui.view.x_of(e.ts_us)), x1 = float(ui.view.x_of(e.ts_us + e.dur_us));
            if (x1 - x0 < 3) x1 = x0 + 3;
            dl->AddRect(ImVec2(x0 - 2, g.comm_y - 2), ImVec2(x1 + 2, g.comm_y + g.comm_h + 2),
                        IM_COL32(255, 255, 255, 255), 0, 0, 2.0f);
        }
    }
    // cursor and hover line
    const float cx = float(ui.view.x_of(s.cursor_t));
    dl->AddLine(ImVec2(cx, lanes_y), ImVec2(cx, lanes_y + lanes_h), kCursor, 1.5f);
    if (s.hover_t >= 0)
        dl->AddLine(ImVec2(mouse.x, lanes_y), ImVec2(mouse.x, lanes_y + lanes_h), IM_COL32(255, 255, 255, 60));
    dl->PopClipRect();
    dl->PopClipRect();
    if (content_h > lanes_h) {  // a scroll indicator
        const float bar_h = lanes_h * lanes_h / content_h;
        const float bar_y = lanes_y + (lanes_h - bar_h) * ui.scroll_y / (content_h - lanes_h);
        dl->AddRectFilled(ImVec2(origin.x + avail.x - 4, bar_y), ImVec2(origin.x + avail.x, bar_y + bar_h),
                          IM_COL32(160, 160, 170, 160));
    }

    if (hover_bar >= 0) {
        const TraceEvent& e = vm.trace.events[m.lane(hover_rank, hover_comm).bars[size_t(hover_bar)].event];
        if (hover_comm)
            collective_tooltip(e);
        else
            span_tooltip(e);
    }

    // ---- the selection, and where this panel comes from -------------------------------
    if (ui.selected_instance >= 0 && size_t(ui.selected_instance) < m.instances.size()) {
        const auto& inst = m.instances[size_t(ui.selected_instance)];
        const TraceEvent& e = vm.trace.events[inst[0]];
        double first_start = 1e300, last_start = -1e300;
        for (uint32_t ei : inst) {
            first_start = std::min(first_start, vm.trace.events[ei].ts_us);
            last_start = std::max(last_start, vm.trace.events[ei].ts_us);
        }
        ImGui::Text("selected: %s of %s on %s %s, %s per rank, step %d; %zu of %zu ranks; arrival spread %s",
                    e.name.c_str(), payload_name(e.label.payload), e.axis.c_str(), group_str(e.group).c_str(),
                    fmt_bytes(double(e.bytes)).c_str(), e.label.step, inst.size(), e.group.size(),
                    fmt_time_us(last_start - first_start).c_str());
        help_marker("Arrival spread = latest start - earliest start of this call over its group. A collective "
                    "cannot finish before its last member arrives, so the early ranks' bars include waiting: "
                    "a long bar on one rank often means another rank came late.");
    }
    source_note("drawn by viz/app/panel_timeline.cpp from viz/model/timeline.cpp (lanes, instances, pixel merging)");
}

}  // namespace ss::viz
