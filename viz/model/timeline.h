// timeline.h — the trace as lanes of bars: what the Timeline panel draws, without OpenGL.
//
// Every rank gets two lanes, as in the trace (pid = rank, tid = lane):
//
//     rank 0  compute  [forward      ][backward            ][opt]     spans, nested by depth
//             comm       |ag|ag|ag|      |rs|ag|rs|ag|rs|           collectives, coloured by payload
//     rank 1  compute  ...
//
// A bar is one event. Collectives also get an *instance*: the same call seen
// from every rank of its group. Ranks of a group make their calls on it in the
// same order (or the run would have stopped with a desync error), so the k-th
// call of rank r on group G and the k-th call of rank s on G are one
// collective. Send and recv pair the same way on the ordered group [src, dst].
//
// Overlap: an asynchronous collective (trace_overlap.h) is drawn in three parts,
// each a BarPart that layout_lane() lays out like the bars themselves:
//
//     comm   ------[=========call=========]        queued: a thin line from issued_us to ts
//                          [##exposed##]           exposed: a strip at the END of the call,
//                                                  exposed_us long (the rank waits from its
//                                                  wait() until the call completes)
//
// Drawing: a 64-rank trace has ~3,000 bars per lane, far more than the pixels
// of a zoomed-out window. layout_lane() walks only the bars in view and merges
// runs of bars narrower than a pixel into one rect, so a frame draws at most
// about one rect per pixel column per lane, whatever the trace's size.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/trace/trace.h"
#include "comm/trace/trace_overlap.h"
#include "viz/model/palette.h"

namespace ss::viz {

/// One event as the timeline draws it.
struct Bar {
    double t0 = 0, t1 = 0;    ///< start and end, µs since the run's origin
    uint32_t event = 0;       ///< index into Trace::events
    uint32_t rgba = 0;        ///< packed colour (palette.h)
    int32_t instance = -1;    ///< collectives: the call across its group (TimelineModel::instances); -1 for spans
    uint16_t axis = 0;        ///< collectives: index into TimelineModel::axes
    uint8_t payload = 0;      ///< collectives: int(Payload)
    uint8_t depth = 0;        ///< spans: nesting depth (0 = outermost), capped at kMaxDepth
    int32_t step = -1;        ///< the label's (or span args') training step, -1 if none
    double issued = 0;        ///< collectives: when the rank issued it (issued_time_us); t0 for a blocking call
    double exposed0 = 0;      ///< collectives: start of the exposed part, t1 - exposed_time_us; t0 if all exposed
};

/// The part of a bar to lay out: the event itself, or a collective's overlap parts.
enum class BarPart {
    call,     ///< [t0, t1]: the event
    queued,   ///< [issued, t0]: issued but not yet running (empty for a blocking call)
    exposed,  ///< [exposed0, t1]: the rank was blocked in it (empty when it all hid under compute)
};

/// A time interval, µs.
struct Segment {
    double t0 = 0, t1 = 0;  ///< start and end
    /// True if it has no length (nothing to draw).
    bool empty() const { return !(t1 > t0); }
};

/// The interval @p part of @p b covers.
Segment bar_segment(const Bar& b, BarPart part);

/// Deepest nesting level drawn separately; deeper spans share this row.
constexpr int kMaxDepth = 3;

/// One lane of one rank.
struct Lane {
    int rank = 0;              ///< the rank (pid)
    bool comm = false;         ///< false: compute spans (tid 0); true: collectives (tid 1)
    std::vector<Bar> bars;     ///< sorted by t0 (ties: longer first, so parents precede children)
    int depths = 1;            ///< rows needed: 1 + deepest depth
    double max_dur = 0;        ///< longest bar: how far before the view a bar in view can start
    double max_queue = 0;      ///< longest queued part (t0 - issued): how far before t0 a bar's line can reach
};

/// The time span of one training step, over all ranks.
struct StepSpan {
    int step = 0;      ///< step number as labelled in the trace
    double t0 = 0;     ///< earliest start of an event of this step
    double t1 = 0;     ///< latest end
};

/// The trace laid out in lanes.
struct TimelineModel {
    int world = 0;                    ///< ranks
    std::vector<Lane> lanes;          ///< 2 per rank: lanes[2r] compute, lanes[2r+1] comm
    double t_min = 0, t_max = 0;      ///< first start, last end (µs)
    std::vector<std::string> axes;    ///< axes that occur, in first-seen order
    std::array<uint64_t, kPayloads> payload_calls{};  ///< collective events per payload
    std::vector<StepSpan> steps;      ///< sorted by step
    std::vector<std::vector<uint32_t>> instances;  ///< instance -> its events (one per group member)
    /// Some collective carries issued_us or exposed_us (has_overlap_fields): the timeline draws
    /// the queued and exposed parts. Without them every call is blocking and exposed whole.
    bool has_overlap = false;

