// options.h — what `shardscope train` can be asked to do, and the one place
// that checks it.
//
// The command line (app/train_cmd.cpp) fills TrainOptions, turning every name
// it is given (a schedule, an SP mode, a recompute choice, a backend) into its
// enum as it parses; check_train_options() then checks every option once, says
// what to change when one is wrong, and resolves what the run will be: the
// sequence length, the world, the rank grid, the pipeline's split and bubble,
// and the GBS. Everything after it (train/train.cpp, train/report.h, the
// planner's view in train/plan_for_run.h) reads the resolved RunShape and never
// checks an option again.
#pragma once

#include "comm/links.h"

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "kernels/cpu/adamw.h"
#include "mesh/layout_names.h"
#include "mesh/process_mesh.h"
#include "model/config.h"
#include "model/recompute.h"
#include "optim/diloco.h"
#include "schedule/pipeline_schedule.h"
#include "train/fault.h"

namespace ss {

/// How the ranks of a run talk (comm/).
enum class BackendKind {
    threads,  ///< every rank a thread of this process (comm/threads_backend.h)
    mpi,      ///< one process per rank under mpirun (comm/mpi_backend.h)
    nccl,     ///< one process per GPU under mpirun, collectives on the GPUs (comm/nccl_backend.h)
};

/// "threads", "mpi", "nccl".
const char* backend_name(BackendKind b);
/// Inverse of backend_name (throws ss::Error that names the choices).
BackendKind parse_backend(const std::string& s);

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
    bool profile = false;     ///< time every kern:: call into StepStats::kernels (kernels/profile.h)

    // -- ranks --
    int ranks = 1;                      ///< world size: number of ranks
    BackendKind backend = BackendKind::threads;  ///< how the ranks talk
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
    SpMode sp_mode = SpMode::ulysses;  ///< how the sp axis splits attention
    RingSplit ring_split = RingSplit::zigzag;  ///< ring attention: which tokens each sp rank holds (model/sequence_split.h)
    double bucket_mb = 0;          ///< DDP: bucket size in MiB; 0 = naive (one all-reduce per tensor)
    int replica_sync_every = 1;    ///< 1: replicas average gradients every step; K > 1: local SGD, params every K steps
    ReplicaOuter replica_outer = ReplicaOuter::avg;  ///< K > 1: avg (local SGD) or nesterov (DiLoCo, optim/diloco.h)
    float outer_lr = 0.7f;         ///< DiLoCo's outer learning rate (the paper's 0.7, arXiv:2311.08105)
    float outer_momentum = 0.9f;   ///< DiLoCo's outer Nesterov momentum (the paper's 0.9)
    bool overlap = true;           ///< --overlap on|off: start data-parallel, pipeline and ring traffic early (bit-identical)
    int prefetch = 1;              ///< ZeRO-3 with overlap: units gathered ahead of use (0: none)
    int hpz = 0;                   ///< --hpz K: ZeRO++ hpZ, ZeRO-3's backward gathers inside groups of K (0: off)
    bool qwz = false;              ///< --qwz: ZeRO++ qwZ, ZeRO-3's parameter gathers move block-quantized int8 (parallel/zeropp.h)
    bool qgz = false;              ///< --qgz: ZeRO++ qgZ, ZeRO-2/3's gradient reduce-scatter as quantized all-to-alls
    int quant_block = 256;         ///< --quant-block B: elements per quantization block (one fp32 scale each)
    int qgz_bits = 4;              ///< --qgz-bits 4|8: bits per gradient element on qgZ's wire (the paper's 4)

    // -- emulated links, threads backend (src/comm/links.h) --
    std::string link;              ///< --link GBPS[,US]: one link for every group
    std::string link_intra;        ///< --link-intra GBPS,US: between ranks of one node
    std::string link_inter;        ///< --link-inter GBPS,US: between nodes
    int gpus_per_node = 0;         ///< --gpus-per-node N: ranks r, s share a node when r / N == s / N (ranks_per_node)
    std::string emulate;           ///< --emulate PRESET: a real cluster's links, time-scaled to this CPU

