// zero_diagram.cpp — `shardscope diagram zero`: ZeRO stages 0-3, what each rank holds.
//
// One row per stage, one column per rank; in each cell three bars, the flat
// parameter buffer cut into its units (model/gpt2.h, make_units) and each
// unit into its N chunks (parallel/shard_plan.h, make_shard_plan):
//
//              rank 0                 rank 1            ...
//   stage 3    p  [#|.|.|.][#|.|.|.]  p  [.|#|.|.][.|#|.|.]      # = held by this rank
//              g  [#|.|.|.][#|.|.|.]  g  [.|#|.|.][.|#|.|.]      . = another rank's chunk
//              os [#|.|.|.][#|.|.|.]  os [.|#|.|.][.|#|.|.]
//
// Bytes beside each bar are the rank's elements times 2 (bf16 params), 2 (bf16
// grads) and 12 (fp32 master, m, v): the table of parallel/zero.h, with Psi / N
// counted as the plan pads it, and checked against the planner (plan/memory.h).
#include <algorithm>

#include "core/check.h"
#include "diagram/diagram.h"
#include "model/gpt2.h"
#include "parallel/shard_plan.h"
#include "plan/memory.h"

namespace ss::diagram {

namespace {

constexpr int kLeft = 190, kBarW = 170, kBarH = 13, kCellW = 290, kStageH = 78, kTop = 92;
const char* const kHeld[3] = {"#4e79a7", "#f28e2b", "#59a14f"};  // params, grads, optimizer states
const char* const kOther = "#e6e6e6";

struct StageRow {
    const char* name;
    const char* formula;
};
const StageRow kStages[4] = {{"stage 0 (DDP)", "2 Psi + 2 Psi + 12 Psi"},
                             {"stage 1 (P_os)", "2 Psi + 2 Psi + 12 Psi / N"},
                             {"stage 2 (P_os+g)", "2 Psi + 14 Psi / N"},
                             {"stage 3 (P_os+g+p)", "16 Psi / N"}};

// x offset and width of each unit in a bar: proportional to its padded size, at least 14 px.
std::vector<std::pair<int, int>> unit_spans(const ShardPlan& plan) {
    int64_t total = 0;
    for (size_t u = 0; u < plan.units.size(); ++u) total += plan.padded(int(u));
    const int n_units = int(plan.units.size());
    const int min_w = 14, free_w = kBarW - min_w * n_units;
    std::vector<std::pair<int, int>> spans;
    int x = 0;
    for (int u = 0; u < n_units; ++u) {
        const int w = min_w + std::max(0, svg_round(double(free_w) * double(plan.padded(u)) / double(total)));
        spans.push_back({x, w});
        x += w;
    }
    return spans;
}

}  // namespace

Svg draw_zero_stages(const GPT2Config& cfg, int ranks) {
    SS_CHECK(ranks >= 1 && ranks <= 8, "--ranks " << ranks << ": the zero picture draws 1 to 8 ranks; try --ranks 4");
    const ParamLayout lay = make_param_layout(cfg);
    const std::vector<Unit> units = make_units(lay);
    SS_CHECK(int(units.size()) <= 8, "--model " << cfg.name << " has " << units.size()
                                                << " units, more than the zero picture draws legibly (8); "
                                                   "try --model tiny or small");
    std::vector<ShardPlan> plans;
    for (int r = 0; r < ranks; ++r) plans.push_back(make_shard_plan(units, ranks, r));
    const int64_t psi = lay.total, shard = plans[0].shard_size;
    const auto spans = unit_spans(plans[0]);

    Svg s(kLeft + kCellW * ranks + 10, kTop + kStageH * 4 + 70);
    s.text(10, 24, "ZeRO stages 0-3: what each of N = " + std::to_string(ranks) + " ranks holds (model " + cfg.name +
                       ", Psi = " + std::to_string(psi) + " parameters, bf16 mixed precision)",
           Anchor::start, 15, "#222222", true);
    const char* rows[3] = {"p   parameters (bf16, 2 B)", "g   gradients (bf16, 2 B)",
                           "os  optimizer: fp32 master, m, v (12 B)"};
    for (int k = 0; k < 3; ++k) {
        s.rect(10 + 250 * k, 36, 14, 12, kHeld[k]);
        s.text(30 + 250 * k, 47, rows[k], Anchor::start, 12);
    }
    s.rect(800, 36, 14, 12, kOther);
    s.text(820, 47, "another rank's chunk", Anchor::start, 12);
    for (int r = 0; r < ranks; ++r)
        s.text(kLeft + kCellW * r + 20 + kBarW / 2, kTop - 12, "rank " + std::to_string(r), Anchor::middle, 13,
               "#222222", true);

    for (int st = 0; st < 4; ++st) {
        const int y0 = kTop + kStageH * st;
        s.line(10, y0 - 4, s.width() - 10, y0 - 4, "#cccccc");
        s.text(10, y0 + 22, kStages[st].name, Anchor::start, 13, "#222222", true);
        s.note(10, y0 + 40, kStages[st].formula);
        // The same bytes the planner predicts (plan/memory.h, model_states), or the picture is wrong.
        const ModelStates ms = model_states(model_slice(cfg, 1, 1, 0), st, ranks, DType::bf16);
        for (int r = 0; r < ranks; ++r) {
            const ShardPlan& plan = plans[size_t(r)];
            const bool sharded[3] = {st >= 3, st >= 2, st >= 1};  // params, grads, optimizer states
            const int bytes_per[3] = {2, 2, 12};
            int64_t total = 0;
            const int x0 = kLeft + kCellW * r;
            for (int k = 0; k < 3; ++k) {
                const int y = y0 + 6 + k * (kBarH + 5);
                s.note(x0, y + kBarH - 2, k == 0 ? "p" : k == 1 ? "g" : "os");
                for (size_t u = 0; u < plan.units.size(); ++u) {
                    const auto [ux, uw] = spans[u];
                    const ShardPlan::UnitShard& us = plan.units[u];
                    // Chunk i is elements [i c, (i + 1) c) of the unit padded to N c (the last may be partly padding).
                    const double padded = double(plan.padded(int(u)));
                    for (int i = 0; i < ranks; ++i) {
                        const int cx = ux + svg_round(uw * double(i * us.chunk) / padded);
                        const int cw = ux + svg_round(uw * double((i + 1) * us.chunk) / padded) - cx;
                        const bool held = !sharded[k] || i == plan.index;
                        s.rect(x0 + 20 + cx, y, cw, kBarH, held ? kHeld[k] : kOther, "#ffffff");
                    }
                }
                const int64_t b = int64_t(bytes_per[k]) * (sharded[k] ? plan.shard_size : psi);
                total += b;
                s.text(x0 + 24 + kBarW, y + kBarH - 2, svg_bytes(double(b)), Anchor::start, 11);
            }
            SS_CHECK(total == ms.total(), "zero picture: rank " << r << " of stage " << st << " holds " << total
                                                                << " bytes by the shard plan, the planner says "
                                                                << ms.total());
            s.text(x0 + 20, y0 + 6 + 3 * (kBarH + 5) + 10, "total " + svg_bytes(double(total)), Anchor::start, 11,
                   "#222222", true);
        }
    }
    // The units and their chunks, as the plan has them.
    const int yf = kTop + kStageH * 4 + 8;
    std::string line = "units (model/gpt2.h make_units, drawn at least 14 px wide):";
    for (size_t u = 0; u < units.size(); ++u) {
        const std::string name = units[u].layer < 0 ? "embeddings" : units[u].layer == cfg.L
                                                                         ? "ln_f"
                                                                         : "block " + std::to_string(units[u].layer);
        line += (u ? ", " : " ") + name + " " + std::to_string(units[u].size());
    }
    s.note(10, yf + 14, line + " elements");
    std::string chunks = "chunk per rank = ceil(P_u / N) (parallel/shard_plan.h make_shard_plan):";
    for (size_t u = 0; u < units.size(); ++u) chunks += (u ? ", " : " ") + std::to_string(plans[0].units[u].chunk);
    s.text(10, yf + 30, chunks + "; a rank's shard = " + std::to_string(shard) + " elements", Anchor::start, 11,
           "#555555");
    s.note(10, yf + 46, "drawn by: shardscope diagram zero " + model_flags_of(cfg) + " --ranks " + std::to_string(ranks));
    return s;
}

}  // namespace ss::diagram
