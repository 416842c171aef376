// process_mesh.h — the rank grid: one grid of ranks, and every group sliced from it.
//
// The world's ranks are laid out on one 5-D grid. Axes, outermost first:
//
//     pp, dp_rep, dp_shard, sp, tp
//
//     rank = (((pp_rank * dp_rep + dp_rep_rank) * dp_shard + dp_shard_rank) * sp + sp_rank) * tp + tp_rank
//
// tp varies fastest, so the ranks of one TP group are consecutive and land on
// one node, where NVLink carries the all-reduces TP does in every layer. pp is
// outermost: stages only pass activations to their neighbour, the cheapest
// traffic, so it may cross nodes.
//
// A group is a slice of the grid: hold some coordinates fixed and let the rest
// vary (picotron's `grid.view(dp, pp, cp, tp)`, Megatron's parallel state).
// World 8 as dp_shard=4 x tp=2:
//
//                  tp_rank 0   tp_rank 1
//   dp_shard_rank 0     0           1        a row    = a tp group       {0,1} {2,3} ...
//   dp_shard_rank 1     2           3        a column = a dp_shard group {0,2,4,6} {1,3,5,7}
//   dp_shard_rank 2     4           5
//   dp_shard_rank 3     6           7
//
// The Mpu class at the end is the same grid seen from one rank, with the
// method names DeepSpeed accepts as `mpu` and Megatron's parallel_state uses.
// "Model parallel" there means tp x pp: the ranks one model replica is split
// over (Megatron builds it from its 'tp-pp' ranks). sp ranks are not in it:
// they hold the same parameters and split the data (the sequence), like
// Megatron's context parallelism, which its model-parallel group leaves out.
// See docs/mesh.md.
#pragma once

#include <string>
#include <vector>

#include "mesh/group.h"

namespace ss {

class Mpu;

/// The degree of every axis of the rank grid: how many ways each one splits the work.
///
/// world = pp * dp_rep * dp_shard * sp * tp. In fill_dp()'s input a dp degree of
/// 0 means "not given: take the rest of the world".
struct MeshShape {
    int pp = 1;        ///< pipeline stages: each holds a contiguous slice of the layers
    int dp_rep = 1;    ///< data-parallel replicas: each holds a full (ZeRO-sharded) copy of the model
    int dp_shard = 1;  ///< data-parallel ranks ZeRO shards parameters, gradients and optimizer state over
    int sp = 1;        ///< sequence parallel (Ulysses / ring attention): each rank holds a piece of every sequence
    int tp = 1;        ///< tensor parallel (Megatron): each rank holds a slice of every weight matrix