    // -- pipeline parallelism (src/parallel/pipeline.h) and recompute --
    int pp = 1;                    ///< pipeline stages; the step's GA micro-batches flow through them
    std::vector<int> pp_split;     ///< blocks per (virtual) stage; empty = an even split
    Schedule schedule = Schedule::one_f_one_b;  ///< pipeline schedule
    int pp_virtual = 1;            ///< model chunks per pipeline rank (interleaved)
    Recompute recompute = Recompute::none;  ///< activation recompute (model/recompute.h)

    Fault fault;                   ///< --inject-fault: a rank that fails on purpose (train/fault.h); none by default

    // -- checkpoints (src/train/sharded_checkpoint.h) --
    int save_every = 0;            ///< save a checkpoint every K steps (0: never)
    std::string checkpoint_dir;    ///< where --save-every writes (DIR/step-N/, DIR/latest)
    std::string resume;            ///< continue from this checkpoint (a --checkpoint-dir or one step-N in it)
    int keep_last = 3;             ///< keep the newest K complete checkpoints in checkpoint_dir, delete older ones (0: keep all)
};

/// What a run's options resolve to, once they are checked.
struct RunShape {
    int T = 0;                 ///< sequence length (opts.T, or the model's maxT)
    int world = 1;             ///< ranks (under mpirun: the job's processes)
    bool mpi = false;          ///< one process per rank (backend mpi or nccl), under mpirun
    MeshShape mesh;            ///< the rank grid, every axis filled in (mesh/process_mesh.h)
    std::vector<int> pp_split;  ///< blocks per virtual stage
    double bubble = 0;         ///< the schedule's bubble fraction (0 without pipeline parallelism)
    int64_t gbs = 0;           ///< MBS x GA x DP
    bool emulated_links = false;  ///< a --link, --link-intra/--link-inter or --emulate flag was given
};

/// Ranks per node as the run knows them: --gpus-per-node (alone it emulates nothing and
/// only says where the nodes are, on any backend), else --emulate's preset's, else 0 (not
/// known: every group is taken to be inside one node).
int ranks_per_node(const TrainOptions& o);

/// qgZ's node (parallel/zeropp.h): the members of the shard group whose first all-to-all
/// stays inside one node. --hpz K if given, else the shard group's members in one node
/// (ranks_per_node / tp), else the whole shard group of @p m (then qgZ is one all-to-all over it).
int qgz_node_size(const TrainOptions& o, const MeshShape& m);

/// Whether started calls can run while the rank computes in this run: --overlap on, on a
/// backend that progresses them (threads: progress threads; mpi: non-blocking MPI calls).
/// nccl keeps Backend::start's default, which runs a started call at once (comm/backend.h),
/// so nothing would hide and ZeRO-3's prefetch would only hold units early: a nccl run goes
/// as --overlap off, and its header and the planner's prediction say so.
bool overlap_runs(const TrainOptions& o);

/// Why overlap_runs is false with --overlap on, for the run header and errors; "" when it is not.
const char* overlap_off_reason(const TrainOptions& o);

/// The emulated links the options ask for (off without link flags). --emulate
/// measures this CPU's matmul rate first (comm/links.h), so call it once, before the ranks start.
EmulatedLinks resolve_links(const TrainOptions& o, int world);

/// Checks every option of @p o once (each error says what to change; throws
/// ss::Error) and resolves the run's shape. Looks at the environment only as
/// far as the options need it: the mpirun world for --backend mpi / nccl, a
/// GPU for --device cuda, the output paths (train/run_files.h).
RunShape check_train_options(const TrainOptions& o);

/// AdamW's hyper-parameters as the options give them.
cpu::AdamWParams adamw_params(const TrainOptions& o);

/// The schedule a run asks for: @p pp stages, m = GA micro-batches, v chunks.
PipeSpec pipe_spec(const TrainOptions& o, int pp);

}  // namespace ss
