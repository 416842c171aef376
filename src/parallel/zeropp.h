// zeropp.h — ZeRO++'s quantized collectives (Wang et al. 2023, "ZeRO++: Extremely
// Efficient Collective Communication for Giant Model Training", arXiv:2306.10209):
// qwZ (sec. 3.1) and qgZ (sec. 3.3). Its third idea, hpZ (sec. 3.2), changes where
// ZeRO-3's backward gathers from and lives in zero3.cpp.
//
// Both cut the bytes on the wire by sending block-quantized integers and one fp32
// scale per block (kernels/cpu/quantize.h); both change results, within the
// quantization error (docs/formulas.md, "qwZ and qgZ").
//
// qwZ: ZeRO-3's parameter all-gather (--qwz). Each rank quantizes its chunk to
// int8; the chunks are gathered as bytes and dequantized on arrival:
//
//   rank i:  chunk_i (fp32/bf16) -> Q8(chunk_i) --all_gather--> Q8(chunk_0) .. Q8(chunk_N-1) -> D(...) = unit u
//
// A chunk's quantization depends only on the chunk, so every gather from the
// primary partition (forward, and backward without hpZ) gives the same weights;
// with hpZ the backward reads the secondary partition, which keeps the weights
// the forward dequantized. Forward and backward see one set of weights; the
// step updates the exact fp32 shard.
//
// qgZ: ZeRO-2/3's gradient reduce-scatter (--qgz), as two quantized all-to-alls,
// inside the node first so that the node's sum, not every rank's gradient,
// crosses nodes. N ranks of the shard group, K per node, M = N/K nodes; rank
// (node n, local j) = member n K + j owns chunk n K + j:
//
//   1. node (K ranks, axis qgz_node): send to local rank i the chunks {m K + i : m < M}, Q_b;
//      receive K pieces, dequantize, sum:          partial_j = sum over my node of chunks {m K + j}
//   2. cross (M ranks with the same j, axis qgz_cross): send to node m its chunk m K + j of partial_j, Q_b;
//      receive M pieces, dequantize, sum, / N:     my chunk of the average over all N
//
// With K = N (no nodes given) it is one all-to-all over the shard group. The
// paper's count of what crosses nodes per step: ZeRO-3 3M, ZeRO++ 0.75M (M the
// model's fp16 bytes): forward gather int8 0.5M, backward gather inside the node
// (hpZ) 0, gradients int4 0.25M. qgZ's two hops run blocking in this version
// (the ZeRO++ kernels pipeline them with the backward); --overlap does not change them.
#pragma once

#include "comm/comm.h"
#include "parallel/shard_plan.h"

namespace ss {

/// qwZ: unit @p u's all-gather over @p g, started: my chunk (@p my_chunk, plan chunk
/// elements of @p storage) quantized to int8 in blocks of @p block, every member's bytes
/// gathered into the result's `wire`. finish_qwz_all_gather makes its `whole`.
UnitInFlight start_qwz_all_gather(const ShardGroup& g, int u, const void* my_chunk, DType storage, int block,
                                  const Label& label);
/// Waits for a started qwZ gather and dequantizes every member's chunk into f.whole
/// (the padded unit, in the storage dtype; bf16 rounds the dequantized values).
void finish_qwz_all_gather(const ShardGroup& g, UnitInFlight& f, int block);
/// qwZ's all-gather, blocking: the padded unit, dequantized (Mem::comm).
Tensor qwz_all_gather(const ShardGroup& g, int u, const void* my_chunk, DType storage, int block, const Label& label);

/// qgZ over a shard group: its node and cross groups, and the reduce-scatter they replace.
class Qgz {
public:
    /// For this rank of @p shard, nodes of @p node_size consecutive members (node_size
    /// divides the group; = its size: one all-to-all), @p bits (4 or 8) per gradient
    /// element in blocks of @p block.
    Qgz(const ShardGroup& shard, int node_size, int bits, int block);
    /// ZeRO-2/3's backward, quantized: unit @p u's fp32 gradients (padded) in, this rank's
    /// chunk of their average over the shard group added into @p my_acc. Blocking.
    void reduce_scatter_add(int u, const float* unit_grads, float* my_acc, const Label& label) const;
    /// Nodes of this many members (the group's size: no nodes).
    int node_size() const { return k_; }
    /// Bits per element on the wire.
    int bits() const { return bits_; }

private:
    const ShardGroup& shard_;
    int k_, bits_, block_;
    Group node_, cross_;  // step 1 (inside my node) and step 2 (my local index on every node)
};

/// The groups qgZ runs on, for global rank @p me of @p shard with nodes of @p k consecutive
/// members: {node (axis qgz_node), cross (axis qgz_cross)}. train.cpp prepares them for MPI.
std::pair<Group, Group> qgz_groups(const Group& shard, int me, int k);

}  // namespace ss
