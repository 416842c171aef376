// search.h — every valid layout of a world, ranked by predicted tokens/s.
//
// For W GPUs it walks the factorisations W = PP x DP x SP x TP (TP dividing
// the heads and staying inside a node, PP dividing the layers, SP dividing the
// sequence and, for Ulysses, the heads of a TP rank), every split of DP into
// dp_shard x dp_rep, every ZeRO stage, SP mode, pipeline schedule, MBS and GA
// the constraints allow, and keeps the layouts that fit in memory:
//
//     for tp, pp, sp, sp_mode, dp_rep, zero, schedule (+ v), mbs, ga:
//         recompute = the least of none, selective, full that fits
//         rank by tokens/s (ties: less memory)
//
// Under a GBS cap GA is the largest power of two that keeps GBS under it
// (more micro-batches amortise the step's fixed traffic and shrink the
// bubble); a smaller GA is tried only while the larger one needs recompute.
//
// ZeRO++ (Wang et al. 2023, plan/zeropp.h): every ZeRO-3 layout whose shard group
// spans more than a node is tried with hpZ too, K = the shard group's members in one
// node (GPUs per node / TP); hpZ is exact (ZeRO-3's bits) and costs 1/K of the
// parameters. qwZ (ZeRO-3) and qgZ (ZeRO-2/3) change the results (quantized weights
// and gradients), so they are tried only with allow_quantized (`--allow-quantized`),
// and every result that uses them says so: a faster lossy layout is not the same
// layout, and the ranking by tokens/s alone does not know what it costs in accuracy.
//
// Dominated choices are not evaluated: Megatron's sequence parallelism is
// always on with TP > 1 (same traffic as plain TP, less memory), GPipe never
// beats 1F1B (same bubble, more memory) and more recompute is only tried when
// less does not fit. 512 GPUs take well under a second.
#pragma once

#include <cstdint>
#include <vector>

#include "plan/plan.h"

namespace ss {

/// What to search and under which constraints.
struct SearchInput {
    PlanInput base;             ///< model, cluster, dtype, activation model; base.gbs > 0 asks for exactly that GBS
    int64_t max_gbs = 0;        ///< keep GBS at or under this (0: no limit; GA is then base.ga or 1)
    std::vector<int> mbs;       ///< micro-batch sizes to try (empty: base.mbs)
    int tp = 0;                 ///< hold TP at this degree (0: search)
    int pp = 0;                 ///< hold PP at this degree (0: search)
    int sp = 0;                 ///< hold SP at this degree (0: search)
    int zero = -1;              ///< hold the ZeRO stage (-1: search 0-3)
    int dp_rep = 0;             ///< hold the replicas (0: search)
    bool tp_across_nodes = false;  ///< allow TP groups larger than a node
    bool allow_quantized = false;  ///< also try ZeRO++'s qwZ and qgZ, which change results (off: exact layouts only)
    int top = 10;               ///< how many results to return (0: all that fit)
};

/// How much the search looked at.
struct SearchStats {
    int64_t evaluated = 0;  ///< layouts whose memory was computed
    int64_t fitting = 0;    ///< layouts that fit (and were timed)
    double seconds = 0;     ///< wall time of the search
    bool ga_capped = false; ///< some layouts needed more than kSearchMaxGa micro-batches and were not tried
};

/// The most micro-batches (GA) the search tries per layout: a step's replay walks every
/// one, and no run accumulates more (a pipeline's schedule holds at most 4,194,304).
constexpr int64_t kSearchMaxGa = 4096;

/// The best layouts, fastest first. Throws ss::Error when no layout is valid
/// (saying which constraint rules them out) or none fits in memory (naming the
/// one that comes closest and what it would need).
std::vector<PlanResult> search(const SearchInput& in, SearchStats* stats = nullptr);

}  // namespace ss
