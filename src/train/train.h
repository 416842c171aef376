// train.h — the training loop: micro-batches, gradient accumulation, the
// optimizer step, timing, memory, and the GBS arithmetic.
//
// One optimizer step takes GA micro-batches of MBS sequences of T tokens on
// each of DP data-parallel replicas (Goyal et al. 2017 call MBS x DP the
// minibatch; gradient accumulation multiplies it by GA):
//
//   GBS = MBS x GA x DP        sequences per optimizer step
//   tokens per step = GBS x T
//
// The gradient of one step is the gradient of the mean loss over all GBS x T
// tokens: each micro-batch's backward is scaled by 1/(MBS x T x GA).
#pragma once

#include <array>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.h"
#include "core/ledger.h"
#include "model/config.h"
#include "train/fault.h"

namespace ss {

/// Everything `shardscope train` can be asked to do.
struct TrainOptions {
    GPT2Config model = model_preset("tiny");  ///< model dimensions (config.h presets)
    int T = 0;                ///< sequence length; 0 means the model's maxT
    int mbs = 4;              ///< micro-batch size (sequences per rank per micro-batch)
    int ga = 1;               ///< gradient accumulation steps (micro-batches per optimizer step)
    int steps = 10;           ///< optimizer steps
    float lr = 1e-3f;         ///< AdamW learning rate (constant)
    float weight_decay = 0.1f;  ///< AdamW decoupled weight decay (matrices and embeddings only)
    float beta1 = 0.9f;         ///< AdamW decay rate of the first moment m
    float beta2 = 0.95f;        ///< AdamW decay rate of the second moment v
    float eps = 1e-8f;          ///< AdamW denominator epsilon
    uint64_t seed = 1337;     ///< parameter initialisation seed
    DType dtype = DType::f32; ///< storage of params and grads (fp32, or bf16 with fp32 master weights)
    int blas_threads = 1;     ///< OpenBLAS threads per rank
    std::string data;         ///< llm.c token file; empty = the built-in corpus
    std::string init;         ///< safetensors file to start from; empty = counter-based init
    std::string save;         ///< safetensors file to write at the end
    std::string dump_grads;   ///< safetensors file for the first step's full gradients
    std::string json;         ///< machine-readable summary
    bool quiet = false;       ///< no per-step lines

    // -- ranks --
    int ranks = 1;                 ///< world size: number of ranks
    std::string backend = "threads";  ///< "threads" (ranks are threads of this process), "mpi" or "nccl"
    std::string device;            ///< where each rank computes: "cpu" or "cuda" (GPU rank % GPUs); empty: SHARDSCOPE_DEVICE, else cpu
    double comm_timeout = 60;      ///< seconds any rank waits for another before the run fails
    std::string trace;             ///< Chrome trace of every collective, span and memory change (empty: off)

    // -- data parallelism and ZeRO (src/parallel/zero.h) --
    int dp_shard = 0;              ///< ranks ZeRO shards over (0: the rest of the world)
    int dp_rep = 0;                ///< replicas of the shard group (0: the rest of the world, usually 1)
    int zero = 0;                  ///< ZeRO stage 0 (DDP), 1, 2 or 3
    int tp = 1;                    ///< tensor-parallel degree (Megatron; parallel/tensor_parallel.h)
    bool sequence_parallel = false;  ///< Megatron sequence parallelism on the tp axis (needs tp > 1)
    int sp = 1;                    ///< sequence-parallel degree (parallel/sequence_parallel.h)
    std::string sp_mode = "ulysses";  ///< how the sp axis splits attention: ulysses or ring
    double bucket_mb = 0;          ///< DDP: bucket size in MiB; 0 = naive (one all-reduce per tensor)
    int replica_sync_every = 1;    ///< 1: replicas average gradients every step; K > 1: local SGD, params every K steps

    // -- pipeline parallelism (src/parallel/pipeline.h) and recompute --
    int pp = 1;                    ///< pipeline stages; the step's GA micro-batches flow through them
    std::vector<int> pp_split;     ///< blocks per (virtual) stage; empty = an even split
    std::string schedule = "1f1b";  ///< pipeline schedule: gpipe, 1f1b or interleaved
    int pp_virtual = 1;            ///< model chunks per pipeline rank (interleaved)
    std::string recompute = "none";  ///< activation recompute: none, selective or full

    Fault fault;                   ///< --inject-fault: a rank that fails on purpose (train/fault.h); none by default

    // -- checkpoints (src/train/sharded_checkpoint.h) --
    int save_every = 0;            ///< save a checkpoint every K steps (0: never)
    std::string checkpoint_dir;    ///< where --save-every writes (DIR/step-N/, DIR/latest)
    std::string resume;            ///< continue from this checkpoint (a --checkpoint-dir or one step-N in it)
    int keep_last = 3;             ///< keep the newest K complete checkpoints in checkpoint_dir, delete older ones (0: keep all)
};

/// One optimizer step as measured.
struct StepStats {
    int step = 0;             ///< 1-based step number
    float loss = 0.0f;        ///< mean loss over the step's GBS x T tokens
    double ms = 0.0;          ///< wall time of the step
    double tokens_per_s = 0.0;  ///< GBS x T / wall time
};

/// What a run did.
struct TrainReport {
    TrainOptions opts;        ///< the options it ran with
    int T = 0;                ///< sequence length used (opts.T, or the model's maxT)
    int world = 1;            ///< ranks
    int dp = 1;               ///< data-parallel degree DP = dp_shard x dp_rep
    int dp_shard = 1;         ///< ranks of one ZeRO shard group
    int dp_rep = 1;           ///< replicas of the shard group
    int tp = 1;               ///< tensor-parallel degree
    int sp = 1;               ///< sequence-parallel degree
    int pp = 1;               ///< pipeline stages
    std::vector<int> pp_split;  ///< blocks per virtual stage, as run
    double bubble = 0;        ///< the schedule's bubble fraction, (p-1)/m or (p-1)/(v m)
    int64_t gbs = 0;          ///< MBS x GA x DP
    int64_t num_params = 0;   ///< parameters in the model
    int first_step = 1;       ///< the first step this run took (a resumed run: the checkpoint's step + 1)
    std::vector<StepStats> steps;  ///< one entry per optimizer step this run took
    std::array<size_t, kMemCategories> live{};  ///< bytes by category at the end (rank 0)
    std::array<size_t, kMemCategories> peak{};  ///< highest bytes each category reached (rank 0)
    size_t peak_total = 0;    ///< highest total bytes live at once (not the sum of peak; rank 0)
    std::vector<std::array<size_t, kMemCategories>> rank_peak;  ///< peak bytes by category, per rank

    /// The GBS arithmetic written out: "GBS = MBS x GA x DP = 4 x 1 x 1 = 4".
    std::string gbs_line() const;
    /// With pipeline parallelism: the stages, the schedule and its bubble; else empty.
    std::string pipeline_line() const;
    /// With local SGD (replica_sync_every > 1): the batch each replica steps on; else empty.
    std::string replica_batch_line() const;
    /// The machine-readable summary (what --json writes).
    nlohmann::json to_json() const;
};

/// Runs a training job as @p opts says, printing progress to @p out (may be null).
/// Throws ss::Error for bad options or files.
TrainReport train(const TrainOptions& opts, std::ostream* out);

/// Prints memory by category (live at the end and peak), as `train` does at the end.
void print_memory(std::ostream& out, const TrainReport& r);

}  // namespace ss
