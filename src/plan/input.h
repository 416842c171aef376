// input.h — what the planner is asked: a model, a cluster, a layout of the
// rank grid, a batch, a precision.
//
// The planner answers from formulas alone (no rank runs), so the question can
// be about any cluster: 512 H100s as easily as the 8 threads of this machine.
// A layout names the degree of every axis of the grid (src/mesh/process_mesh.h)
//
//     world = PP x DP x SP x TP,    DP = dp_rep x dp_shard
//
// plus the knobs that change memory and time without taking ranks: the ZeRO
// stage, ZeRO++'s hpZ, qwZ and qgZ (Wang et al. 2023, arXiv:2306.10209), Megatron's
// sequence parallelism (a switch on the tp axis), the pipeline schedule and
// activation recomputation. Fields left at 0 are filled as `shardscope train`
// fills them (dp takes the rest of the world; qgZ's node as qgz_node_size does).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "mesh/layout_names.h"  // enum SpMode, enum Schedule and their names
#include "model/config.h"
#include "model/recompute.h"     // enum Recompute and its names
#include "optim/diloco.h"        // enum ReplicaOuter
#include "plan/hardware.h"

namespace ss {

/// Whose activation layout to count.
enum class ActModel {
    paper,   ///< Korthikanti et al. 2022: 16-bit activations, dropout, as on GPUs
    engine,  ///< this CPU engine: fp32, no dropout, LayerNorm statistics (model/gpt2.h BlockActs)
};

/// "paper", "engine".
const char* act_model_name(ActModel a);
/// Inverse of act_model_name (throws ss::Error listing the accepted names).
ActModel parse_act_model(const std::string& s);

/// Bytes of one gradient element: 4 when @p grads_fp32 (PlanInput::grad_reduce_fp32), else the
/// parameters' dtype_size(@p dtype).
inline int grad_element_bytes(DType dtype, bool grads_fp32) { return grads_fp32 ? 4 : int(dtype_size(dtype)); }

/// The degree of every axis and the knobs that take no ranks.
struct PlanLayout {
    int tp = 1;                          ///< tensor-parallel degree (Megatron; must divide H)
    int pp = 1;                          ///< pipeline stages (must divide L)
    int sp = 1;                          ///< sequence-parallel degree (must divide T; Ulysses: H / tp too)
    SpMode sp_mode = SpMode::ulysses;    ///< how sp splits attention
    RingSplit ring_split = RingSplit::zigzag;  ///< ring: which tokens each sp rank holds (model/sequence_split.h)
    int dp_shard = 0;                    ///< ranks ZeRO shards over (0: the rest of the world)
    int dp_rep = 0;                      ///< replicas of the shard group (0: the rest, usually 1)
    bool sequence_parallel = false;      ///< Megatron SP on the tp axis (Korthikanti et al. 2022, sec. 4.2.2)
    int zero = 0;                        ///< ZeRO stage: 0 (DDP), 1, 2, 3
    int hpz = 0;                         ///< ZeRO-3: ZeRO++ hpZ's group of K ranks (backward gathers inside it); 0 off
    bool qwz = false;                    ///< ZeRO-3: ZeRO++ qwZ, parameter gathers from the primary partition in int8 blocks (lossy)
    bool qgz = false;                    ///< ZeRO-2/3: ZeRO++ qgZ, the gradient reduce-scatter as quantized all-to-alls (lossy)
    int qgz_node = 0;                    ///< qgZ: shard-group members per node, its first hop (0: hpz, else the GPUs per node if fewer than the shard group, else all of it)
    Schedule schedule = Schedule::one_f_one_b;  ///< pipeline schedule (pp > 1)
    int pp_virtual = 1;                  ///< model chunks per stage (interleaved schedule)
    std::vector<int> pp_split;           ///< blocks per stage, 1F1B and GPipe (empty: the engine's default, even
                                         ///< where pp divides L, else the first L mod pp stages one block more)
    Recompute recompute = Recompute::none;      ///< activation recomputation
    int replica_sync_every = 1;          ///< local SGD (dp_rep > 1): the replicas reduce no gradients and average what
                                         ///< the optimizer updates every H steps (1: synchronous, every step)
    ReplicaOuter replica_outer = ReplicaOuter::avg;  ///< at each sync: the average, or DiLoCo's outer Nesterov step
};

/// A question for the planner.
struct PlanInput {
    GPT2Config model = model_preset("tiny");  ///< the model's shape
    int T = 0;                 ///< sequence length (0: the model's maxT)
    int gpus = 1;              ///< world size: GPUs (or ranks)
    int gpus_per_node = 0;     ///< GPUs that share the fast link (0: the hardware's default)
    Hardware hw = hardware_preset("h100");  ///< per-GPU speed, memory and links
    PlanLayout layout;         ///< how the world is split
    int mbs = 1;               ///< micro-batch size: sequences per rank per micro-batch
    int ga = 0;                ///< gradient accumulation steps (0: from gbs, else 1)
    int64_t gbs = 0;           ///< target global batch size (0: MBS x GA x DP, whatever it is)
    DType dtype = DType::bf16; ///< bf16 (2 + 2 + 12 bytes per parameter) or fp32 (4 + 4 + 8)
    ActModel act_model = ActModel::paper;  ///< whose activation layout to count
    /// Attention as FlashAttention runs it (Dao et al. 2022, arXiv:2205.14135, algorithms 1 and 4; the GPU
    /// stacks' default): no s x s scores kept, an fp32 log-sum-exp per query and head instead, and QK^T
    /// computed again in backward. The paper's layout only (act_model paper); false: the scores are kept.
    bool flash_attention = false;
    /// bf16 runs: gradients accumulated and reduced in fp32, 4 bytes an element in the gradient buffer and
    /// on the wire (Megatron-LM's default under --bf16, its --accumulate-allreduce-grads-in-fp32; PyTorch
    /// FSDP's MixedPrecision(reduce_dtype=torch.float32)). The paper's layout only; false: 2 bytes (bf16).
    bool grad_reduce_fp32 = false;
    bool overlap = true;       ///< traffic starts early and hides under compute where it can (plan/overlap.h)
    int prefetch = 1;          ///< ZeRO-3 with overlap: units gathered ahead of use (the engine's --prefetch)
    double bucket_mb = 25;     ///< DDP gradient bucket (MiB; PyTorch DDP's default is 25); 0: one all_reduce per tensor
    int quant_block = 256;     ///< qwZ/qgZ: elements per quantization block, one fp32 scale each (kernels/cpu/quantize.h)
    int qgz_bits = 4;          ///< qgZ: bits per gradient element on the wire, 4 (the paper's) or 8

    /// The sequence length used: T, or the model's maxT when T = 0.
    int seq() const { return T > 0 ? T : model.maxT; }
    /// Bytes of one gradient element: grad_element_bytes(dtype, grad_reduce_fp32).
    int grad_bytes() const { return grad_element_bytes(dtype, grad_reduce_fp32); }
};

}  // namespace ss