    /// Data-parallel degree DP = dp_rep * dp_shard: the number of different batches in one step.
    int dp() const { return dp_rep * dp_shard; }
    /// Product of all five degrees: the number of ranks this shape needs.
    long long product() const { return 1LL * pp * dp_rep * dp_shard * sp * tp; }
};

/// Where one rank sits on the grid: its index along each axis.
struct MeshCoord {
    int pp_rank = 0;        ///< pipeline stage, 0 .. pp-1
    int dp_rep_rank = 0;    ///< replica index, 0 .. dp_rep-1
    int dp_shard_rank = 0;  ///< ZeRO shard index, 0 .. dp_shard-1
    int sp_rank = 0;        ///< sequence piece, 0 .. sp-1
    int tp_rank = 0;        ///< tensor slice, 0 .. tp-1
    int dp_rank = 0;        ///< data-parallel rank = dp_rep_rank * dp_shard + dp_shard_rank
};

/// The kinds of group the grid is sliced into. Each kind names the axes that
/// vary within one group (the others are held fixed); listed major first.
enum class GroupKind {
    tp,           ///< tensor parallel: varies tp
    sp,           ///< sequence parallel: varies sp
    dp_shard,     ///< ZeRO sharding group (when sp = 1): varies dp_shard
    dp_rep,       ///< replica group, same shard in every replica: varies dp_rep
    dp,           ///< data parallel, dp_rep x dp_shard: varies dp_rep (major) and dp_shard
    pp,           ///< pipeline: varies pp; a rank's stage neighbours are in it
    dp_shard_sp,  ///< "dp_shard+sp": what ZeRO shards over when sp > 1, dp_shard (major) x sp
    dp_sp,        ///< "dp+sp": the gradient-averaging group, dp_rep x dp_shard x sp (DeepSpeed's sequence-data-parallel group)
    mp,           ///< "pp+tp": model parallel, the ranks one model replica is split over, pp (major) x tp (Megatron's tp-pp group)
    world,        ///< every rank, in rank order
};

/// All group kinds, in the order `shardscope mesh` prints them.
const std::vector<GroupKind>& all_group_kinds();

/// The name of @p kind as Group::axis spells it: "tp", ..., "dp_shard+sp", "dp+sp", "world".
const char* group_kind_name(GroupKind kind);

/// Fills the data-parallel degrees that were not given (0) so the grid uses all
/// @p world ranks, and returns the completed shape.
///
/// If neither dp degree is given, dp_rep = 1 and dp_shard takes the rest of the
/// world (plain ZeRO over all of DP). If only one is given, the other takes the
/// rest. If both are given nothing changes (ProcessMesh checks the product).
/// Throws ss::Error if a degree is invalid or the rest is not a whole number.
MeshShape fill_dp(int world, MeshShape s);

/// Throws ss::Error unless @p degree divides @p n, naming the divisors that would work:
/// `check_divides("TP", 3, "n_head", 4)` -> "TP=3 does not divide n_head=4; choose TP in {1, 2, 4}".
void check_divides(const char* axis, int degree, const char* what, int n);

/// The divisors of @p n (n >= 1) in increasing order: the degrees that can split n things evenly.
std::vector<int> divisors(int n);

/// The rank grid for @p world ranks: coordinates of every rank and every
/// communication group, all derived from the one grid.
///
/// A plain value (the shape and the world size); groups are computed when asked for.
class ProcessMesh {
public:
    /// Builds the grid; throws ss::Error if a degree is < 1 or
    /// world != pp * dp_rep * dp_shard * sp * tp (the message says what to set).
    ProcessMesh(int world, MeshShape shape);

    /// Number of ranks in the grid.
    int world_size() const { return world_; }
    /// The degree of every axis.
    const MeshShape& shape() const { return shape_; }

    /// Coordinates of global rank @p rank (0 <= rank < world).
    MeshCoord coord(int rank) const;
    /// The global rank at coordinates @p c (dp_rank is ignored); inverse of coord().
    int rank_at(const MeshCoord& c) const;

    /// The group of kind @p kind that global rank @p rank belongs to, in group order.
    Group group(GroupKind kind, int rank) const;
    /// All groups of kind @p kind: they partition the world; ordered by their first rank.
    /// Backends that must create a communicator for every group iterate this.
    std::vector<Group> groups(GroupKind kind) const;

    /// The mpu view of the grid from global rank @p rank (see Mpu).
    Mpu mpu(int rank) const;

private:
    int world_;
    MeshShape shape_;
};

/// The mesh seen from one rank, with the mpu interface DeepSpeed accepts
/// (`deepspeed.initialize(mpu=...)`) and Megatron calls parallel state.
///
/// Bound to one global rank so that calls take no argument, as in those
/// libraries: `mesh.mpu(rank).get_data_parallel_rank()`. Holds a copy of the
/// mesh (a few ints), so it stays valid on its own. Groups come back by value,
/// in group order: a rank's index in Group::ranks is its rank in the group.
class Mpu {
public:
    /// The view of @p mesh from global rank @p rank; throws ss::Error if rank is out of range.
    Mpu(const ProcessMesh& mesh, int rank);

    /// The global rank this view is bound to.
    int rank() const { return rank_; }
    /// Number of ranks in the whole grid.
    int world_size() const { return mesh_.world_size(); }
    /// This rank's coordinates.
    const MeshCoord& coord() const { return coord_; }
    /// The grid this view looks at.
    const ProcessMesh& mesh() const { return mesh_; }

