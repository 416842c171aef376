// tp_diagram.cpp — `shardscope diagram tp`: Megatron's MLP split over t ranks.
//
//                  f              ColumnParallelLinear     GELU   RowParallelLinear       g
//   X [BT, C] --> (f) --> rank 0:  X W_fc[:, 0:4C/t]    --> gelu --> . W_proj[0:4C/t, :] --> (g) --> Y [BT, C]
//                     --> rank 1:  X W_fc[:, 4C/t:..]   --> gelu --> . W_proj[4C/t:.., :] -->
//
//   f: forward identity, backward all-reduce      g: forward all-reduce, backward identity
//
// Each slice's shape and place are the layout's (model/params.h, make_param_layout
// with tp: Split::cols for mlp.c_fc, Split::rows for mlp.c_proj), drawn to scale
// (4C wide is 4 times C).
#include <algorithm>

#include "core/check.h"
#include "diagram/diagram.h"
#include "model/params.h"

namespace ss::diagram {

namespace {

constexpr int kC = 40;        // px for C (4C is 160 px)
constexpr int kTop = 84, kLaneGap = 30;

}  // namespace

Svg draw_tp_mlp(const GPT2Config& cfg, int tp) {
    SS_CHECK(tp >= 2 && tp <= 8, "--tp " << tp << ": the tp picture draws a split over 2 to 8 ranks"
                                         << (tp == 1 ? " (at 1 nothing is split)" : "") << "; try --tp 2");
    const int64_t C = cfg.C;
    const int lane_h = std::max<int>(kC, 4 * kC / tp) + kLaneGap + 14;
    const int x_fc = 200, x_gelu = 470, x_proj = 560, x_y = 760, x_g = 900;
    Svg s(1060, kTop + lane_h * tp + 80);
    s.text(10, 24, "Tensor parallelism: the MLP of a block over t = " + std::to_string(tp) + " ranks (model " +
                       cfg.name + ", C = " + std::to_string(C) + ", 4C = " + std::to_string(4 * C) + ")",
           Anchor::start, 15, "#222222", true);
    s.text(10, 44, "f: forward identity, backward all-reduce.   g: forward all-reduce, backward identity.   "
                   "(Shoeybi et al. 2019, sec. 3, fig. 3a)",
           Anchor::start, 12, "#555555");
    s.text(x_fc, kTop - 14, "ColumnParallelLinear: W_fc by columns", Anchor::start, 12, "#222222", true);
    s.text(x_proj, kTop - 14, "RowParallelLinear: W_proj by rows", Anchor::start, 12, "#222222", true);

    const int y_mid = kTop + lane_h * tp / 2 - kLaneGap / 2;
    // X and f, shared by the lanes.
    s.rect(10, y_mid - 20, 80, 40, "#dddddd");
    s.text(50, y_mid - 2, "X", Anchor::middle, 13, "#222222", true);
    s.text(50, y_mid + 13, "[B T, " + std::to_string(C) + "]", Anchor::middle, 10);
    s.rect(120, y_mid - 16, 32, 32, "#ffffff", "#333333");
    s.text(136, y_mid + 6, "f", Anchor::middle, 16, "#222222", true);
    s.line(90, y_mid, 120, y_mid, "#333333", 1, false, true);
    // g and Y.
    s.rect(x_g - 16, y_mid - 16, 32, 32, "#ffffff", "#333333");
    s.text(x_g, y_mid + 6, "g", Anchor::middle, 16, "#222222", true);
    s.rect(x_g + 50, y_mid - 20, 90, 40, "#dddddd");
    s.text(x_g + 95, y_mid - 2, "Y = sum_r Y_r", Anchor::middle, 10, "#222222", true);
    s.text(x_g + 95, y_mid + 13, "[B T, " + std::to_string(C) + "]", Anchor::middle, 10);
    s.line(x_g + 16, y_mid, x_g + 50, y_mid, "#333333", 1, false, true);

    for (int r = 0; r < tp; ++r) {
        const ParamLayout lay = make_param_layout(cfg, tp, r);
        const ParamSpec& fc = lay.block(0, kFcW);
        const ParamSpec& proj = lay.block(0, kFcProjW);
        SS_CHECK(fc.split == Split::cols && proj.split == Split::rows,
                 "tp picture: mlp.c_fc must be split by columns and mlp.c_proj by rows (model/params.cpp)");
        const int64_t cols = fc.shape[1], rows = proj.shape[0];
        const int w_fc = int(kC * cols / C), h_proj = int(kC * rows / C);
        const int y = kTop + lane_h * r;
        const char* col = svg_colour(r);
                // W_fc slice [C, 4C/t]: C rows tall, 4C/t columns wide.
        s.rect(x_fc, y, w_fc, kC, col);
        s.text(x_fc, y + kC + 13,
               "W_fc[:, " + std::to_string(r * cols) + ":" + std::to_string((r + 1) * cols) + "]  [" +
                   std::to_string(fc.shape[0]) + ", " + std::to_string(cols) + "]",
               Anchor::start, 11);
        // "rank r" where the slice is wide enough for it (t <= 2 at 4C = 160 px), else "r".
        s.text(x_fc + w_fc / 2, y + kC / 2 + 5, (w_fc >= 60 ? "rank " : "") + std::to_string(r), Anchor::middle,
               w_fc >= 30 ? 12 : 10, "#ffffff", true);
        s.line(152, y_mid, x_fc, y + kC / 2, "#333333", 1, false, true);
        s.text(x_gelu, y + kC / 2 + 4, "GELU", Anchor::middle, 11);
        s.line(x_fc + w_fc + 4, y + kC / 2, x_gelu - 18, y + kC / 2, "#333333", 1, false, true);
        s.line(x_gelu + 18, y + kC / 2, x_proj - 4, y + kC / 2, "#333333", 1, false, true);
        // W_proj slice [4C/t, C]: 4C/t rows tall, C columns wide.
        s.rect(x_proj, y, kC, h_proj, col);
        s.text(x_proj + kC + 8, y + 12,
               "W_proj[" + std::to_string(r * rows) + ":" + std::to_string((r + 1) * rows) + ", :]  [" +
                   std::to_string(rows) + ", " + std::to_string(proj.shape[1]) + "]",
               Anchor::start, 11);
        s.note(x_proj + kC + 8, y + 28, "Y_" + std::to_string(r) + " partial [B T, " + std::to_string(C) + "]");
        s.line(x_y, y + kC / 2, x_g - 16, y_mid, "#333333", 1, false, true);
    }
    const int yb = kTop + lane_h * tp;
    s.note(10, yb + 10, "no communication inside the MLP: f's all-reduce runs in backward (dX), g's in forward (Y); "
                        "each rank holds 1/t of W_fc, its bias, and W_proj");
    s.note(10, yb + 28, "slices from model/params.h make_param_layout(cfg, tp, tp_rank): Split::cols (mlp.c_fc), "
                        "Split::rows (mlp.c_proj); operators in parallel/tensor_parallel.h");
    s.note(10, yb + 46, "drawn by: shardscope diagram tp " + model_flags_of(cfg) + " --tp " + std::to_string(tp));
    return s;
}

}  // namespace ss::diagram
