// panel_grid.cpp — the Grid panel: the rank grid as blocks, and one rank's groups.
//
// Cells are placed by viz/model/grid.cpp (blocks per pipeline stage and replica,
// rows per ZeRO shard, tp fastest) and coloured by their index along the axis
// chosen in "colour by": with colour by tp, ranks of the same colour hold the
// same slice of every weight matrix; with dp_shard, the same ZeRO shard.
// Hovering a rank lists its coordinates and every group it belongs to, with the
// mpu function (src/mesh/process_mesh.h, class Mpu) that returns it, and
// outlines the members of its group along the colour-by axis.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "viz/app/panels.h"
#include "viz/app/widgets.h"

namespace ss::viz {

namespace {

struct AxisInfo {
    const char* name;
    GroupKind kind;
    const char* mpu;  // the mpu call returning this group
};
const AxisInfo kAxes[] = {
    {"tp", GroupKind::tp, "get_tensor_model_parallel_group()"},
    {"sp", GroupKind::sp, "get_sequence_parallel_group()"},
    {"dp_shard", GroupKind::dp_shard, "dp_shard_group()"},
    {"dp_rep", GroupKind::dp_rep, "dp_rep_group()"},
    {"pp", GroupKind::pp, "get_pipeline_model_parallel_group()"},
};

int axis_index(const MeshCoord& c, int axis) {
    switch (axis) {
        case 0: return c.tp_rank;
        case 1: return c.sp_rank;
        case 2: return c.dp_shard_rank;
        case 3: return c.dp_rep_rank;
        default: return c.pp_rank;
    }
}

int axis_degree(const MeshShape& s, int axis) {
    switch (axis) {
        case 0: return s.tp;
        case 1: return s.sp;
        case 2: return s.dp_shard;
        case 3: return s.dp_rep;
        default: return s.pp;
    }
}

std::string ranks_str(const std::vector<int>& r) {
    std::string s = "[";
    for (size_t i = 0; i < r.size(); ++i) {
        if (i == 12 && r.size() > 14) {
            s += ", ... " + std::to_string(r.back());
            break;
        }
        s += (i ? ", " : "") + std::to_string(r[i]);
    }
    return s + "]";
}

// Bytes the trace moved on each axis (all ranks, all steps), to show next to the groups.
uint64_t axis_bytes(const TraceSummary& sum, const std::string& axis) {
    uint64_t b = 0;
    for (const CollectiveTotals& row : sum.rows)
        if (row.axis == axis) b += row.bytes;
    return b;
}

void groups_table(const ViewModel& vm, int rank) {
    const Mpu mpu = vm.mesh.mpu(rank);
    const MeshCoord& c = mpu.coord();
    ImGui::Text("rank %d = (pp %d, dp_rep %d, dp_shard %d, sp %d, tp %d), dp_rank %d", rank, c.pp_rank, c.dp_rep_rank,
                c.dp_shard_rank, c.sp_rank, c.tp_rank, c.dp_rank);
    help_marker("rank = (((pp_rank x dp_rep + dp_rep_rank) x dp_shard + dp_shard_rank) x sp + sp_rank) x tp + "
                "tp_rank  (src/mesh/process_mesh.h). tp varies fastest, so TP peers are neighbours, as on one "
                "node's NVLink; pp is outermost. dp_rank = dp_rep_rank x dp_shard + dp_shard_rank.");
    const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_BordersInnerV;
    if (ImGui::BeginTable("groups", 4, flags)) {
        ImGui::TableSetupColumn("group");
        ImGui::TableSetupColumn("members");
        ImGui::TableSetupColumn("axis total, all ranks");
        ImGui::TableSetupColumn("mpu call");
        ImGui::TableHeadersRow();
        struct Row {
            const char* axis;
            Group g;
            const char* call;
        };
        std::vector<Row> rows = {
            {"tp", mpu.get_tensor_model_parallel_group(), "get_tensor_model_parallel_group()"},
            {"sp", mpu.get_sequence_parallel_group(), "get_sequence_parallel_group()"},
            {"dp_shard", mpu.dp_shard_group(), "dp_shard_group()"},
            {"dp_rep", mpu.dp_rep_group(), "dp_rep_group()"},
            {"dp", mpu.get_data_parallel_group(), "get_data_parallel_group()"},
            {"pp", mpu.get_pipeline_model_parallel_group(), "get_pipeline_model_parallel_group()"},
        };
        if (vm.mesh.shape().sp > 1) {  // with SP, ZeRO shards and gradients average over these (their trace axes)
            rows.insert(rows.begin() + 3, {"dp_shard+sp", mpu.dp_shard_sp_group(), "dp_shard_sp_group()"});
            rows.insert(rows.begin() + 6,
                        {"dp+sp", mpu.get_sequence_data_parallel_group(), "get_sequence_data_parallel_group()"});
        }
        for (const Row& r : rows) {
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(r.axis);
            ImGui::TableNextColumn();
            if (r.g.size() == 1)
                ImGui::TextDisabled("[%d] (alone)", r.g.ranks[0]);
            else
                ImGui::TextUnformatted(ranks_str(r.g.ranks).c_str());
            ImGui::TableNextColumn();
            const uint64_t b = axis_bytes(vm.summary, r.axis);
            if (b)
                ImGui::TextUnformatted(fmt_bytes(double(b)).c_str());
            else
                ImGui::TextDisabled("-");
            ImGui::TableNextColumn();
            ImGui::TextDisabled("%s", r.call);
        }
        ImGui::EndTable();
    }
    help_marker("Every group this rank belongs to, sliced from the one grid (ProcessMesh::group). 'bytes in "
                "trace' = bytes of all collectives on that axis, summed over ranks and steps (bytes as "
                "nccl-tests counts them). The calls are the mpu interface DeepSpeed accepts and Megatron's "
                "parallel_state uses (Mpu in src/mesh/process_mesh.h).");
}

}  // namespace

void draw_grid(ViewerState& s, ImVec2 size) {
    (void)size;
    const ViewModel& vm = *s.vm;
    const GridLayout& g = vm.grid;
    GridUi& ui = s.grid;
    heading("Grid");
    ImGui::SameLine();
    const MeshShape& sh = g.shape;
    ImGui::TextDisabled("%d ranks = pp %d x dp_rep %d x dp_shard %d x sp %d x tp %d", vm.mesh.world_size(), sh.pp,
                        sh.dp_rep, sh.dp_shard, sh.sp, sh.tp);
    help_marker("world = pp x dp_rep x dp_shard x sp x tp (src/mesh/process_mesh.h). DP = dp_rep x dp_shard is "
                "the data-parallel degree: GBS = MBS x GA x DP. ZeRO shards over dp_shard (x sp) and "
                "replicates over dp_rep. Blocks: one per (pipeline stage, replica); rows: ZeRO shards; "
                "columns: sp x tp (when sp = tp = 1 the shards run along a row instead).");
    if (!vm.run.has_mesh) {
        ImGui::SameLine();
        ImGui::TextColored(ImVec4(1, 0.7f, 0.4f, 1), "(no mesh in otherData: drawn as dp_shard = %d)", vm.run.world);
    }
    ImGui::TextUnformatted("colour by:");
    for (int a = 0; a < 5; ++a) {
        ImGui::SameLine();
        char l[48];
        std::snprintf(l, sizeof l, "%s (%d)", kAxes[a].name, axis_degree(sh, a));
        ImGui::RadioButton(l, &ui.color_axis, a);
    }

    if (g.shard_along_x)
        ImGui::TextDisabled("a row of ZeRO shards (dp_shard 0 .. %d)%s", sh.dp_shard - 1,
                            sh.dp_rep > 1 || sh.pp > 1 ? "; blocks: pipeline stages across, replicas down" : "");
    else
        ImGui::TextDisabled("in a block: columns = %s, rows = dp_shard; blocks: pipeline stages across, replicas down",
                            sh.sp > 1 ? "sp x tp (tp fastest)" : "tp");
    // ---- the cells ---------------------------------------------------------------------
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float line = ImGui::GetTextLineHeightWithSpacing();
    // A small tile (the Overview) keeps the cells readable and lists the groups in one line.
    const bool compact = avail.y < 440;
    const float table_h = compact ? line * 2 : line * (sh.sp > 1 ? 10.5f : 8.5f) + 6;  // 6 groups, or 8 with SP
    const float note_h = line;
    const float area_h = std::max(avail.y - table_h - note_h, 60.0f);
    const float label_h = ImGui::GetTextLineHeight() + 2;
    const float cell = std::clamp(std::min((avail.x - 20 - (sh.dp_rep > 1 ? 90.0f : 0.0f)) / std::max(g.width, 1.0f),
                                           (area_h - label_h - 12) / std::max(g.height, 1.0f)),
                                  8.0f, 88.0f);
    const ImVec2 o = ImGui::GetCursorScreenPos();
    ImGui::InvisibleButton("grid_cells", ImVec2(avail.x, area_h));
    const bool hovered = ImGui::IsItemHovered();
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const float left = sh.dp_rep > 1 ? ImGui::CalcTextSize("replica 00").x + 14 : 10.0f;  // room for "replica r"
    const float ox = o.x + std::max(left, (avail.x - g.width * cell) / 2), oy = o.y + label_h + 4;
    // which rank is under the mouse
    int hover = -1;
    for (const GridCell& c : g.cells)
        if (hovered && mouse.x >= ox + c.x * cell && mouse.x < ox + (c.x + 1) * cell && mouse.y >= oy + c.y * cell &&
            mouse.y < oy + (c.y + 1) * cell)
            hover = c.rank;
    if (hover >= 0) {
        ui.focus_rank = hover;
    }
    const Group focus_group = vm.mesh.group(kAxes[ui.color_axis].kind, ui.focus_rank);
    // blocks
    for (const GridBlock& b : g.blocks) {
        const ImVec2 a(ox + b.x * cell - 4, oy + b.y * cell - 4), z(ox + (b.x + b.w) * cell + 4, oy + (b.y + b.h) * cell + 4);
        dl->AddRect(a, z, IM_COL32(200, 200, 210, 120), 3);
        // stages named above the top row of blocks, replicas left of the first column
        char l[32];
        if (sh.pp > 1 && b.dp_rep_rank == 0) {
            std::snprintf(l, sizeof l, "pp stage %d", b.pp_rank);
            dl->AddText(ImVec2(a.x + 2, a.y - label_h), IM_COL32(190, 190, 200, 255), l);
        }
        if (sh.dp_rep > 1 && b.pp_rank == 0) {
            std::snprintf(l, sizeof l, "replica %d", b.dp_rep_rank);
            dl->AddText(ImVec2(a.x - 6 - ImGui::CalcTextSize(l).x, a.y + 2), IM_COL32(190, 190, 200, 255), l);
        }
    }
    // cells
    const int deg = axis_degree(sh, ui.color_axis);
    for (const GridCell& c : g.cells) {
        const ImVec2 a(ox + c.x * cell + 1, oy + c.y * cell + 1), z(ox + (c.x + 1) * cell - 1, oy + (c.y + 1) * cell - 1);
        const int idx = axis_index(c.coord, ui.color_axis);
        const bool member = focus_group.index_of(c.rank) >= 0;
        dl->AddRectFilled(a, z, col(axis_index_color(idx, deg), member ? 255 : 150), 2);
        if (member) dl->AddRect(a, z, IM_COL32(255, 255, 255, 255), 2, 0, c.rank == ui.focus_rank ? 3.0f : 1.5f);
        if (cell >= 18) {
            char l[16];
            std::snprintf(l, sizeof l, "%d", c.rank);
            const ImVec2 ts = ImGui::CalcTextSize(l);
            dl->AddText(ImVec2((a.x + z.x - ts.x) / 2, (a.y + z.y - ts.y) / 2), IM_COL32(20, 20, 25, 255), l);
        }
    }
    if (hover >= 0) {
        ImGui::BeginTooltip();
        const MeshCoord& c = g.cells[size_t(hover)].coord;
        ImGui::Text("rank %d: pp %d, dp_rep %d, dp_shard %d, sp %d, tp %d", hover, c.pp_rank, c.dp_rep_rank,
                    c.dp_shard_rank, c.sp_rank, c.tp_rank);
        ImGui::Text("%s group %s", kAxes[ui.color_axis].name, ranks_str(focus_group.ranks).c_str());
        ImGui::TextDisabled("its groups are listed below the grid");
        ImGui::EndTooltip();
    }
    // ---- the focused rank's groups ---------------------------------------------------------
    if (compact) {
        const Mpu mpu = vm.mesh.mpu(ui.focus_rank);
        const MeshCoord& c = mpu.coord();
        ImGui::Text("rank %d = (pp %d, dp_rep %d, dp_shard %d, sp %d, tp %d)", ui.focus_rank, c.pp_rank, c.dp_rep_rank,
                    c.dp_shard_rank, c.sp_rank, c.tp_rank);
        ImGui::TextDisabled("tp %s  dp %s  (all its groups and mpu calls: the Grid tab)",
                            ranks_str(mpu.get_tensor_model_parallel_group().ranks).c_str(),
                            ranks_str(mpu.get_data_parallel_group().ranks).c_str());
    } else {
        groups_table(vm, ui.focus_rank);
    }
    source_note("drawn by viz/app/panel_grid.cpp from viz/model/grid.cpp and src/mesh/process_mesh.h (Mpu)");
}

}  // namespace ss::viz
