// hpz_diagram.cpp — `shardscope diagram hpz`: ZeRO++ hpZ's two partitions of a unit.
//
// One row per rank of the shard group (N = 8, K = 4 drawn), the unit padded to N chunks:
//
//               primary (params, grads, optimizer)     secondary (hpZ, Mem::hpz)
//   rank 0      [#|.|.|.|.|.|.|.]                      [##|..|..|..]     group {0..3}: slice 0
//   rank 1      [.|#|.|.|.|.|.|.]                      [..|##|..|..]                   slice 1
//   rank 4      [.|.|.|.|#|.|.|.]                      [##|..|..|..]     group {4..7}: slice 0
//
// Primary: make_shard_plan over all N (parallel/shard_plan.h). Secondary: the group
// is hpz_group (parallel/zero.h), K consecutive members; a rank keeps slice
// (its index in the group) of K slices, each N/K chunks (parallel/zero.h,
// hpz_secondary_plan). Forward gathers over N and keeps the slice; backward gathers
// over the K of the group only, so the second gather never leaves the node.
#include "core/check.h"
#include "diagram/diagram.h"
#include "model/gpt2.h"
#include "parallel/shard_plan.h"
#include "parallel/zero.h"
#include "plan/zeropp.h"

namespace ss::diagram {

namespace {

constexpr int kLeft = 80, kBarW = 320, kRowH = 26, kTop = 96, kGap = 60;

}  // namespace

Svg draw_hpz_partitions(const GPT2Config& cfg, int ranks, int k) {
    SS_CHECK(ranks >= 2 && ranks <= 16, "--ranks " << ranks << ": the hpz picture draws 2 to 16 ranks; try --ranks 8");
    SS_CHECK(k != 0, "--hpz 0 is hpZ off, and the hpz picture draws its groups: give K >= 2, e.g. --hpz 4");
    check_hpz_flag(3, k, ranks, 1, NodeShape{ranks, 1, 0});  // train's and plan's checks (plan/zeropp.h)
    const std::vector<Unit> units = make_units(make_param_layout(cfg));
    const int u = 1;  // block 0: the unit drawn (every unit is cut alike)
    Group shard{"dp_shard", {}};
    for (int r = 0; r < ranks; ++r) shard.ranks.push_back(r);

    Svg s(kLeft + 2 * kBarW + kGap + 260, kTop + kRowH * ranks + 100);
    s.text(10, 24, "ZeRO++ hpZ: two partitions of a unit, N = " + std::to_string(ranks) + " ranks, groups of K = " +
                       std::to_string(k) + " (model " + cfg.name + ", unit " + std::to_string(u) + " = block 0)",
           Anchor::start, 15, "#222222", true);
    const int xs = kLeft + kBarW + kGap;
    s.text(kLeft, kTop - 28, "primary partition: params, grads, optimizer", Anchor::start, 12, "#222222", true);
    s.note(kLeft, kTop - 12, "over all N (a rank owns chunk i)");
    s.text(xs, kTop - 28, "secondary partition (hpZ, Mem::hpz)", Anchor::start, 12, "#222222", true);
    s.note(xs, kTop - 12, "over the group of K: slice = N/K chunks");
    s.note(10, 48, "forward: all_gather over N -> the whole unit; each rank keeps its slice.   backward: all_gather "
                   "over the K ranks of its group (one node).   grads: reduce_scatter over N, as ZeRO-3.");

    for (int r = 0; r < ranks; ++r) {
        const ShardPlan plan = make_shard_plan(units, ranks, r);
        const Group g = hpz_group(shard, r, k);
        const int gi = g.index_of(r), group_no = r / k;  // K consecutive members: group r / K
        const int64_t c = plan.units[u].chunk, slice = hpz_secondary_plan(plan, k).units[u].chunk;
        const int y = kTop + kRowH * r;
        s.text(10, y + 15, "rank " + std::to_string(r), Anchor::start, 12, "#222222", true);
        for (int i = 0; i < ranks; ++i) {
            const int x = kLeft + kBarW * i / ranks, w = kLeft + kBarW * (i + 1) / ranks - x;
            s.rect(x, y, w, kRowH - 8, i == plan.index ? "#4e79a7" : "#e6e6e6", "#ffffff");
            // The secondary slices: member j of a group holds chunks [j N/K, (j+1) N/K) of the unit.
            const bool mine = i / (ranks / k) == gi;
            s.rect(xs + kBarW * i / ranks, y, w, kRowH - 8, mine ? svg_colour(1 + group_no) : "#e6e6e6", "#ffffff");
        }
        for (int j = 1; j < k; ++j)  // slice borders
            s.line(xs + kBarW * j / k, y - 1, xs + kBarW * j / k, y + kRowH - 7, "#333333", 2);
        const int64_t b0 = units[u].begin + plan.index * c;
        std::string grp = "{" + std::to_string(g.ranks.front()) + ".." + std::to_string(g.ranks.back()) + "}";
        s.text(xs + kBarW + 8, y + 14,
               "group " + grp + ", slice " + std::to_string(gi) + ": " + std::to_string(slice) + " elements",
               Anchor::start, 11);
        if (r == 0)
            s.note(kLeft, kTop + kRowH * ranks + 14,
                   "chunk = ceil(P_u / N) = " + std::to_string(c) + " elements (rank 0's: flat elements [" +
                       std::to_string(b0) + ", " + std::to_string(b0 + c) + "))");
        if (r % k == 0 && r > 0) s.line(10, y - 4, s.width() - 10, y - 4, "#999999", 1, true);
    }
    const int yb = kTop + kRowH * ranks;
    s.note(kLeft, yb + 30, "secondary: a rank keeps N/K = " + std::to_string(ranks / k) + " chunks of every unit: " +
                            std::to_string(ranks / k) + "x its primary chunk");
    s.note(10, yb + 56, "primary (parallel/shard_plan.h make_shard_plan), group (parallel/zero.h hpz_group), "
                        "secondary slice (parallel/zero.h hpz_secondary_plan)");
    s.note(10, yb + 74, "drawn by: shardscope diagram hpz " + model_flags_of(cfg) + " --ranks " + std::to_string(ranks) +
                            " --hpz " + std::to_string(k));
    return s;
}

}  // namespace ss::diagram
