// options.cpp — every check of `shardscope train`'s options, once (options.h).
#include "train/options.h"

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "comm/launch_env.h"
#include "comm/mpi/mpi_backend.h"
#include "core/check.h"
#include "core/text.h"
#include "core/device.h"
#include "model/sequence_split.h"
#include "core/names.h"
#include "kernels/cpu/matmul_rate.h"
#include "parallel/pipeline.h"
#include "plan/plan.h"
#include "plan/zeropp.h"
#include "train/run_files.h"

namespace ss {

namespace {
constexpr Named<BackendKind> kBackends[] = {
    {BackendKind::threads, "threads"}, {BackendKind::mpi, "mpi"}, {BackendKind::nccl, "nccl"}};
}  // namespace

const char* backend_name(BackendKind b) { return name_of(kBackends, b); }

BackendKind parse_backend(const std::string& s) {
    if (const BackendKind* b = find_name(kBackends, s)) return *b;
    SS_FAIL("--backend " << s << " is not a backend; use threads (ranks are threads of this process), "
                         << "mpi (one process per rank under mpirun) or nccl (one process per GPU under mpirun)");
}

cpu::AdamWParams adamw_params(const TrainOptions& o) {
    cpu::AdamWParams hp;
    hp.lr = o.lr;
    hp.beta1 = o.beta1;
    hp.beta2 = o.beta2;
    hp.eps = o.eps;
    hp.weight_decay = o.weight_decay;
    return hp;
}

PipeSpec pipe_spec(const TrainOptions& o, int pp) {
    PipeSpec spec;
    spec.kind = o.schedule;
    spec.p = pp;
    spec.m = o.ga;
    spec.v = o.pp_virtual;
    return spec;
}

namespace {

// The model, the batch and the optimizer.
void check_step(const TrainOptions& o, int T) {
    validate(o.model);
    SS_CHECK(o.mbs >= 1, "--mbs must be at least 1 (got " << o.mbs << ")");
    SS_CHECK(o.ga >= 1, "--ga must be at least 1 (got " << o.ga << ")");
    SS_CHECK(o.steps >= 0, "--steps must not be negative (got " << o.steps << ")");
    SS_CHECK(T >= 1, "--seq must be at least 1 (got " << T << ")");
    SS_CHECK(T <= o.model.maxT, "--seq " << T << " is longer than the positional table (maxT=" << o.model.maxT
                                         << "); use --seq " << o.model.maxT << " or less, or raise --max-seq");
    // A non-finite or negative rate turns every weight into nan or inf in one step (std::isfinite
    // also refuses nan, which compares false with everything and so slips past a plain "> 0").
    SS_CHECK(std::isfinite(o.lr) && o.lr > 0.0f, "--lr must be a finite number above 0 (got " << o.lr
                                                     << "); try --lr 1e-3");
    SS_CHECK(std::isfinite(o.weight_decay) && o.weight_decay >= 0.0f,
             "--weight-decay must be a finite number of 0 or more (got " << o.weight_decay << "); try --weight-decay 0.1");
    SS_CHECK(std::isfinite(o.beta1) && o.beta1 >= 0.0f && o.beta1 < 1.0f && std::isfinite(o.beta2) &&
                 o.beta2 >= 0.0f && o.beta2 < 1.0f,
             "AdamW's beta1 and beta2 must lie in [0, 1) (got " << o.beta1 << ", " << o.beta2 << ")");
    SS_CHECK(std::isfinite(o.eps) && o.eps > 0.0f, "AdamW's eps must be a finite number above 0 (got " << o.eps << ")");
    SS_CHECK(o.dtype == DType::f32 || o.dtype == DType::bf16, "--dtype must be fp32 or bf16");
}

// The flags for an --emulate preset's links without its time scale, for the error that
// refuses --emulate on a GPU ("--link-intra GBPS,US ..." where the preset is not known).
std::string unscaled_links(const std::string& emulate) {
    std::ostringstream s;
    s << "--link-intra ";
    for (const ClusterPreset& c : cluster_presets())
        if (c.name == emulate) {
            s << c.intra.gbps << "," << c.intra.us << " --link-inter " << c.inter.gbps << "," << c.inter.us
              << " --gpus-per-node " << c.gpus_per_node << " (" << c.name << "'s links)";
            return s.str();
        }
    s << "GBPS,US --link-inter GBPS,US --gpus-per-node N";
    return s.str();
}

// Where the ranks run; returns the world.
int check_ranks(const TrainOptions& o) {
    SS_CHECK(o.ranks >= 1, "--ranks must be at least 1 (got " << o.ranks << ")");
    SS_CHECK(o.backend != BackendKind::nccl || device_or_default(o.device) == Device::cuda,
             "--backend nccl moves GPU memory between GPUs; add --device cuda (or use --backend mpi on the CPU)");
    check_not_launched_by_mpi(backend_name(o.backend));  // mpirun with threads: N runs of one rank, racing for the files
    // --emulate scales its links by the preset GPU's peak over this CPU's matmul rate (comm/links.h), a
    // ratio that is wrong when the ranks compute on a GPU. Refused before require_cuda, which would hide it.
    SS_CHECK(o.emulate.empty() || device_or_default(o.device) != Device::cuda,
             "--emulate " << o.emulate << " slows its links by the preset GPU's peak over this CPU's matmul rate, "
                          << "but with --device cuda the ranks compute on a GPU; give the links unscaled instead, "
                          << unscaled_links(o.emulate) << ", or use --device cpu");
    if (device_or_default(o.device) == Device::cuda) require_cuda();  // says why not, before any work
    if (o.backend == BackendKind::threads) return o.ranks;
    // Under mpirun the world is the job: -np decides, --ranks may only repeat it.
    const int np = mpi_world_size();
    SS_CHECK(o.ranks == 1 || o.ranks == np, "--ranks " << o.ranks << " but mpirun started " << np
                                                       << " processes; leave --ranks out with --backend mpi");
    return np;
}

namespace {

// The SP degrees that pass every check below for this run: those dividing T, with T a
// multiple of 2 SP for zig-zag ring, and dividing the heads each TP rank holds for
// Ulysses; 1 (no sequence split) always. What an SP error offers, so that it never
// suggests a degree a later check refuses.
std::vector<int> sp_choices(const TrainOptions& o, int T) {
    std::vector<int> fit;
    for (int sp : divisors(T)) {
        if (sp > 1 && zigzag_split(o.sp_mode, o.ring_split, sp) && T % (2 * sp) != 0) continue;
        if (sp > 1 && o.sp_mode == SpMode::ulysses && (o.model.H % o.tp != 0 || (o.model.H / o.tp) % sp != 0))
            continue;
        fit.push_back(sp);
    }
    return fit;
}

// What an SP error says to choose: the degrees of sp_choices and the rules they follow.
std::string sp_advice(const TrainOptions& o, int T) {
    const std::vector<int> fit = sp_choices(o, T);
    std::ostringstream s;
    s << "SP values that fit T=" << T;
    if (o.sp_mode == SpMode::ulysses) s << " and Ulysses's whole heads per rank (H/TP = " << o.model.H << "/" << o.tp << ")";
    if (zigzag_split(o.sp_mode, o.ring_split, 2)) s << " and zig-zag's 2 x SP chunks";
    if (fit.size() <= 1)
        s << ": none above 1; change --seq";
    else
        s << ": {" << join_ints(fit) << "}";
    if (o.sp_mode == SpMode::ulysses || zigzag_split(o.sp_mode, o.ring_split, 2))
        s << (o.sp_mode == SpMode::ulysses ? "; --sp-mode ring --ring-split contiguous" : "; --ring-split contiguous")
          << " takes any SP dividing T";
    return s.str();
}

}  // namespace

// Tensor and sequence parallelism.
void check_tp_sp(const TrainOptions& o, int T) {
    SS_CHECK(o.tp >= 1, "--tp must be at least 1 (got " << o.tp << ")");
    SS_CHECK(o.sp >= 1, "--sp must be at least 1 (got " << o.sp << ")");
    if (o.sequence_parallel) {
        SS_CHECK(o.tp > 1, "--sequence-parallel splits the sequence over the tp ranks; it needs --tp 2 or more "
                           "(for a sequence axis of its own use --sp N --sp-mode ulysses)");
        SS_CHECK(o.sp == 1, "--sequence-parallel (Megatron, on the tp axis) and --sp " << o.sp
                                << (o.sp_mode == SpMode::ring ? " (ring attention)" : " (Ulysses)")
                                << " cannot be combined here; choose one");
        if (T % o.tp != 0) {  // offer the TP degrees that Megatron-SP's other rules accept too
            std::vector<int> fit;
            for (int tp : divisors(T))
                if (tp >= 2 && o.model.H % tp == 0) fit.push_back(tp);
            SS_FAIL("TP=" << o.tp << " with --sequence-parallel does not divide the sequence length T=" << T
                          << " (each tp rank keeps T/TP tokens between the blocks); "
                          << (fit.empty() ? "no TP of 2 or more divides both T and the H=" + std::to_string(o.model.H) +
                                                " heads: change --seq, or drop --sequence-parallel"
                                          : "choose --tp in {" + join_ints(fit) + "}, the degrees dividing T and H=" +
                                                std::to_string(o.model.H)));
        }
    }
    if (o.sp > 1) {
        SS_CHECK(T % o.sp == 0, "SP=" << o.sp << " does not divide the sequence length T=" << T << "; "
                                      << sp_advice(o, T));
        SS_CHECK(!zigzag_split(o.sp_mode, o.ring_split, o.sp) || T % (2 * o.sp) == 0,
                 "--ring-split zigzag cuts the sequence into 2 x SP = " << 2 * o.sp << " chunks, which does not divide T="
                     << T << "; " << sp_advice(o, T));
        check_sequence_split(o.sp_mode, o.ring_split, o.sp, T);  // the planner's form of the two checks above
        SS_CHECK(o.sp_mode == SpMode::ring || (o.model.H % o.tp == 0 && (o.model.H / o.tp) % o.sp == 0),
                 "Ulysses SP=" << o.sp << " must divide the heads each TP rank holds, H/TP = " << o.model.H << "/"
                               << o.tp << "; " << sp_advice(o, T));
    }
    if (o.tp > 1) check_divides("TP", o.tp, "n_head", o.model.H);  // V needs no check: wte is padded (padded_vocab)
}

// Pipeline parallelism: fills the split and the bubble.
void check_pipeline(const TrainOptions& o, RunShape& s) {
    SS_CHECK(o.pp >= 1, "--pp must be at least 1 (got " << o.pp << ")");
    SS_CHECK(o.pp_virtual >= 1, "--pp-virtual must be at least 1 (got " << o.pp_virtual << ")");
    SS_CHECK(o.pp_virtual == 1 || o.schedule == Schedule::interleaved,
             "--pp-virtual " << o.pp_virtual << " gives each pipeline rank several model chunks, which only "
                             << "--schedule interleaved runs; add --schedule interleaved or drop --pp-virtual");
    SS_CHECK(o.schedule != Schedule::interleaved || (o.pp > 1 && o.pp_virtual > 1),
             "--schedule interleaved needs --pp 2 or more and --pp-virtual 2 or more (model chunks per rank)");
    const long long chunks = 1LL * o.pp * o.pp_virtual;  // in 64 bits: two large ints would wrap
    SS_CHECK(o.schedule != Schedule::interleaved || o.model.L >= 4,
             "--schedule interleaved needs --pp 2 or more with --pp-virtual 2 or more, so at least 4 blocks; the model "
             "has L=" << o.model.L << ": use --schedule 1f1b, or more --layers");
    std::vector<int> fit;  // interleaved: the v >= 2 that cut L into --pp x v equal chunks
    if (o.schedule == Schedule::interleaved && o.model.L % o.pp == 0)
        for (int v : divisors(o.model.L / o.pp))
            if (v >= 2) fit.push_back(v);
    const std::string choose_v = fit.empty() ? "no --pp-virtual of 2 or more does at --pp " + std::to_string(o.pp)
                                             : "choose --pp-virtual in {" + join_ints(fit) + "}";
    SS_CHECK(chunks <= o.model.L, "pipeline of " << chunks << " stages (--pp x --pp-virtual) but the model has only L="
                                      << o.model.L << " blocks; every stage needs at least one block: choose --pp "
                                      << "and --pp-virtual with --pp x --pp-virtual <= " << o.model.L
                                      << (o.schedule == Schedule::interleaved ? " (interleaving: " + choose_v + ")" : ""));
    SS_CHECK(o.schedule != Schedule::interleaved || !o.pp_split.empty() || o.model.L % chunks == 0,
             "--schedule interleaved cuts the L=" << o.model.L << " blocks into --pp x --pp-virtual = " << chunks
                 << " equal chunks, which does not divide them (interleaving needs equal chunks); " << choose_v
                 << ", or give the " << chunks << " chunks' block counts with --pp-split");
    s.pp_split = pipeline_split(o.model.L, int(chunks), o.pp_split);
    s.bubble = o.pp > 1 ? pipe_bubble_formula(pipe_spec(o, o.pp)) : 0.0;
    make_pipe_schedule(pipe_spec(o, o.pp));  // throws for a schedule it cannot make (too few micro-batches)
}

// Where the ranks are, for hpZ's and qgZ's node checks (plan/zeropp.h).
NodeShape node_shape(const TrainOptions& o, const MeshShape& m) {
    return NodeShape{int(m.product()), m.tp, ranks_per_node(o)};
}

// ZeRO++ hpZ (parallel/zero3.cpp): a secondary partition over K ranks of the shard group.
void check_hpz(const TrainOptions& o, const MeshShape& m) {
    check_hpz_flag(o.zero, o.hpz, m.dp_shard, m.sp, node_shape(o, m));  // the planner's checks (plan/zeropp.h)
}

// ZeRO++'s quantized collectives (parallel/zeropp.h): the one set of checks (plan/zeropp.h).
void check_zeropp(const TrainOptions& o, const MeshShape& m) {
    check_zeropp_flags(o.zero, o.qwz, o.qgz, m.dp_shard * m.sp, qgz_node_size(o, m), o.qgz_bits, o.quant_block,
                       node_shape(o, m));
}

// Data parallelism, ZeRO and the replicas' sync (local SGD, DiLoCo).
void check_dp(const TrainOptions& o, int dp_rep) {

    SS_CHECK(o.zero >= 0 && o.zero <= 3, "--zero " << o.zero << " does not exist; choose 0 (DDP), 1, 2 or 3");
    check_replica_sync(o.replica_sync_every, o.replica_outer, dp_rep);  // the planner's checks (plan/plan.h)
    // A non-finite outer rate or a momentum of 1 or more makes theta diverge (the momentum never decays).
    SS_CHECK(std::isfinite(o.outer_lr) && o.outer_lr > 0.0f,
             "--outer-lr must be a finite number above 0 (got " << o.outer_lr << "); DiLoCo's is 0.7, and 1 with "
                                                                << "--outer-momentum 0 is the plain average");
    SS_CHECK(std::isfinite(o.outer_momentum) && o.outer_momentum >= 0.0f && o.outer_momentum < 1.0f,
             "--outer-momentum must lie in [0, 1) (got " << o.outer_momentum << "); DiLoCo's is 0.9");
    SS_CHECK(o.bucket_mb >= 0, "--bucket-mb must not be negative (got " << o.bucket_mb << ")");
    SS_CHECK(o.prefetch >= 0, "--prefetch must not be negative (got " << o.prefetch << "); 0 gathers each unit "
                                                                        << "when it is needed");
}

// Emulated links: the flags' values and how they combine (comm/links.h says what each means).
// --gpus-per-node alone emulates nothing: it says where the nodes are (ranks_per_node), on
// any backend.
bool check_links(const TrainOptions& o, int world) {
    const bool any = !o.link.empty() || !o.link_intra.empty() || !o.link_inter.empty() || !o.emulate.empty();
    if (!any) {
        SS_CHECK(o.gpus_per_node >= 0, "--gpus-per-node " << o.gpus_per_node << ": give a number of ranks >= 1");
        return false;
    }
    SS_CHECK(o.backend == BackendKind::threads,
             "--link, --link-intra, --link-inter and --emulate emulate links on the threads backend; --backend "
                 << backend_name(o.backend) << " moves bytes over real links: leave the link flags out");
    make_emulated_links(o.link, o.link_intra, o.link_inter, o.gpus_per_node, o.emulate, world, 1.0);  // throws
    return true;
}

// Checkpoints and the other files the run reads and writes.
void check_files(const TrainOptions& o) {
    SS_CHECK(o.keep_last >= 0, "--keep-last must not be negative (got " << o.keep_last
                                                                       << "); 0 keeps every checkpoint");
    SS_CHECK(o.save_every >= 0, "--save-every must not be negative (got " << o.save_every << ")");
    SS_CHECK(o.save_every == 0 || !o.checkpoint_dir.empty(),
             "--save-every " << o.save_every << " needs --checkpoint-dir DIR: where to write the checkpoints");
    SS_CHECK(o.checkpoint_dir.empty() || o.save_every > 0,
             "--checkpoint-dir " << o.checkpoint_dir << " without --save-every K would save nothing: add "
                                 << "--save-every K (a checkpoint every K steps), or leave --checkpoint-dir out");
    // Local SGD and DiLoCo save at syncs only: there the replicas agree on the parameters
    // (and the outer state), and each writes its own Adam moments (rank_state.cpp).
    SS_CHECK(o.save_every == 0 || o.replica_sync_every == 1 || o.save_every % o.replica_sync_every == 0,
             "--save-every " << o.save_every << " with --replica-sync-every " << o.replica_sync_every
                             << ": between syncs the replicas hold different parameters and a checkpoint keeps "
                             << "one copy of them; save at the syncs, with --save-every a multiple of "
                             << o.replica_sync_every);
    SS_CHECK(o.init.empty() || o.resume.empty(),
             "--init and --resume both say where the parameters start; give one of them");
    // Every output can be written and none overwrites another or an input: found now, not after the last step.
    check_run_files(o);
}

}  // namespace

int ranks_per_node(const TrainOptions& o) {
    if (o.gpus_per_node > 0) return o.gpus_per_node;
    for (const ClusterPreset& c : cluster_presets())
        if (!o.emulate.empty() && c.name == o.emulate) return c.gpus_per_node;
    return 0;
}

int qgz_node_size(const TrainOptions& o, const MeshShape& m) {
    // the planner's rule is the engine's (plan/zeropp.h)
    return qgz_node_size(o.hpz, ranks_per_node(o), m.tp, m.dp_shard * m.sp);
}

bool overlap_runs(const TrainOptions& o) { return o.overlap && o.backend != BackendKind::nccl; }

const char* overlap_off_reason(const TrainOptions& o) {
    if (!o.overlap || overlap_runs(o)) return "";
    return "nccl runs each started call at once, Backend::start's default: nothing would hide under compute";
}

EmulatedLinks resolve_links(const TrainOptions& o, int world) {
    if (!check_links(o, world)) return {};
    const double gflops = o.emulate.empty() ? 0.0 : cpu::measure_cpu_matmul_gflops();
    return make_emulated_links(o.link, o.link_intra, o.link_inter, o.gpus_per_node, o.emulate, world, gflops);
}

RunShape check_train_options(const TrainOptions& o) {
    RunShape s;
    s.T = o.T > 0 ? o.T : o.model.maxT;
    check_step(o, s.T);
    s.world = check_ranks(o);
    s.mpi = o.backend != BackendKind::threads;
    check_tp_sp(o, s.T);
    check_pipeline(o, s);
    s.mesh = fill_dp(s.world, MeshShape{o.pp, o.dp_rep, o.dp_shard, o.sp, o.tp});
    ProcessMesh mesh(s.world, s.mesh);  // throws a clear error for a bad layout
    check_dp(o, s.mesh.dp_rep);
    check_hpz(o, s.mesh);
    check_zeropp(o, s.mesh);
    s.emulated_links = check_links(o, s.world);
    s.gbs = int64_t(o.mbs) * o.ga * s.mesh.dp();
    check_files(o);
    return s;
}

}  // namespace ss
