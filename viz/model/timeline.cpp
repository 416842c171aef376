// timeline.cpp — lanes, instances, steps, and the pixel merging of layout_lane (see timeline.h).
#include "viz/model/timeline.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "comm/trace/trace_summary.h"

namespace ss::viz {

namespace {

// Nesting depth of each bar: a bar that starts before the previous one ends is inside it.
void assign_depths(Lane& lane) {
    std::vector<double> open_ends;  // ends of the spans enclosing the current one
    int deepest = 0;
    for (Bar& b : lane.bars) {
        while (!open_ends.empty() && open_ends.back() <= b.t0) open_ends.pop_back();
        b.depth = uint8_t(std::min<size_t>(open_ends.size(), kMaxDepth));
        deepest = std::max(deepest, int(b.depth));
        open_ends.push_back(b.t1);
    }
    lane.depths = deepest + 1;
}

}  // namespace

TimelineModel build_timeline(const Trace& trace) {
    TimelineModel m;
    m.world = trace.world();
    m.lanes.resize(size_t(2 * m.world));
    for (int r = 0; r < m.world; ++r) {
        m.lanes[size_t(2 * r)].rank = r;
        m.lanes[size_t(2 * r + 1)].rank = r;
        m.lanes[size_t(2 * r + 1)].comm = true;
    }
    std::map<std::string, int> axis_index;
    // Instance matching: (group key, k-th call of this rank on it) -> instance id.
    std::map<std::string, int> calls_so_far;  // group key + "#" + rank -> calls made
    std::map<std::pair<std::string, int>, int> instance_of;
    std::map<int, StepSpan> steps;
    bool any = false;

    for (size_t i = 0; i < trace.events.size(); ++i) {
        const TraceEvent& e = trace.events[i];
        if (e.kind == TraceEvent::Kind::memory) continue;
        const bool is_comm = e.kind == TraceEvent::Kind::collective;
        Bar b;
        b.t0 = e.ts_us;
        b.t1 = e.ts_us + e.dur_us;
        b.event = uint32_t(i);
        b.step = event_step(e);  // src/comm/trace/trace_summary.h, as trace summary's --step
        b.issued = b.t0;
        b.exposed0 = b.t0;
        if (is_comm) {
            b.issued = issued_time_us(e);
            b.exposed0 = b.t1 - exposed_time_us(e);
            m.has_overlap = m.has_overlap || has_overlap_fields(e);
            auto [it, added] = axis_index.emplace(e.axis, int(m.axes.size()));
            if (added) m.axes.push_back(e.axis);
            b.axis = uint16_t(it->second);
            b.payload = uint8_t(e.label.payload);
            b.rgba = pack(payload_color(e.label.payload));
            m.payload_calls[size_t(e.label.payload)] += 1;
            const bool p2p = e.name == "send" || e.name == "recv";
            std::string key = (p2p ? "p2p " : "") + e.axis + " [";
            for (int g : e.group) key += std::to_string(g) + ",";
            key += "]";
            const int k = calls_so_far[key + "#" + std::to_string(e.rank)]++;
            auto [inst, fresh] = instance_of.emplace(std::make_pair(key, k), int(m.instances.size()));
            if (fresh) m.instances.emplace_back();
            b.instance = inst->second;
            m.instances[size_t(b.instance)].push_back(uint32_t(i));
        } else {
            b.rgba = pack(span_color(e.cat));
        }
        m.lanes[size_t(2 * e.rank + (is_comm ? 1 : 0))].bars.push_back(b);
        if (b.step >= 0) {
            auto [s, fresh] = steps.emplace(b.step, StepSpan{b.step, b.t0, b.t1});
            if (!fresh) {
                s->second.t0 = std::min(s->second.t0, b.t0);
                s->second.t1 = std::max(s->second.t1, b.t1);
            }
        }
        m.t_min = any ? std::min(m.t_min, b.t0) : b.t0;
        m.t_max = any ? std::max(m.t_max, b.t1) : b.t1;
        any = true;
    }
    for (Lane& lane : m.lanes) {
        std::stable_sort(lane.bars.begin(), lane.bars.end(), [](const Bar& a, const Bar& b) {
            return a.t0 < b.t0 || (a.t0 == b.t0 && a.t1 > b.t1);
        });
        assign_depths(lane);
        for (const Bar& b : lane.bars) {
            lane.max_dur = std::max(lane.max_dur, b.t1 - b.t0);
            lane.max_queue = std::max(lane.max_queue, b.t0 - b.issued);
        }
    }
    for (auto& [k, s] : steps) m.steps.push_back(s);
    if (!any) m.t_max = 1;
    return m;
}

void TimeView::zoom(double factor, double x) {
    const double t = t_of(x);
    // No closer than a nanosecond, nor than double precision can tell times apart at t.
    const double span = std::max({(t1 - t0) / factor, 1e-3, std::fabs(t) * 1e-12});
    const double frac = (x - x0) / width;
    t0 = t - frac * span;
    t1 = t0 + span;
}

void TimeView::pan_pixels(double dx) {
    const double dt = dx * (t1 - t0) / width;
    t0 -= dt;
    t1 -= dt;
}

void TimeView::fit(double a, double b, double pad) {
    if (b <= a) b = a + 1;
    const double p = (b - a) * pad;
    t0 = a - p;
    t1 = b + p;
}

namespace {

// The first bar that can reach into [t0, ...): bars are sorted by start, and none
// is longer than max_dur, so nothing before t0 - max_dur can.
size_t first_candidate(const Lane& lane, double t0) {
    const double from = t0 - lane.max_dur;
    return size_t(std::lower_bound(lane.bars.begin(), lane.bars.end(), from,
                                   [](const Bar& b, double t) { return b.t0 < t; }) -
                  lane.bars.begin());
}

}  // namespace

Segment bar_segment(const Bar& b, BarPart part) {
    switch (part) {
        case BarPart::queued: return {b.issued, b.t0};
        case BarPart::exposed: return {std::max(b.exposed0, b.t0), b.t1};
        case BarPart::call: break;
    }
    return {b.t0, b.t1};
}

uint32_t queued_rgba(uint32_t rgba) { return (rgba & 0x00ffffffu) | (uint32_t(150) << 24); }

void layout_lane(const Lane& lane, const TimeView& view, const TimelineFilter& filter,
                 std::vector<DrawRect>& out, BarPart part) {
    const float xl = view.x0, xr = view.x0 + view.width;
    // One open rect per row; a sub-pixel bar touching it joins it instead of starting a new one.
    DrawRect open[kMaxDepth + 1];
    double open_longest[kMaxDepth + 1] = {};
    bool has_open[kMaxDepth + 1] = {};
    auto flush = [&](int d) {
        if (!has_open[d]) return;
        if (open[d].x1 - open[d].x0 < 1.0f) open[d].x1 = open[d].x0 + 1.0f;
        out.push_back(open[d]);
        has_open[d] = false;
    };
    // A queued line ends at its bar's start, so it reaches at most max_queue before it.
    const double lead = part == BarPart::queued ? lane.max_queue : 0.0;
    const uint32_t exposed_rgba = pack(exposed_color());
    for (size_t i = first_candidate(lane, view.t0); i < lane.bars.size(); ++i) {
        const Bar& b = lane.bars[i];
        if (b.t0 - lead > view.t1) break;
        const Segment seg = bar_segment(b, part);
        if ((part != BarPart::call && seg.empty()) || seg.t1 < view.t0 || seg.t0 > view.t1 ||
            !filter.pass(b, lane.comm))
            continue;
        const uint32_t rgba = part == BarPart::call     ? b.rgba
                              : part == BarPart::queued ? queued_rgba(b.rgba)
                                                        : exposed_rgba;
        const float x0 = std::max(float(view.x_of(seg.t0)), xl);
        const float x1 = std::min(float(view.x_of(seg.t1)), xr);
        const int d = b.depth;
        const double dur = seg.t1 - seg.t0;
        const bool thin = x1 - x0 < 1.0f;
        if (has_open[d] && thin && x0 <= open[d].x1 + 1.0f) {  // joins the open run
            open[d].x1 = std::max(open[d].x1, x1);
            open[d].merged += 1;
            if (dur > open_longest[d]) {
                open_longest[d] = dur;
                open[d].rgba = rgba;
                open[d].bar = uint32_t(i);
            }
            continue;
        }
        flush(d);
        open[d] = DrawRect{x0, x1, rgba, uint32_t(i), 1, uint8_t(d)};
        open_longest[d] = dur;
        has_open[d] = true;
        if (!thin) flush(d);  // a wide bar stands alone
    }
    for (int d = 0; d <= kMaxDepth; ++d) flush(d);
}

void paint_row(const std::vector<DrawRect>& rects, int depth, float x0, int width, uint32_t* row,
               uint32_t background) {
    std::fill(row, row + width, background);
    for (const DrawRect& d : rects) {
        if (d.depth != depth) continue;
        const int a = std::max(0, int(std::floor(d.x0 - x0)));
        const int b = std::min(width, int(std::ceil(d.x1 - x0)));
        std::fill(row + a, row + std::max(a, b), d.rgba);
    }
}

int pick_bar(const Lane& lane, const TimeView& view, const TimelineFilter& filter, double x, int depth,
             double slack_px) {
    const double t = view.t_of(x);
    const double slack = slack_px * (view.t1 - view.t0) / view.width;
    int best = -1;
    double best_dist = 1e300;
    for (size_t i = first_candidate(lane, t - slack); i < lane.bars.size(); ++i) {
        const Bar& b = lane.bars[i];
        if (b.t0 > t + slack) break;
        if (b.depth != depth || !filter.pass(b, lane.comm)) continue;
        const double dist = t < b.t0 ? b.t0 - t : (t > b.t1 ? t - b.t1 : 0.0);
        if (dist <= slack && dist < best_dist) {
            best_dist = dist;
            best = int(i);
        }
    }
    return best;
}

std::array<double, 2> default_window(const TimelineModel& m) {
    for (const StepSpan& s : m.steps)
        if (m.steps.size() >= 2 && s.step == m.steps[1].step) return {s.t0, s.t1};
    return {m.t_min, m.t_max};
}

}  // namespace ss::viz