    /// The compute (comm = false) or comm lane of @p rank.
    const Lane& lane(int rank, bool comm) const { return lanes[size_t(2 * rank + (comm ? 1 : 0))]; }
};

/// Builds the lanes of @p trace.
TimelineModel build_timeline(const Trace& trace);

/// Which bars to show. Spans pass the axis and payload tests; a step filter applies to both.
struct TimelineFilter {
    uint32_t axis_mask = 0xffffffffu;     ///< bit i: show TimelineModel::axes[i]
    uint32_t payload_mask = 0xffffffffu;  ///< bit int(Payload)
    int step = -1;                        ///< only this step, -1 all
    /// True if @p b is shown (@p is_comm: the bar is a collective).
    bool pass(const Bar& b, bool is_comm) const {
        if (step >= 0 && b.step != step) return false;
        if (!is_comm) return true;
        return ((axis_mask >> (b.axis & 31)) & 1u) && ((payload_mask >> b.payload) & 1u);
    }
};

/// The visible time window mapped onto pixels: x = x0 + (t - t0) * width / (t1 - t0).
struct TimeView {
    double t0 = 0, t1 = 1;   ///< visible time, µs
    float x0 = 0;            ///< screen x of t0
    float width = 1;         ///< pixels from t0 to t1

    /// Screen x of time @p t.
    double x_of(double t) const { return x0 + (t - t0) * width / (t1 - t0); }
    /// Time at screen x @p x.
    double t_of(double x) const { return t0 + (x - x0) * (t1 - t0) / width; }
    /// Zooms by @p factor (> 1 zooms in) keeping the time under screen x @p x fixed.
    void zoom(double factor, double x);
    /// Drags the picture by @p dx pixels: dragging right (dx > 0) brings earlier times into view.
    void pan_pixels(double dx);
    /// Shows [a, b] with @p pad (fraction of the span) on each side.
    void fit(double a, double b, double pad = 0.02);
};

/// One rect to draw: a bar, or a run of sub-pixel bars merged.
struct DrawRect {
    float x0 = 0, x1 = 0;   ///< screen x, already clipped to the view and at least 1 px wide
    uint32_t rgba = 0;      ///< the colour of the longest member
    uint32_t bar = 0;       ///< index in Lane::bars of the longest member
    uint32_t merged = 1;    ///< bars in this rect
    uint8_t depth = 0;      ///< row
};

/// Appends to @p out the rects of @p lane's bars that pass @p filter within @p view.
/// Bars narrower than a pixel whose pixels touch are merged (per depth row).
/// With @p part queued or exposed, the rects are those parts of the bars (bars without
/// one are skipped), in the colours queued_rgba() and exposed_color() give.
void layout_lane(const Lane& lane, const TimeView& view, const TimelineFilter& filter,
                 std::vector<DrawRect>& out, BarPart part = BarPart::call);

/// The colour of a queued line: the bar's colour @p rgba, at a lower alpha (lighter on the lane).
uint32_t queued_rgba(uint32_t rgba);

/// Paints the rects of row @p depth into one row of @p width pixels starting at screen x
/// @p x0 (RGBA as packed): pixel i covers [x0 + i, x0 + i + 1) and takes the colour of the
/// last rect that covers any part of it, or @p background where none does. The timeline draws a zoomed-out
/// lane as one textured quad of such a row instead of thousands of rects: a software
/// rasterizer (Mesa's llvmpipe under Xvfb) pays per triangle, a texture row costs one quad.
void paint_row(const std::vector<DrawRect>& rects, int depth, float x0, int width, uint32_t* row,
               uint32_t background = 0);

/// The bar of @p lane under screen x @p x on row @p depth that passes @p filter, or -1.
/// Within @p slack_px pixels of a bar counts as on it (thin bars stay clickable).
int pick_bar(const Lane& lane, const TimeView& view, const TimelineFilter& filter, double x, int depth,
             double slack_px = 2.0);

/// The default window: the second step when the trace has two or more (the first
/// one warms up), else everything. Returns {t0, t1}.
std::array<double, 2> default_window(const TimelineModel& m);

}  // namespace ss::viz