    // Model parallel = tp x pp, as Megatron's parallel_state means it (its
    // model-parallel group is built from the 'tp-pp' ranks; context parallel
    // and data parallel are not in it). The sp axis is not either: sp ranks
    // hold the same parameters and split the sequence, so they share the
    // model's weights the way data-parallel ranks do (gradients average over
    // dp x sp). DeepSpeed sums a gradient norm over its data-parallel process
    // group (with sp, the sequence-data-parallel dp x sp group) and then over
    // this one: with sp in both, the sp ranks' shares would count twice. So the
    // grid is world = model parallel x sequence data parallel, each rank the
    // one member the two groups share (tests/test_mesh.cpp checks it).
    // Megatron-LM names only the group (and its source rank) now; the _rank
    // and _world_size below are the names DeepSpeed's mpu convention reads,
    // which DeepSpeed's pipeline grid also answers for tp x pp (its tp is
    // get_slice_parallel_*) and older Megatron, without PP, answered with tp
    // alone (docs/mesh.md: why DeepSpeed asks for the tensor names first).

    /// Rank in the model-parallel group (tp x pp): pp_rank * tp + tp_rank.
    int get_model_parallel_rank() const { return coord_.pp_rank * mesh_.shape().tp + coord_.tp_rank; }
    /// Model-parallel degree tp * pp: how many ranks one model replica is split over.
    int get_model_parallel_world_size() const { return mesh_.shape().tp * mesh_.shape().pp; }
    /// The model-parallel group ("pp+tp"): the ranks that together hold one whole
    /// copy of the model and work on the same samples; pp major, tp fastest.
    Group get_model_parallel_group() const { return mesh_.group(GroupKind::mp, rank_); }

    /// Rank in the data-parallel group (dp_rep x dp_shard): dp_rep_rank * dp_shard + dp_shard_rank.
    int get_data_parallel_rank() const { return coord_.dp_rank; }
    /// Data-parallel degree DP = dp_rep * dp_shard (GBS = MBS x GA x DP).
    int get_data_parallel_world_size() const { return mesh_.shape().dp(); }
    /// The data-parallel group: the ranks that see different batches and hold the same model slice.
    Group get_data_parallel_group() const { return mesh_.group(GroupKind::dp, rank_); }

    /// Rank in the tensor-parallel group (tp_rank).
    int get_tensor_model_parallel_rank() const { return coord_.tp_rank; }
    /// Tensor-parallel degree tp.
    int get_tensor_model_parallel_world_size() const { return mesh_.shape().tp; }
    /// The tensor-parallel group: consecutive ranks that each hold a slice of every weight.
    Group get_tensor_model_parallel_group() const { return mesh_.group(GroupKind::tp, rank_); }

    /// Pipeline stage of this rank (pp_rank).
    int get_pipeline_model_parallel_rank() const { return coord_.pp_rank; }
    /// Number of pipeline stages pp.
    int get_pipeline_model_parallel_world_size() const { return mesh_.shape().pp; }
    /// The pipeline group: the same position in every stage, stage 0 first.
    Group get_pipeline_model_parallel_group() const { return mesh_.group(GroupKind::pp, rank_); }

    /// Global rank of stage 0 in this rank's pipeline group.
    int get_pipeline_model_parallel_first_rank() const;
    /// Global rank of the last stage in this rank's pipeline group.
    int get_pipeline_model_parallel_last_rank() const;
    /// Global rank of the next stage's peer, wrapping from the last stage to the
    /// first as Megatron's does (pp_next_rank() answers -1 there instead).
    int get_pipeline_model_parallel_next_rank() const;
    /// Global rank of the previous stage's peer, wrapping from the first stage to
    /// the last as Megatron's does (pp_prev_rank() answers -1 there instead).
    int get_pipeline_model_parallel_prev_rank() const;

    /// Rank in the sequence-parallel group (sp_rank): which piece of each sequence this rank holds.
    int get_sequence_parallel_rank() const { return coord_.sp_rank; }
    /// Sequence-parallel degree sp.
    int get_sequence_parallel_world_size() const { return mesh_.shape().sp; }
    /// The sequence-parallel group: the ranks that split one sequence (Ulysses all-to-all, ring attention).
    Group get_sequence_parallel_group() const { return mesh_.group(GroupKind::sp, rank_); }

