// shard_plan.h — ZeRO's partition of the model over a shard group, and the two
// collectives every sharded strategy runs on one unit of it (zero1.cpp,
// zero2.cpp, zero3.cpp).
//
// Partitioning is per unit (model/gpt2.h, Unit), as FSDP does (Zhao et al.
// 2023, "PyTorch FSDP", section 3.2): unit u of size P_u is padded to
// N * ceil(P_u / N) and member i of the shard group owns chunk i.
//
//   rank:        0            1            2            3
//   unit u:  [ chunk 0  |  chunk 1  |  chunk 2  |  chunk 3 ]   (padded to a multiple of N)
//
//   all_gather(u):      every rank's chunk       -> all of u, on every rank
//   reduce_scatter(u):  all of u, on every rank  -> my chunk of their average
//
// So a rank's shard is sum_u ceil(P_u / N) elements: "Psi / N" rounded up per
// unit. The padding (at most N - 1 elements per unit) is zero and never
// updated; it is counted in the Ledger and in the traced bytes.
#pragma once

#include <vector>

#include "comm/comm.h"
#include "core/ledger.h"
#include "core/tensor.h"
#include "model/gpt2.h"
#include "optim/adamw.h"

namespace ss {

/// ZeRO's partition of the flat parameter buffer over a shard group: per
/// unit, padded to a multiple of N, chunk i to group member i.
struct ShardPlan {
    /// One unit's partition.
    struct UnitShard {
        int64_t begin = 0;   ///< first flat element of the unit
        int64_t end = 0;     ///< one past its last
        int64_t chunk = 0;   ///< ceil((end - begin) / N): elements each rank owns (with padding)
        int64_t local = 0;   ///< where this unit's chunk starts in a rank's shard
    };
    int n = 1;                     ///< shard group size N
    int index = 0;                 ///< this rank's index in the shard group
    std::vector<UnitShard> units;  ///< one per model unit
    int64_t shard_size = 0;        ///< sum of the chunks: elements of a rank's shard

    /// The part of unit @p u this rank owns, as a piece of the flat buffer (may be empty).
    Piece mine(int u) const;
    /// The pieces of every unit this rank owns.
    std::vector<Piece> pieces() const;
    /// Unit @p u padded to N chunks: what an all-gather delivers and a reduce-scatter takes.
    int64_t padded(int u) const { return units[size_t(u)].chunk * n; }
};

/// The partition of @p units over a shard group of @p n ranks, seen by member @p index.
ShardPlan make_shard_plan(const std::vector<Unit>& units, int n, int index);

/// One unit's collective in flight (overlap on): its buffers live here until it
/// is finished, since the call reads and writes them while the rank computes.
struct UnitInFlight {
    int unit = -1;            ///< which unit
    Tensor whole;             ///< all_gather: the unit being gathered (padded, Mem::comm)
    Tensor send;              ///< what is on the wire: the unit's gradients (or their bf16 copy); qwZ: my quantized chunk
    Tensor mine;              ///< reduce_scatter: my chunk of the average, as it arrives
    Tensor wire;              ///< qwZ's all_gather: every member's quantized chunk, as it arrives (zeropp.h)
    float* my_acc = nullptr;  ///< reduce_scatter_add: where my chunk is added once it has arrived
    /// The started call (comm.h). Declared last, so destroyed first: a handle
    /// dropped unwaited lets its call finish before the buffers above are freed.
    CommHandle handle;
};

/// A shard group with its plan: the collectives of one unit over it.
struct ShardGroup {
    Comm& comm;      ///< this rank's communicator
    Group group;     ///< the shard group (axis dp_shard; dp_shard+sp with sequence parallelism)
    ShardPlan plan;  ///< the partition over it (DDP: the trivial one, N = 1)
    Ledger& ledger;  ///< where the buffers below are booked

    /// Unit @p u whole (padded), all-gathered from every member's chunk; this rank's is
    /// @p my_chunk (plan.units[u].chunk elements of @p dt). Returns a new Mem::comm tensor.
    Tensor all_gather(int u, const void* my_chunk, DType dt, const Label& label) const;
    /// reduce_scatter(avg) of unit @p u: @p padded_unit (plan.padded(u) elements of @p dt)
    /// in, this rank's chunk of the average over the group out, into @p my_chunk.
    void reduce_scatter(int u, const void* padded_unit, void* my_chunk, DType dt, const Label& label) const;
    /// ZeRO-2/3's backward: unit @p u's fp32 gradients (padded) go on the wire as @p dt
    /// (bf16: rounded), and this rank's chunk of their average is added into @p my_acc (fp32).
    void reduce_scatter_add(int u, const float* unit_grads, DType dt, float* my_acc, const Label& label) const;

    /// all_gather, started: the unit arrives in the result's `whole` by the time it is waited for.
    UnitInFlight start_all_gather(int u, const void* my_chunk, DType dt, const Label& label) const;
    /// reduce_scatter_add, started, on @p unit_grads (plan.padded(u) fp32 elements, kept alive in the result).
    UnitInFlight start_reduce_scatter_add(int u, Tensor unit_grads, DType dt, float* my_acc, const Label& label) const;
    /// Waits for a started reduce_scatter_add and adds my chunk into its my_acc: the same
    /// additions, in the same order per element, as reduce_scatter_add.
    void finish_reduce_scatter_add(UnitInFlight& f) const;
};

}  // namespace ss
