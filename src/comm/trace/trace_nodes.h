// trace_nodes.h — what crosses nodes: a rank's moved bytes, inside its node or across nodes.
//
// With N ranks per node, ranks r and s share a node when r / N == s / N (the
// rule of the emulated links, comm/links.h). A collective's group either lies
// inside one node or spans several:
//
//     node 0: ranks 0 1 2 3        node 1: ranks 4 5 6 7
//     all_gather over {0..3}  (hpz, qgz_node)            inside:  all its moved bytes
//     all_gather over {0..7}  (dp_shard of ZeRO-3 on 8)  across:  all its moved bytes
//     all_to_all over {0, 4}  (qgz_cross), all_reduce over {0, 4} (dp_rep of 4 x 2)   across
//
// The counting rule, per call and per rank:
//
//     moved  = bytes x busbw_factor(op, n)     the `moved` column: what the rank sends on a ring
//     across = moved   if the group's ranks span more than one node (for send/recv: src and dst)
//              0       otherwise;              inside = moved - across
//
// It is the rule the emulated links time a call by (EmulatedLinks::slowest: a
// group that spans nodes runs at the inter-node link's speed), and it is how
// the ZeRO++ paper counts ZeRO-3's cross-node volume, 3M per step: all three of
// its collectives span nodes (Wang et al. 2023, arXiv:2306.10209, sec. 3). It
// says which tier a rank's bytes travel on, not the route of each byte: one
// ring over 2 nodes of 4 sends across on only 2 of its 8 hops, though every hop
// waits for those two. A group with one rank per node (qgz_cross, dp_rep) sends
// every moved byte to another node under either reading.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "comm/trace/trace.h"

namespace ss {

/// True if @p group's ranks lie on more than one node of @p gpus_per_node consecutive
/// ranks (r / gpus_per_node differs); false for gpus_per_node <= 0 or an empty group.
bool group_spans_nodes(const std::vector<int>& group, int gpus_per_node);

/// The moved bytes of @p ev (bytes x busbw_factor) that cross nodes: all of them
/// when its group spans nodes, else 0.
double moved_across_nodes(const TraceEvent& ev, int gpus_per_node);

/// One rank's moved bytes in one step, inside its node and across nodes.
struct NodeTrafficRow {
    int rank = 0;        ///< the rank (pid)
    int step = -1;       ///< the label's training step, kOverlapSetup (-1) or kOverlapTotal (-2), as the overlap table
    uint64_t calls = 0;  ///< collective events
    double inside = 0;   ///< moved bytes of calls whose group lies in the rank's node
    double across = 0;   ///< moved bytes of calls whose group spans nodes
};

/// Per rank and step (setup first, the rank's total last, as overlap_by_step),
/// the moved bytes inside and across nodes of @p gpus_per_node ranks. Empty for
/// gpus_per_node <= 0. Only collectives are used.
std::vector<NodeTrafficRow> node_traffic_by_step(const std::vector<TraceEvent>& events, int gpus_per_node);

/// The table `shardscope trace summary` prints under "crosses nodes". @p exact
/// prints bytes as integers instead of KiB/MiB.
std::string format_node_traffic_table(const std::vector<NodeTrafficRow>& rows, int gpus_per_node, bool exact);

/// otherData.gpus_per_node (written by `train` whenever it knows its ranks per node:
/// --gpus-per-node, alone or with --link-intra/--link-inter, or an --emulate preset's),
/// or 0 where the key is absent or not a positive integer (no node size, an older trace).
int trace_gpus_per_node(const nlohmann::json& other_data);

}  // namespace ss
