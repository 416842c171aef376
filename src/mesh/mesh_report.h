// mesh_report.h — the rank grid written out for a learner (`shardscope mesh`).
#pragma once

#include <string>

#include "mesh/process_mesh.h"

namespace ss {

/// The text `shardscope mesh` prints for @p mesh: a header with the shape and
/// DP = dp_rep x dp_shard (what GBS counts), a legend of the axes, one line per
/// rank with its coordinates, for each group kind every group's members, and
/// every mpu call's answer on rank @p mpu_rank (throws ss::Error if it is not in the mesh).
std::string mesh_report(const ProcessMesh& mesh, int mpu_rank = 0);

}  // namespace ss
