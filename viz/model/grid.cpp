// grid.cpp — cell and block positions of the rank grid (see grid.h for the picture).
#include "viz/model/grid.h"

#include <algorithm>

namespace ss::viz {

GridLayout layout_grid(const ProcessMesh& mesh) {
    GridLayout g;
    const MeshShape& s = mesh.shape();
    g.shape = s;
    g.shard_along_x = s.sp * s.tp == 1 && s.dp_shard > 1;
    const float sp_gap = (s.sp > 1 && s.tp > 1) ? kSpGap : 0.0f;

    // Size of one block in cells.
    float bw, bh;
    if (g.shard_along_x) {
        bw = float(std::min(s.dp_shard, kWrap));
        bh = float((s.dp_shard + kWrap - 1) / kWrap);
    } else {
        bw = float(s.sp * s.tp) + sp_gap * float(s.sp - 1);
        bh = float(s.dp_shard);
    }
    for (int p = 0; p < s.pp; ++p)
        for (int r = 0; r < s.dp_rep; ++r)
            g.blocks.push_back({p, r, float(p) * (bw + kBlockGap), float(r) * (bh + kBlockGap), bw, bh});
    g.width = float(s.pp) * bw + float(s.pp - 1) * kBlockGap;
    g.height = float(s.dp_rep) * bh + float(s.dp_rep - 1) * kBlockGap;

    g.cells.resize(size_t(mesh.world_size()));
    for (int rank = 0; rank < mesh.world_size(); ++rank) {
        GridCell& c = g.cells[size_t(rank)];
        c.rank = rank;
        c.coord = mesh.coord(rank);
        const GridBlock& b = g.blocks[size_t(c.coord.pp_rank * s.dp_rep + c.coord.dp_rep_rank)];
        if (g.shard_along_x) {
            c.x = b.x + float(c.coord.dp_shard_rank % kWrap);
            c.y = b.y + float(c.coord.dp_shard_rank / kWrap);
        } else {
            c.x = b.x + float(c.coord.sp_rank) * (float(s.tp) + sp_gap) + float(c.coord.tp_rank);
            c.y = b.y + float(c.coord.dp_shard_rank);
        }
    }
    return g;
}

}  // namespace ss::viz