    // Context parallel is Megatron's name (--context-parallel-size) for what the
    // sp axis does: split every sequence over ranks that hold the same weights
    // (ring attention; Ulysses is DeepSpeed's get_sequence_parallel_*). The
    // names below are the sp axis under Megatron's name. (Megatron's own
    // "sequence parallel" is a switch on the tp axis, with no ranks of its own.)
    // Expert parallelism (Megatron's get_expert_model_parallel_*) would take its
    // ranks from dp; the grid has no expert axis yet, so there are no expert calls.

    /// Rank in the context-parallel group: the sp axis's sp_rank under Megatron's name.
    int get_context_parallel_rank() const { return get_sequence_parallel_rank(); }
    /// Context-parallel degree: sp, under Megatron's name.
    int get_context_parallel_world_size() const { return get_sequence_parallel_world_size(); }
    /// The context-parallel group: the sp group, under Megatron's name.
    Group get_context_parallel_group() const { return get_sequence_parallel_group(); }

    /// Rank in the sequence-data-parallel group (dp x sp): dp_rank * sp + sp_rank.
    int get_sequence_data_parallel_rank() const { return coord_.dp_rank * mesh_.shape().sp + coord_.sp_rank; }
    /// Size of the sequence-data-parallel group, DP * sp.
    int get_sequence_data_parallel_world_size() const { return mesh_.shape().dp() * mesh_.shape().sp; }
    /// The sequence-data-parallel group ("dp+sp"): gradients are averaged over it,
    /// since sp ranks hold the same parameters and see different pieces of the samples.
    Group get_sequence_data_parallel_group() const { return mesh_.group(GroupKind::dp_sp, rank_); }

    /// Rank in the ZeRO sharding group (dp_shard_rank).
    int dp_shard_rank() const { return coord_.dp_shard_rank; }
    /// Number of ZeRO shards dp_shard.
    int dp_shard_world_size() const { return mesh_.shape().dp_shard; }
    /// The dp_shard group: ZeRO shards over it when sp = 1 (with sp > 1 use dp_shard_sp_group()).
    Group dp_shard_group() const { return mesh_.group(GroupKind::dp_shard, rank_); }

    /// Replica index (dp_rep_rank).
    int dp_rep_rank() const { return coord_.dp_rep_rank; }
    /// Number of replicas dp_rep.
    int dp_rep_world_size() const { return mesh_.shape().dp_rep; }
    /// The replica group: the ranks holding the same shard in every replica
    /// (HSDP / FSDP HYBRID_SHARD and MiCS all-reduce their reduced shards over it).
    Group dp_rep_group() const { return mesh_.group(GroupKind::dp_rep, rank_); }

    /// Rank in the "dp_shard+sp" group: dp_shard_rank * sp + sp_rank.
    int dp_shard_sp_rank() const { return coord_.dp_shard_rank * mesh_.shape().sp + coord_.sp_rank; }
    /// Size of the "dp_shard+sp" group, dp_shard * sp.
    int dp_shard_sp_world_size() const { return mesh_.shape().dp_shard * mesh_.shape().sp; }
    /// The "dp_shard+sp" group: what ZeRO shards over (equal to dp_shard_group() when sp = 1).
    Group dp_shard_sp_group() const { return mesh_.group(GroupKind::dp_shard_sp, rank_); }

    /// True on the first pipeline stage (it reads the tokens and embeds them).
    bool pp_is_first_stage() const { return coord_.pp_rank == 0; }
    /// True on the last pipeline stage (it computes the logits and the loss).
    bool pp_is_last_stage() const { return coord_.pp_rank == mesh_.shape().pp - 1; }
    /// Global rank of the next stage's peer (receives our activations), or -1 on the last stage.
    int pp_next_rank() const;
    /// Global rank of the previous stage's peer (receives our gradients), or -1 on the first stage.
    int pp_prev_rank() const;

private:
    ProcessMesh mesh_;
    int rank_;
    MeshCoord coord_;
};

}  // namespace ss
