// gbs.h — the GBS calculator's arithmetic: which axes take ranks, and how big the batch gets.
//
// For any cluster (it does not need a trace, or the GPUs):
//
//     DP  = world / (TP x PP x SP)        the ranks left for data parallelism
//     DP  = dp_shard x dp_rep             ZeRO shards over dp_shard, replicates over dp_rep
//     GBS = MBS x GA x DP                 sequences per optimizer step
//
// (DESIGN.md, "The rank grid"; src/mesh/process_mesh.h; src/train/train.h.)
// TP, PP and SP split the model or the sequence, so they take ranks without
// adding batches: at 512 GPUs, TP 8 leaves DP 64, and GBS = 16 x 1 x 64 = 1024
// instead of 8192. Replica groups (dp_rep) change memory and traffic, not GBS.
//
// The checks are the engine's: ProcessMesh's (world = pp x dp x sp x tp), and
// TP dividing the heads, PP dividing the layers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mesh/process_mesh.h"

namespace ss::viz {

/// The calculator's inputs.
struct GbsInput {
    int gpus = 512;          ///< world size
    int gpus_per_node = 8;   ///< GPUs that share one node's fast links (NVLink)
    int n_head = 12;         ///< H of the model (TP must divide it)
    int n_layer = 12;        ///< L of the model (PP must divide it)
    int mbs = 16;            ///< micro-batch size, sequences per rank per micro-batch
    int ga = 1;              ///< gradient-accumulation steps
    int tp = 1;              ///< tensor-parallel degree
    int pp = 1;              ///< pipeline stages
    int sp = 1;              ///< sequence-parallel degree (Ulysses / ring; Megatron SP takes no ranks)
    int dp_shard = 0;        ///< ZeRO shard group size; 0: the rest of DP
    int dp_rep = 1;          ///< replicas; 0: the rest of DP
    int64_t target_gbs = 1024;  ///< warn when GBS exceeds this (0: no target)
};

/// What the calculator shows.
struct GbsResult {
    bool ok = false;                  ///< false: @c error says what to change
    std::string error;                ///< the first problem, with what would work
    MeshShape shape;                  ///< the completed grid (dp_shard and dp_rep filled)
    int dp = 0;                       ///< data-parallel degree
    int64_t gbs = 0;                  ///< MBS x GA x DP
    int nodes = 0;                    ///< ceil(gpus / gpus_per_node)
    std::vector<std::string> lines;   ///< the arithmetic, written out with the numbers
    std::vector<std::string> warnings;  ///< target exceeded, TP across nodes, ...
    int64_t max_mbs_for_target = 0;   ///< largest MBS with GBS <= target at this GA and DP (0: none)
};

/// Does the arithmetic for @p in. Never throws.
GbsResult compute_gbs(const GbsInput& in);

}  // namespace ss::viz
