// memory.h — the bytes one rank holds: model states, activations, buffers.
//
// Model states (ZeRO paper, Rajbhandari et al. 2020, arXiv:1910.02054, sec. 3.1
// and 5; Psi = parameters this rank's TP/PP slice holds, N = ZeRO shard group):
//
//                      params         grads          optimizer          (bf16: 2 / 2 / K = 12; fp32: 4 / 4 / K = 8)
//     stage 0 (DDP)    2 Psi          2 Psi          K Psi
//     stage 1 (P_os)   2 Psi          2 Psi          K Psi / N
//     stage 2 (P_os+g) 2 Psi          2 Psi / N      K Psi / N
//     stage 3 (+p)     2 Psi / N      2 Psi / N      K Psi / N
//
// "Psi / N" is counted as the engine partitions (parallel/shard_plan.h): per unit,
// padded, sum_u ceil(P_u / N), so the prediction equals the Ledger byte for byte.
// ZeRO++ (Wang et al. 2023): hpZ adds its secondary partition, N ceil(P_u / N) e / K
// per unit; qwZ and qgZ change no model state, only transient wires (plan/zeropp.h).
//
// Activations per layer and micro-batch (Korthikanti et al. 2022,
// arXiv:2205.05198, sec. 4, table 2; s = T, b = MBS, h = C, a = H, t = TP):
//
//     no parallelism            sbh (34 + 5as/h)
//     tensor parallel           sbh (10 + 24/t + 5as/(ht))
//     tensor + sequence par.    sbh/t (34 + 5as/h)
//     + selective recompute     the 5as/h term goes
//     full recompute            2sbh (the layer's input; /t with sequence parallelism)
//
// times the layers a stage holds, times the micro-batches it keeps in flight
// (1F1B: p - stage, GPipe: all m, interleaved: Korthikanti eq. 5's
// 1 + (p-1)/(pv)), divided by SP (Ulysses and ring attention both keep 1/sp of
// every sequence). The engine's own layout (fp32, no dropout) is the same
// formula without the dropout masks, at 4 bytes; see docs/formulas.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mesh/process_mesh.h"
#include "plan/input.h"

namespace ss {

/// The parameters one rank holds under TP and PP, cut into the units ZeRO partitions.
struct ModelSlice {
    int stage = 0;              ///< pipeline stage
    int first_layer = 0;        ///< first block of the stage
    int layers = 0;             ///< blocks on the stage (L / pp)
    bool has_embedding = false; ///< first stage: wte (Vp/t rows, Vp = padded_vocab) + wpe
    bool has_head = false;      ///< last stage: ln_f (and a copy of the tied wte when pp > 1)
    std::vector<int64_t> units; ///< elements per unit, flat order (engine units when pp = 1)
    int64_t elems = 0;          ///< sum of units: Psi of this rank

