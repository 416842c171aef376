// comm.h — every collective one rank issues in one optimizer step: how many
// bytes (as nccl-tests counts them, the same numbers a trace records), on which
// axis, carrying what, and how long it takes on the links the axis uses.
//
// Per micro-batch (b = MBS, s = T / sp tokens of the rank, h = C, t = TP; E = bytes
// per activation element: 2 for bf16 on GPUs, 4 in this fp32 CPU engine):
//
//   tp  (Megatron, Shoeybi et al. 2019)  per layer fwd 2 all_reduce(sbhE) act, bwd 2 act_grad;
//       with sequence parallelism (Korthikanti et al. 2022) each becomes an
//       all_gather + a reduce_scatter of the same bytes; embedding, head and the
//       vocabulary-parallel loss add one all_reduce each way and 3 values per token
//   sp  Ulysses (Jacobs et al. 2023): per layer 4 all_to_all(sbhE/t) fwd, 4 bwd
//       ring (Liu et al. 2023): per layer sp-1 sends of K,V (2sbhE/t) fwd; K,V and dK,dV bwd
//   pp  (Narayanan et al. 2021) per micro-batch and stage boundary one send + recv of sbhE (/t with SP)
//
// Per step (Psi = this rank's parameters, S = its ZeRO shard, N = shard group,
// e = bytes per parameter element; ZeRO paper sec. 7):
//
//   stage 0   all_reduce(Psi e)                                    over dp (x sp)
//   stage 1   reduce_scatter(N S e) + all_gather(N S e) in the step
//   stage 2   reduce_scatter(N S e) per micro-batch in bwd + all_gather(N S e) in the step
//   stage 3   all_gather(N S e) per micro-batch in fwd and again in bwd + reduce_scatter(N S e) in bwd
//   replicas  all_reduce(S e) over dp_rep in the step (stages 1-3); with local SGD (--replica-sync-every
//             H > 1, Lin et al. 2020) none, and every H steps all_reduce(4 E) over dp_rep, E the elements
//             the optimizer updates (P, or S under ZeRO), in fp32; ZeRO-1/2 then gather all-gather(N S e);
//             DDP's gradient all_reduce goes over the shard group (dp_shard x sp) only
//   ZeRO++    (Wang et al. 2023, plan/zeropp.h) hpZ: stage 3's backward all_gather over K (axis hpz);
//             qwZ: stage 3's all_gathers from the N chunks in int8 blocks; qgZ: stage 2/3's
//             reduce_scatter becomes all_to_all over the node (qgz_node) then across (qgz_cross), blocking
//
// Time is alpha-beta: hops x alpha + bytes x busbw_factor / busbw (nccl-tests'
// factors, src/comm/trace/trace.h), with the link of the axis: intra-node when the
// grid keeps every group of that axis inside one node, inter-node otherwise.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "comm/label.h"
#include "mesh/process_mesh.h"
#include "plan/gbs.h"
#include "plan/input.h"

namespace ss {

/// When a collective can hide under compute.
enum class Overlap {
    none,       ///< on the critical path (TP, Ulysses, PP, the optimizer step's traffic)
    fwd,        ///< under the forward compute of the same micro-batch (ZeRO-3 prefetch)
    bwd,        ///< under the backward compute (gradient buckets, ZeRO-2/3 reduce-scatter)
    attention,  ///< under the attention compute of the same layer (ring attention)
    pipeline,   ///< posted early (--overlap on): only the pipeline's fill and drain wait for it (PP send/recv)
};

/// The collectives of one kind one rank issues in one step.
struct CommCall {
    std::string axis;      ///< "tp", "sp", "pp", "dp", "dp_shard", "dp_rep", "dp+sp", "dp_shard+sp"; ZeRO++: "hpz", "qgz_node", "qgz_cross"
    std::string op;        ///< "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send", "recv"
    Payload payload = Payload::scalar;  ///< param, grad, act, act_grad, scalar
    Phase phase = Phase::none;          ///< fwd, bwd, step
    int group = 1;         ///< ranks in the group (2 for send/recv)
    bool intra_node = true;   ///< the group stays inside one node
    int64_t calls = 0;     ///< calls per step
    int64_t bytes = 0;     ///< bytes per step, as nccl-tests and the trace count them (sum over calls)
    double seconds = 0;    ///< alpha-beta time of all the calls
    Overlap overlap = Overlap::none;  ///< what it can hide under
    bool each_microbatch = true;      ///< issued for every micro-batch (else once per step)
    int every = 1;         ///< issued on one step in every `every` (local SGD's sync: H); calls, bytes and
                           ///< seconds are that step's, and the step time counts seconds / every
    const char* what = "";  ///< what it is, for people (a string literal)
};

/// Hops of one call in the latency term: 2 ceil(log2 n) for all_reduce, ceil(log2 n)
/// for all_gather, reduce_scatter and broadcast (tree / PAT algorithms), n - 1 for
/// all_to_all, 1 for send and recv. With @p ring (emulated links, comm/links.h):
/// 2(n-1) for all_reduce, n - 1 for all_gather, reduce_scatter, broadcast and all_to_all.
int collective_hops(const std::string& op, int n, bool ring = false);

/// Alpha-beta time of @p calls calls moving @p bytes in all on a group of @p n
/// ranks over @p link: calls x hops x alpha + bytes x busbw_factor(op, n) / busbw
/// (hops as collective_hops counts them for link.ring).
double collective_seconds(const std::string& op, int64_t bytes, int64_t calls, int n, const Link& link);

/// True when every group of an axis with @p n ranks, spaced @p stride ranks apart
/// on the grid, lies inside one node of @p gpus_per_node ranks.
bool axis_in_node(int stride, int n, int gpus_per_node);

/// The link collective @p op over a group of @p n ranks spaced @p stride apart runs at,
/// with @p gpus_per_node GPUs a node: hw.intra inside a node (axis_in_node); across
/// nodes hw.inter (one GPU's NIC) with its bandwidth times nics_in_use(op, the group's
/// members in a node) (comm/links.h: a ring collective's channels leave each node
/// through that many NICs), at most hw.intra's. docs/formulas.md, "Two tiers".
Link group_link(const Hardware& hw, const std::string& op, int stride, int n, int gpus_per_node);

/// Everything a rank of pipeline stage @p stage (global rank 0's for stage 0) issues in one step.
std::vector<CommCall> plan_comm(const PlanInput& in, const MeshShape& mesh, const GbsPlan& gbs, int stage = 0);

}  // namespace ss
