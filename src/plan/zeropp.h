// zeropp.h — the planner's ZeRO++ (Wang et al. 2023, "ZeRO++: Extremely Efficient
// Collective Communication for Giant Model Training", arXiv:2306.10209): the bytes
// of qwZ's quantized gathers and of qgZ's two quantized all-to-alls, per unit, as
// the engine sends them (parallel/zeropp.h has the pictures; hpZ's secondary
// gathers are plain all-gathers and need nothing here).
//
// A unit of P_u elements over a shard group of N ranks is padded to N chunks of
// c = ceil(P_u / N) (parallel/shard_plan.h). Every quantized message is c' values
// in blocks of B: 4 ceil(c'/B) bytes of fp32 scales + ceil(c' b / 8) bytes of
// b-bit integers, q(c', b) (kernels/cpu/quantize.h). Bytes as nccl-tests and the
// trace count an all_gather or all_to_all: the per-rank count times the group.
//
//   qwZ  all_gather over N                      N q(c, 8)      (sec. 3.1: int8 weights)
//   qgZ  K = N: all_to_all over the shard group N q(c, b)      (sec. 3.3: int4 gradients)
//        else   1. all_to_all over my node (K)  K q(M c, b)    M = N / K nodes
//               2. all_to_all across nodes (M)  M q(c, b)      (K = 1: step 2 alone, over N)
//
// Both change results (within the bound in docs/formulas.md, "qwZ and qgZ"), so the
// search uses them only when asked (--allow-quantized, plan/search.h).
#pragma once

#include <cstdint>
#include <string>

#include "plan/input.h"

namespace ss {

/// Bytes of @p n values packed in blocks of @p block at @p bits each: 4 ceil(n/B) + ceil(n b / 8)
/// (kernels/cpu/quantize.h, quantized_bytes).
int64_t quantized_bytes(int64_t n, int bits, int block);

/// qwZ: bytes of one quantized all_gather of a unit of @p unit elements over @p n ranks: n q(ceil(unit/n), 8).
int64_t qwz_gather_bytes(int64_t unit, int n, int block);

/// qgZ over a shard group of @p n ranks with nodes of @p k: M = n / k.
struct QgzHops {
    int k = 1;                ///< members per node: step 1's group (1: no step 1)
    int m = 1;                ///< nodes: step 2's group (1: no step 2)
    int64_t node_bytes = 0;   ///< step 1, one call: k q(M c, b) (0 when k = 1)
    int64_t cross_bytes = 0;  ///< step 2, one call: M q(c, b) (0 when M = 1)
};

/// qgZ's two all-to-alls for one unit of @p unit elements over @p n ranks, nodes of @p k,
/// @p bits per gradient element in blocks of @p block.
QgzHops qgz_hops(int64_t unit, int n, int k, int bits, int block);

/// The members of one shard group that share a node of @p gpus_per_node ranks: the group's
/// members lie @p tp ranks apart (process_mesh.h: tp varies fastest), so a node holds
/// gpus_per_node / tp of them, at least 1 (a TP group wider than a node).
int shard_members_per_node(int gpus_per_node, int tp);

/// qgZ's node, the one rule for the engine (train/options.h) and the planner: hpZ's K if
/// @p hpz > 0, else the shard group's members in a node of @p gpus_per_node ranks with TP
/// @p tp (shard_members_per_node) if fewer than the shard group's @p n, else n (no node
/// given, @p gpus_per_node = 0, or the group inside one node).
int qgz_node_size(int hpz, int gpus_per_node, int tp, int n);

/// Whether every group of @p k consecutive members of every shard group lies inside one
/// node of @p gpus_per_node ranks, in a world of @p world ranks with TP @p tp: the groups'
/// ranks tile the world in blocks of k x tp from rank 0 (k divides the shard group), so
/// they do when the world is one node or a node holds whole blocks. True when
/// @p gpus_per_node is 0 (no node given).
bool groups_inside_nodes(int k, int tp, int world, int gpus_per_node);

/// Where the ranks are, for the checks below: the world, TP, and the ranks per node
/// (0: not given; every group is then taken to be inside one node).
struct NodeShape {
    int world = 1;          ///< ranks in all
    int tp = 1;             ///< TP degree: a shard group's members lie tp ranks apart
    int gpus_per_node = 0;  ///< ranks per node; 0 when the run does not say
};

/// The checks of --hpz K, one set for `train` and `plan`: ZeRO-3; K >= 2; K divides the
/// ZeRO shard group of @p dp_shard x @p sp ranks and is smaller than it; and where the
/// node is known, each group of K lies inside one node (hpZ exists to keep the backward's
/// gathers off the network). Each failure is its own message saying what to change.
void check_hpz_flag(int zero, int hpz, int dp_shard, int sp, const NodeShape& nodes);

/// The checks of ZeRO++'s flags, one set for `train` (train/options.cpp) and `plan`
/// (plan/plan.cpp): qwZ needs ZeRO-3; qgZ needs ZeRO-2 or 3, a shard group of
/// @p shard_n > 1 and a node of @p qgz_node members dividing it and, where the node is
/// known, inside one node; 4 or 8 bits; a block in [1, 2^20]. Throws ss::Error saying
/// what to change.
void check_zeropp_flags(int zero, bool qwz, bool qgz, int shard_n, int qgz_node, int qgz_bits, int quant_block,
                        const NodeShape& nodes);

/// "hpZ 8, qwZ, qgZ int4" or "" when @p l uses none of ZeRO++.
std::string zeropp_name(const PlanLayout& l, int qgz_bits);

}  // namespace ss
