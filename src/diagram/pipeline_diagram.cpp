// pipeline_diagram.cpp — `shardscope diagram 1f1b`: a pipeline schedule's timeline.
//
// The boxes are the schedule's own lists (schedule/pipeline_schedule.h,
// make_pipe_schedule) run by its own simulation (simulate_pipe_lists, forward
// 1 tick, backward 2): the same data `shardscope schedule` prints as text.
//
//   rank 0 | F0 F1 F2 F3 .  .  .  .  .  .  B0 B0 F4 B1 B1 ...      one column = one tick
//   rank 3 | .  .  .  F0 B0 B0 F1 B1 B1 F2 ...                      grey = idle (the bubble)
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/check.h"
#include "diagram/diagram.h"

namespace ss::diagram {

namespace {

constexpr int kLeft = 70, kTick = 22, kRowH = 30, kTop = 70;

// A micro-batch's forward in a light tint, its backward in the full colour.
const char* forward_colour(int micro) {
    static const char* c[] = {"#a6c4e0", "#f8c38f", "#a8d5a0", "#f1a7a8", "#b9dedb",
                              "#f6e3a0", "#d7bcd1", "#ffcdd2", "#cdb9ab", "#dcd7d4"};
    return c[micro % 10];
}

std::string fixed3(double x) {  // 0.375: three decimals from an integer, machine-independent
    const long k = std::lround(x * 1000);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%ld.%03ld", k / 1000, k % 1000);
    return buf;
}

}  // namespace

Svg draw_pipeline(const PipeSpec& spec) {
    SS_CHECK(int64_t(spec.p) * spec.m * spec.v <= 256,
             "--pp " << spec.p << " x --ga " << spec.m << " x --pp-virtual " << spec.v
                     << " is more boxes than the picture draws legibly (256); try --pp 4 --ga 8");
    const PipeSchedule sched = make_pipe_schedule(spec);
    const PipeStats stats = check_pipe_schedule(sched);
    const PipeRun run = simulate_pipe_lists(sched.ranks, spec.v, 1, 2);
    const int p = spec.p, v = spec.v;

    Svg s(std::max(kLeft + kTick * int(run.makespan) + 20, 760), kTop + kRowH * p + 96);
    std::string title = std::string("Pipeline schedule ") + schedule_name(spec.kind) + ": p = " + std::to_string(p) +
                        " stages, m = " + std::to_string(spec.m) + " micro-batches";
    if (v > 1) title += ", v = " + std::to_string(v) + " chunks per stage";
    s.text(10, 22, title, Anchor::start, 15, "#222222", true);
    s.text(10, 42,
           v > 1 ? "F3a = forward of micro-batch 3 on chunk a (1 tick: one chunk, 1/v of a stage's layers), B3a = "
                   "its backward (2 ticks); grey = idle, the bubble"
                 : "F3 = forward of micro-batch 3 (1 tick), B3 = its backward (2 ticks); grey = idle, the bubble",
           Anchor::start, 12, "#555555");
    for (int r = 0; r < p; ++r) {
        const int y = kTop + kRowH * r;
        s.text(10, y + 19, "rank " + std::to_string(r), Anchor::start, 12, "#222222", true);
        s.rect(kLeft, y, kTick * int(run.makespan), kRowH - 6, "#eeeeee", "");
        for (size_t i = 0; i < sched.ranks[size_t(r)].size(); ++i) {
            const PipeAction& a = sched.ranks[size_t(r)][i];
            if (a.op != PipeOp::forward && a.op != PipeOp::backward) continue;
            const bool fwd = a.op == PipeOp::forward;
            const int x = kLeft + kTick * int(run.start[size_t(r)][i]);
            const int w = kTick * (fwd ? 1 : 2);
            s.rect(x, y, w, kRowH - 6, fwd ? forward_colour(a.micro) : svg_colour(a.micro), "#ffffff");
            const std::string label = pipe_cell_label(a, v);
            s.text(x + w / 2, y + 16, label, Anchor::middle, v > 1 || a.micro >= 10 ? 9 : 11,
                   fwd ? "#222222" : "#ffffff");
        }
    }
    const int yb = kTop + kRowH * p;
    for (long t = 0; t <= run.makespan; t += 5) {
        s.line(kLeft + kTick * int(t), yb - 2, kLeft + kTick * int(t), yb + 3, "#888888");
        s.text(kLeft + kTick * int(t), yb + 15, std::to_string(t), Anchor::middle, 10, "#555555");
    }
    s.text(kLeft - 8, yb + 15, "tick", Anchor::end, 10, "#555555");  // left of 0, clear of the numbers
    const std::string formula = v > 1 ? "(p-1)/(v m)" : "(p-1)/m";
    s.text(10, yb + 38,
           "step = " + std::to_string(run.makespan) + " ticks; bubble " + formula + " = " +
               fixed3(pipe_bubble_formula(spec)) + " of the compute (counted from the lists: " +
               fixed3(stats.bubble_fraction) + ")",
           Anchor::start, 12);
    // Interleaved: the count is of chunk-micro-batches, each 1/v of a stage's activations.
    const int in_flight = stats.max_in_flight[0];
    char per_micro[32];
    std::snprintf(per_micro, sizeof per_micro, "%g", double(in_flight) / v);
    s.text(10, yb + 56,
           v > 1 ? "at most " + std::to_string(in_flight) + " chunks' activations in flight on rank 0 (" + per_micro +
                       " micro-batches' worth; GPipe: all m = " + std::to_string(spec.m) + ")"
                 : "at most " + std::to_string(in_flight) + " micro-batches' activations in flight on rank 0 (GPipe: "
                   "all m = " + std::to_string(spec.m) + ")",
           Anchor::start, 12);
    std::string cmd = "drawn by: shardscope diagram 1f1b --pp " + std::to_string(p) + " --ga " +
                      std::to_string(spec.m) + " --schedule " + schedule_name(spec.kind);
    if (v > 1) cmd += " --pp-virtual " + std::to_string(v);
    s.note(10, yb + 76, cmd + " (the same lists as `shardscope schedule`)");
    return s;
}

}  // namespace ss::diagram
