// mesh_report.h — the rank grid written out for a learner (`shardscope mesh`).
#pragma once

#include <string>

#include "mesh/process_mesh.h"

namespace ss {

/// The text `shardscope mesh` prints for @p mesh: a header with the shape and
/// DP = dp_rep x dp_shard (what GBS counts), a legend of the axes, one line per
/// rank with its coordinates, and for each group kind every group's members.
std::string mesh_report(const ProcessMesh& mesh);

}  // namespace ss