    /// Elements of a ZeRO shard over @p n ranks: sum over units of ceil(u / n).
    int64_t shard(int n) const;
    /// The largest unit (what ZeRO-3 gathers at once).
    int64_t largest_unit() const;
};

/// The slice of pipeline stage @p stage when @p cfg is split TP @p tp ways and PP @p pp ways.
/// Vocabulary rows are Vp / tp, Vp = padded_vocab(V, tp, vocab_divisible_by) (Megatron-LM pads the vocabulary).
ModelSlice model_slice(const GPT2Config& cfg, int tp, int pp, int stage);

/// The same for a stage of @p layers blocks from block @p first_layer on (an uneven pipeline).
ModelSlice model_slice(const GPT2Config& cfg, int tp, int pp, int stage, int layers, int first_layer);

/// Blocks on each of @p pp pipeline ranks, as the engine splits them (parallel/pipeline.h,
/// pipeline_split): --pp-split as given, else even where pp divides L, else the first
/// L mod pp stages one block more; interleaved, L / pp on each (v equal chunks).
std::vector<int> stage_layers(const PlanInput& in, int pp);

/// The slice pipeline rank @p stage holds: model_slice with stage_layers' count and first block.
ModelSlice stage_slice(const PlanInput& in, int tp, int pp, int stage);

/// The pipeline ranks whose memory and time the planner works out: 0 and the last when the
/// stages are even (the others hold no more than rank 0), every rank when they are not.
std::vector<int> stages_to_plan(const PlanInput& in, int pp);

/// Model-state bytes of one rank.
struct ModelStates {
    int64_t params = 0;  ///< parameters as the forward reads them (2 or 4 bytes each)
    int64_t grads = 0;   ///< gradients (2 or 4 bytes each)
    int64_t optim = 0;   ///< master weights, Adam m and v (12 or 8 bytes each)
    /// params + grads + optim.
    int64_t total() const { return params + grads + optim; }
};

/// Model states of @p slice under ZeRO stage @p zero over a shard group of @p n ranks; with
/// @p grads_fp32 the gradients take 4 bytes an element (PlanInput::grad_reduce_fp32).
ModelStates model_states(const ModelSlice& slice, int zero, int n, DType dtype, bool grads_fp32 = false);

/// The ZeRO paper's formula (sec. 5, figure 1) in bytes: (2 + 2 + K) Psi divided
/// as @p stage says over @p n ranks. Used for the paper's own examples.
double zero_paper_bytes(double psi, int stage, int n, double K);

/// Korthikanti et al. 2022 (table 2): activation bytes of ONE transformer layer for one
/// micro-batch of @p b sequences of @p s tokens, width @p h, @p a heads, TP @p t.
double korthikanti_layer_bytes(double s, double b, double h, double a, int t, bool sequence_parallel,
                               Recompute recompute);

/// Activation bytes of one rank, split into what makes them up.
struct ActivationBytes {
    double per_layer = 0;          ///< one layer, one micro-batch (after TP, SP and recompute)
    double layer_sets = 0;         ///< (layer, micro-batch) pairs held at the peak
    double embedding = 0;          ///< first stage: embedding output / dropout masks held
    double head = 0;               ///< last stage: head activations held
    double total = 0;              ///< per_layer x layer_sets + embedding + head
    std::string formula;           ///< the per-layer formula used, as text
};

/// Whether attention runs as ring attention: sequence parallelism over more than one rank in ring
/// mode, blockwise with an online softmax (parallel/ring_attention.h), so no scores are stored and
/// backward recomputes each block's.
bool ring_attention(const PlanInput& in, const MeshShape& mesh);

/// Whether backward computes QK^T once more as FlashAttention does (PlanInput::flash_attention; Dao et
/// al. 2022, algorithm 4): flash_attention set and attention not ring attention, which already counts
/// its blocks' recomputation.
bool flash_recomputes_scores(const PlanInput& in, const MeshShape& mesh);

/// Activations of pipeline stage @p stage for @p in with GA = @p ga micro-batches.
ActivationBytes activation_bytes(const PlanInput& in, const MeshShape& mesh, int ga, int stage);

/// Bytes one rank's model-parallel operators hold for their traffic (the engine books them in
/// Mem::comm; docs/formulas.md, "Communication buffers"): ring attention's four blocks of keys and values
/// [b, s/sp, 2h/tp] (the one held, the one coming in, and their gradients), kept from the first
/// layer on, plus the largest of the buffers that live only while their call runs: Ulysses'
/// all-to-all of qkv (send and receive, [b, s/sp, 3h/tp] each), Megatron-SP's gathered
/// sequence [b, s/sp, h], the vocabulary-parallel loss's gathered row maxima [b, s/sp, tp].
/// Activations in fp32 under the engine's layout, 16-bit under the paper's; the maxima fp32.
int64_t model_parallel_comm_bytes(const PlanInput& in, const MeshShape& mesh);

/// Bytes pipeline stage @p stage holds in boundary tensors at its peak, GA = @p ga micro-batches:
/// pipe_comm_buffers_peak (schedule/pipeline_schedule.h) of the schedule, each one micro-batch's
/// residual stream on the rank, [b, s/sp (/tp under Megatron-SP), h] in fp32 as the engine sends
/// it. 0 without pipeline parallelism.
int64_t pipeline_comm_bytes(const PlanInput& in, const MeshShape& mesh, int ga, int stage);

/// One of those boundary tensors, in bytes: b x s/sp (/tp under Megatron-SP) x h x 4.
int64_t pipeline_comm_bytes_each(const PlanInput& in, const MeshShape& mesh);

/// Everything one rank holds at its peak.
struct MemoryPlan {
    int stage = 0;             ///< the pipeline stage this is for (the one with the highest total)
    ModelSlice slice;          ///< what it holds
    int shard_n = 1;           ///< ZeRO shard group: dp_shard x sp
    ModelStates states;        ///< params, grads, optimizer
    ActivationBytes acts;      ///< saved activations
    int64_t comm = 0;          ///< communication buffers (buckets, ZeRO-3 gathered units, ZeRO++'s quantized wires,
                               ///< the model-parallel operators': model_parallel_comm_bytes, the pipeline's
                               ///< boundary tensors: pipeline_comm_bytes)
    int64_t hpz = 0;           ///< ZeRO++ hpZ: the secondary partition, 1/K of the padded slice (Ledger's hpz)
    int64_t outer = 0;         ///< DiLoCo: theta and the outer momentum in fp32, 8 bytes per element the optimizer
                               ///< updates (Ledger's outer)
    int64_t total = 0;         ///< states + acts + comm + hpz + outer
    double capacity = 0;       ///< device memory
    /// total <= capacity.
    bool fits() const { return double(total) <= capacity; }
};

/// Memory of the stage of @p in that needs the most.
MemoryPlan plan_memory(const PlanInput& in, const MeshShape& mesh, int ga);

}  // namespace ss
