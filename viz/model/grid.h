// grid.h — where each rank's block goes in the Grid panel, in cell units.
//
// The rank grid (src/mesh/process_mesh.h) has five axes, outermost first:
// pp, dp_rep, dp_shard, sp, tp. The panel draws it as nested blocks:
//
//     pp stage 0                        pp stage 1
//     +-------------------------+      +-------------------------+
//     | replica 0               |      | replica 0               |
//     |  sp 0       sp 1        |      |                         |
//     |  [0][1]    [2][3]  shard 0     |   ...                   |
//     |  [4][5]    [6][7]  shard 1     |                         |
//     +-------------------------+      +-------------------------+
//     | replica 1 ...           |
//
//   - a block per (pp stage, replica): stages side by side, replicas stacked;
//   - in a block, a row per dp_shard rank, a column per (sp, tp) rank, tp
//     fastest (TP peers are neighbours, as on one node); sp groups are set
//     apart by a small gap.
//   - when a block has a single column (sp = tp = 1), its dp_shard ranks are
//     laid out along x instead, wrapping every kWrap, so 8-way ZeRO is a row.
//
// Cells are 1 x 1 with their top-left corner at (x, y); the panel scales.
#pragma once

#include <vector>

#include "mesh/process_mesh.h"

namespace ss::viz {

/// One rank's cell.
struct GridCell {
    int rank = 0;        ///< global rank
    MeshCoord coord;     ///< its coordinates
    float x = 0, y = 0;  ///< top-left corner, cell units
};

/// One (pp stage, replica) block.
struct GridBlock {
    int pp_rank = 0, dp_rep_rank = 0;   ///< which block
    float x = 0, y = 0, w = 0, h = 0;  ///< its box, cell units (cells only, no margin)
};

/// The whole drawing.
struct GridLayout {
    MeshShape shape;                ///< the grid's degrees
    std::vector<GridCell> cells;    ///< indexed by rank
    std::vector<GridBlock> blocks;  ///< pp-major
    float width = 0, height = 0;    ///< extent of all blocks, cell units
    bool shard_along_x = false;     ///< true when dp_shard runs along x (sp = tp = 1)
};

/// Gap between blocks, cell units.
constexpr float kBlockGap = 0.6f;
/// Gap between sp groups inside a block, cell units.
constexpr float kSpGap = 0.25f;
/// dp_shard ranks per row when they run along x.
constexpr int kWrap = 8;

/// Lays out the grid of @p mesh.
GridLayout layout_grid(const ProcessMesh& mesh);

}  // namespace ss::viz
