// train.cpp — the training loop (train.h): check the options once
// (options.h), read the data and any checkpoint to resume from, then run every
// rank: build its part of the model, and step.
#include "train/train.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <ostream>

#include "comm/launch_env.h"
#include "comm/mpi/mpi_backend.h"
#include "comm/nccl/nccl_backend.h"
#include "comm/threads/threads_backend.h"
#include "comm/trace/trace.h"
#include "core/atomic_file.h"
#include "core/check.h"
#include "core/device.h"
#include "kernels/cpu/blas.h"
#include "kernels/dispatch.h"
#include "kernels/profile.h"
#include "mesh/process_mesh.h"
#include "model/checkpoint.h"
#include "model/finite.h"
#include "model/gpt2.h"
#include "model/sequence_split.h"
#include "optim/adamw.h"
#include "parallel/pipeline.h"
#include "parallel/tensor_parallel.h"
#include "parallel/zero.h"
#include "train/checkpoint_lock.h"
#include "train/corpus.h"
#include "train/data.h"
#include "train/plan_for_run.h"
#include "train/run_files.h"
#include "train/sharded_checkpoint.h"

namespace ss {

namespace {

// What every rank of a run shares: read-only while the ranks run, except the
// report and rank_peak, which rank 0 alone fills (the threads backend's ranks
// are threads sharing this struct; a second writer would be a data race).
struct Shared {
    const TrainOptions* opts;
    const std::vector<uint16_t>* tokens;
    TrainReport* report;  // filled by rank 0
    std::ostream* out;    // printed to by rank 0 only
    std::vector<std::array<size_t, kMemCategories>> rank_peak;
    const Checkpoint* resume = nullptr;  // --resume: read once, before the ranks start
    int64_t skip_micro_batches = 0;      // --resume: micro-batches of this run's size already trained on
    const StopRequest* stop = nullptr;   // read by rank 0 before each step (train.h)
};

// Whether every replica of this run resumes with the Adam moments it saved: the
// checkpoint's replicas kept their own (local SGD) and this run's are as many and
// step apart too.
bool resumes_own_moments(const Checkpoint& ck, const TrainOptions& opts, const TrainReport& r) {
    return !ck.replica_m.empty() && int(ck.replica_m.size()) + 1 == r.dp_rep && opts.replica_sync_every > 1;
}

// One rank's whole run: build the model, then step.
void rank_main(Comm& comm, Shared& sh) {
    const TrainOptions& opts = *sh.opts;
    TrainReport& r = *sh.report;
    const bool rank0 = comm.rank() == 0;
    const int B = opts.mbs, T = r.T;
    cpu::set_blas_threads(opts.blas_threads);
    const Device device = device_or_default(opts.device);
    // Threads: rank r on GPU r mod GPUs, so with one GPU every rank shares it (each with its own
    // stream). nccl: one process per GPU, its local rank's (on several nodes rank mod GPUs is not).
    const int gpu = device != Device::cuda ? 0 : opts.backend == BackendKind::nccl ? nccl_local_gpu() : comm.rank() % cuda_device_count();
    set_current_device(device, gpu);
    kern::set_bf16_matmuls(device == Device::cuda && opts.dtype == DType::bf16);  // mixed precision on the GPU
    kern::set_profiling(opts.profile);  // bench --profile: each kern:: call timed on this rank's thread

    ProcessMesh mesh(comm.world_size(), MeshShape{r.pp, r.dp_rep, r.dp_shard, r.sp, r.tp});
    Mpu mpu = mesh.mpu(comm.rank());
    DataLoader loader(*sh.tokens, B, T, mpu.get_data_parallel_rank(), mpu.get_data_parallel_world_size());

    Ledger ledger;
    Tracer* tracer = comm.tracer();
    if (tracer) tracer->attach_ledger(ledger);
    ZeroConfig zc;
    zc.stage = opts.zero;
    zc.bucketed = opts.bucket_mb > 0;
    zc.bucket_mb = opts.bucket_mb;
    zc.replica_sync_every = opts.replica_sync_every;
    zc.replica_outer = opts.replica_outer;
    zc.outer = OuterParams{opts.outer_lr, opts.outer_momentum};
    zc.overlap = overlap_runs(opts);  // nccl: off (options.h)
    zc.prefetch = opts.prefetch;
    zc.hpz = opts.hpz;
    zc.qwz = opts.qwz;
    zc.qgz = opts.qgz;
    zc.qgz_node = qgz_node_size(opts, MeshShape{r.pp, r.dp_rep, r.dp_shard, r.sp, r.tp});
    zc.qgz_bits = opts.qgz_bits;
    zc.quant_block = opts.quant_block;
    // The model-parallel operators book their collectives' buffers in this rank's Ledger (Mem::comm).
    TensorParallelComm tp(comm, mpu.get_tensor_model_parallel_group(), ledger, opts.sequence_parallel);
    UlyssesComm ulysses(comm, mpu.get_sequence_parallel_group(), ledger);
    RingAttention ring(comm, mpu.get_sequence_parallel_group(), opts.ring_split, ledger, overlap_runs(opts));
    SequenceParallel* sp = opts.sp_mode == SpMode::ring ? static_cast<SequenceParallel*>(&ring) : &ulysses;
    // sp ranks hold the same parameters and see different tokens: gradients are
    // averaged over dp x sp and ZeRO shards over dp_shard x sp.
    // (With sp = 1 these are the plain dp and dp_shard groups, and the trace says so.)
    const Group grad_group = r.sp > 1 ? mpu.get_sequence_data_parallel_group() : mpu.get_data_parallel_group();
    const Group shard_group = r.sp > 1 ? mpu.dp_shard_sp_group() : mpu.dp_shard_group();
    // Every rank is one pipeline rank (p = 1: the whole model, and the schedule is
    // forward then backward of each micro-batch in turn, as plain training).
    auto make_chunk = [&](const ModelPart& part) {
        return std::make_unique<ZeroModel>(opts.model, opts.dtype, zc, comm, grad_group, shard_group,
                                           mpu.dp_rep_group(), ledger, adamw_params(opts), r.tp > 1 ? &tp : nullptr,
                                           r.sp > 1 ? sp : nullptr, part, opts.recompute);
    };
    const Group pp_group = mpu.get_pipeline_model_parallel_group();
    const int Tl = T / r.sp;  // this rank's tokens of each sequence (sp)
    PipelineRank pipe(comm, opts.model, pipe_spec(opts, r.pp), r.pp_split, pp_group, embedding_group(pp_group),
                      opts.sequence_parallel ? Tl / r.tp : Tl, make_chunk);
    pipe.set_overlap(overlap_runs(opts));
    if (opts.init.empty())
        pipe.init(opts.seed);  // counter-based: every rank computes the same values for what it holds
    else
        pipe.load(opts.init);
    if (sh.resume) {  // the checkpoint's whole state; each rank takes its part
        const Checkpoint& ck = *sh.resume;
        // Local SGD: each replica continues with the Adam moments it saved, where the
        // checkpoint has them for this run's replicas; else every one takes replica 0's.
        const int rep = resumes_own_moments(ck, opts, r) ? mpu.dp_rep_rank() : 0;
        const std::vector<float>& m = rep == 0 ? ck.m : ck.replica_m[size_t(rep - 1)];
        const std::vector<float>& v = rep == 0 ? ck.v : ck.replica_v[size_t(rep - 1)];
        pipe.load_state(ck.master, m, v, ck.adam_t, ck.step, ck.outer_anchor, ck.outer_momentum);
        for (int64_t b = 0; b < sh.skip_micro_batches; ++b) loader.next_batch();  // the data position
    }

    // This rank's tokens of each sequence (model/sequence_split.h): [sp_rank * Tl, (sp_rank + 1) * Tl)
    // (Ulysses, ring contiguous), or zig-zag's two chunks sp_rank and 2 SP - 1 - sp_rank (ring).
    const std::vector<SeqPiece> pieces =
        sequence_pieces(sp->zigzag(), mpu.get_sequence_parallel_rank(), r.sp, T);
    std::vector<std::vector<int>> in(size_t(opts.ga), std::vector<int>(size_t(B) * Tl)), tg = in;
    auto my_tokens = [&](const std::vector<int32_t>& all, std::vector<int>& mine) {
        for (int b = 0; b < B; ++b)
            for (const SeqPiece& p : pieces)
                std::copy(all.begin() + size_t(b) * T + p.pos, all.begin() + size_t(b) * T + p.pos + p.len,
                          mine.begin() + size_t(b) * Tl + p.row);
    };
    const float dloss = 1.0f / float(B * Tl * opts.ga);  // mean over this rank's tokens of the step
    // What a checkpoint's manifest says of this run (rank 0 writes it).
    auto run_description = [&](int step) {
        nlohmann::json j;
        const GPT2Config& m = opts.model;
        j["model"] = {{"name", m.name}, {"L", m.L}, {"C", m.C}, {"H", m.H}, {"V", m.V}, {"maxT", m.maxT}};
        // How the shards' wte slices were padded (Vp/TP rows each), so that a run with another
        // --vocab-divisible-by or TP can place them (sharded_checkpoint.cpp). Not the model's shape.
        j["vocab_divisible_by"] = m.vocab_divisible_by;
        j["dtype"] = dtype_name(opts.dtype);
        j["adam_t"] = pipe.chunks().front()->optimizer().t();
        // Randomness: parameters start from a counter-based stream of the seed (model/params.h)
        // and nothing draws random numbers during training (no dropout), so the seed is all of it.
        j["rng"] = {{"seed", opts.seed}, {"kind", "counter-based init only; no dropout"}};
        j["layout"] = {{"world", r.world}, {"pp", r.pp}, {"pp_virtual", opts.pp_virtual}, {"pp_split", r.pp_split},
                       {"schedule", schedule_name(opts.schedule)}, {"dp_rep", r.dp_rep}, {"dp_shard", r.dp_shard}, {"sp", r.sp},
                       {"sp_mode", sp_mode_name(opts.sp_mode)},
                       {"ring_split", ring_split_name(opts.ring_split)},  // not state: any split resumes
                       {"tp", r.tp}, {"sequence_parallel", opts.sequence_parallel},
                       {"zero", opts.zero}};
        // How the replicas sync, and how many saved Adam moments of their own (sharded_checkpoint.h).
        const bool apart = r.dp_rep > 1 && opts.replica_sync_every > 1;
        j["replicas"] = {{"dp_rep", r.dp_rep}, {"sync_every", opts.replica_sync_every},
                         {"outer", replica_outer_name(opts.replica_outer)}, {"own_moments", apart ? r.dp_rep : 0}};
        // ZeRO++: none of it is state (hpZ's secondary partition is rebuilt every step, qwZ and
        // qgZ quantize what is sent), so any layout resumes; recorded for what the steps were.
        j["zeropp"] = {{"hpz", opts.hpz}, {"qwz", opts.qwz}, {"qgz", opts.qgz}, {"quant_block", opts.quant_block},
                       {"qgz_bits", opts.qgz_bits}};
        if (opts.replica_outer == ReplicaOuter::nesterov)
            j["replicas"]["outer_params"] = {{"lr", opts.outer_lr}, {"momentum", opts.outer_momentum}};
        const int64_t micro_done = sh.skip_micro_batches + int64_t(step - r.first_step + 1) * opts.ga;
        j["data"] = {{"source", opts.data.empty() ? "builtin" : opts.data}, {"T", T}, {"ga", opts.ga},
                     {"global_micro_batch", int64_t(r.dp) * B}, {"sequences_done", micro_done * r.dp * B}};
        return j;
    };
    for (int step = r.first_step; step <= opts.steps; ++step) {
        // A stop request (train.h): rank 0 alone reads it, so no two ranks stop at different
        // steps; the others stop at their next wait for rank 0, as for any failed rank.
        if (rank0 && sh.stop && sh.stop->requested.load())
            SS_FAIL("stopped by " << sh.stop->by << " before step " << step << " of " << opts.steps
                                  << "; no trace, --json or --save file is written");
        inject_fault(opts.fault, comm, step, opts.steps);  // --inject-fault: arms it on its rank at its step
        auto t0 = std::chrono::steady_clock::now();
        const kern::KernelTimes kernels0 = kern::profile_totals();
        comm.take_times();  // this step's communication time starts now
        pipe.zero_grad();
        for (int micro = 0; micro < opts.ga; ++micro) {  // every stage reads the same micro-batches
            loader.next_batch();
            my_tokens(loader.inputs(), in[size_t(micro)]);
            my_tokens(loader.targets(), tg[size_t(micro)]);
        }
        const float loss_sum = pipe.run(in, tg, B, Tl, dloss, step);  // forwards and backwards, as scheduled
        // A nan or inf stops the run here, before the step spreads it into the weights and before
        // anything is saved. Each rank looks at its own loss (the last stage has one) and the
        // gradients it holds; the rank that throws ends the run (the others stop at their next
        // collective, as for any failed rank) and its message is the one reported.
        SS_CHECK(std::isfinite(loss_sum), "step " << step << ": the loss on rank " << comm.rank() << " is " << loss_sum
                                          << " (not finite); the run stops and saves nothing. Lower --lr, check "
                                          << "--init and --data, or resume from an earlier checkpoint");
        if (const NonFinite bad = pipe.find_nonfinite_grad())
            SS_FAIL("step " << step << ": a gradient on rank " << comm.rank() << " is not finite: " << bad.str()
                            << "; the run stops and saves nothing. Lower --lr, check --init and --data, or "
                            << "resume from an earlier checkpoint");
        if (step == 1 && !opts.dump_grads.empty()) {
            std::vector<float> g = pipe.full_grads();  // every rank takes part
            if (rank0) {
                ParamLayout lay = make_param_layout(opts.model);
                write_safetensors(opts.dump_grads, flat_to_safetensors(lay, g.data(), opts.dtype));
            }
        }
        // The step's loss is the mean over all dp ranks' tokens (the last stage has it).
        // Reduced before the optimizer step, so that ZeRO-1/2's parameter gathers, started
        // in the step, can travel under the next forward (zero1.cpp).
        float loss = loss_sum / float(opts.ga);
        if (r.pp > 1)
            comm.all_reduce(&loss, 1, pp_group, ReduceOp::sum, Label{Payload::scalar, -1, Phase::step, -1, step});
        comm.all_reduce(&loss, 1, grad_group, ReduceOp::avg,
                        Label{Payload::scalar, -1, Phase::step, -1, step});
        {
            ScopedSpan span(tracer, "optimizer", "step", {{"step", step}});
            pipe.step();
        }
        if (opts.save_every > 0 && step % opts.save_every == 0) {
            save_checkpoint(comm, pipe, opts.checkpoint_dir, step, run_description(step));
            if (rank0) prune_checkpoints(opts.checkpoint_dir, step, opts.keep_last);  // --keep-last, after latest moved
        }
        auto t1 = std::chrono::steady_clock::now();
        const CommTimes ct = comm.take_times();
        const kern::KernelTimes kernels = kern::profile_totals() - kernels0;

        if (rank0) {
            StepStats s;
            s.step = step;
            s.loss = loss;
            s.comm_ms = ct.comm_s * 1e3;
            s.exposed_comm_ms = ct.exposed_s * 1e3;
            s.kernels = kernels;
            s.ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
            s.tokens_per_s = double(r.gbs) * T / (s.ms / 1000.0);
            r.steps.push_back(s);
            if (sh.out && !opts.quiet) {
                char buf[200];
                std::snprintf(buf, sizeof buf, "step %4d/%d | loss %.4f | %8.1f ms | %10.0f tok/s%s\n", step,
                              opts.steps, s.loss, s.ms, s.tokens_per_s,
                              r.links.on ? " | emulated links" : "");
                *sh.out << buf << std::flush;
            }
        }
    }

    if (!opts.save.empty()) {  // collective (ZeRO-3 gathers, stages are summed); rank 0 writes
        std::vector<float> whole = pipe.whole_params();
        if (rank0) {
            const ParamLayout layout = make_param_layout(opts.model);
            // The last step's update can still overflow (an lr that is finite but huge):
            // an existing --save file is never replaced by a non-finite model.
            if (const NonFinite bad = find_nonfinite(layout, whole.data()))
                SS_FAIL("after step " << opts.steps << " a parameter is not finite: " << bad.str() << "; "
                                      << opts.save << " was not written. Lower --lr");
            save_params(opts.model, layout, whole.data(), opts.dtype, opts.save);
        }
    }
    // Every rank's peaks, for the report (a world all_gather, so it works across processes too).
    std::vector<int32_t> mine(2 * kMemCategories), all(size_t(2 * kMemCategories * comm.world_size()));
    for (int c = 0; c < kMemCategories; ++c) {
        mine[2 * c] = int32_t(ledger.peak(Mem(c)) & 0x7fffffff);
        mine[2 * c + 1] = int32_t(ledger.peak(Mem(c)) >> 31);
    }
    comm.all_gather(mine.data(), all.data(), mine.size(), DType::i32, comm.world_group(), Label{});
    if (rank0) {  // rank 0 fills the report; the threads backend's ranks share one (ThreadSanitizer)
        for (int rk = 0; rk < comm.world_size(); ++rk)
            for (int c = 0; c < kMemCategories; ++c) {
                const int32_t* v = &all[size_t(rk * 2 * kMemCategories + 2 * c)];
                sh.rank_peak[size_t(rk)][c] = size_t(uint32_t(v[0])) | (size_t(uint32_t(v[1])) << 31);
            }
        for (int c = 0; c < kMemCategories; ++c) {
            r.live[c] = ledger.live(Mem(c));
            r.peak[c] = ledger.peak(Mem(c));
        }
        r.peak_total = ledger.peak_total();
    }
    if (tracer) tracer->detach_ledger(ledger);
}

// --resume: the checkpoint, read once before the ranks start, and how many of
// this run's micro-batches it has already trained on (the data position).
int64_t read_resume_point(const TrainOptions& opts, TrainReport& r, Checkpoint& ck, std::ostream* out) {
    ck = read_checkpoint(find_checkpoint(opts.resume), opts.model);
    int saved_T = 0;
    int64_t seqs = 0;
    try {
        saved_T = ck.manifest.at("data").at("T").get<int>();
        seqs = ck.manifest.at("data").at("sequences_done").get<int64_t>();
    } catch (const nlohmann::json::exception& e) {
        SS_FAIL(ck.dir << "/manifest.json has no data position (" << e.what() << ")");
    }
    SS_CHECK(saved_T == r.T, "--resume: the checkpoint trained on sequences of T=" << saved_T << " tokens; give --seq "
                                                                             << saved_T);
    const int64_t gmb = int64_t(r.dp) * opts.mbs;  // sequences of one micro-batch over the dp ranks
    SS_CHECK(seqs % gmb == 0, "--resume: the checkpoint has seen " << seqs << " sequences, not a whole number of "
                                  << "this run's micro-batches of MBS x DP = " << gmb
                                  << "; choose MBS and DP so that MBS x DP divides " << seqs);
    SS_CHECK(ck.step < opts.steps, "--resume: the checkpoint is at step " << ck.step << " and --steps is "
                                                                       << opts.steps << ": nothing to do; raise --steps");
    r.first_step = ck.step + 1;
    if (out) *out << "resumed from " << ck.dir << " (step " << ck.step << "); continuing at step " << r.first_step << "\n";
    // What of the replicas' state this layout cannot continue exactly (sharded_checkpoint.h).
    const bool diloco = opts.replica_outer == ReplicaOuter::nesterov;
    if (out && !ck.replica_m.empty() && !resumes_own_moments(ck, opts, r))
        *out << "note: the checkpoint's " << ck.replica_m.size() + 1 << " replicas each saved their own Adam moments "
             << "(local SGD); this run has " << r.dp_rep << " replica" << (r.dp_rep == 1 ? "" : "s")
             << (r.dp_rep > 1 && opts.replica_sync_every == 1 ? " that all-reduce gradients" : "")
             << ", so every rank starts from replica 0's moments and the run is not the saved one's continuation "
             << "exactly; resume with --dp-rep " << ck.replica_m.size() + 1 << " and --replica-sync-every > 1 for that\n";
    if (out && !ck.outer_anchor.empty() && !diloco)
        *out << "note: the checkpoint holds DiLoCo's outer state (the parameters at the last sync and the outer "
             << "momentum); this run does not take outer steps, so it starts from the parameters alone; add "
             << "--replica-outer nesterov to continue DiLoCo\n";
    if (out && ck.outer_anchor.empty() && diloco)
        *out << "note: the checkpoint holds no DiLoCo outer state; the outer step starts from the resumed parameters "
             << "with momentum 0, as a new DiLoCo run would\n";
    // ZeRO++ keeps no state of its own: a checkpoint resumes with or without it. Quantized
    // steps (qwZ, qgZ) are not the unquantized run's steps, so say where that changes.
    const nlohmann::json zpp = ck.manifest.value("zeropp", nlohmann::json::object());
    const bool was_quantized = zpp.value("qwz", false) || zpp.value("qgz", false);
    if (out && was_quantized != (opts.qwz || opts.qgz))
        *out << "note: the checkpoint's steps " << (was_quantized ? "were" : "were not")
             << " quantized (ZeRO++ qwZ/qgZ) and this run's " << (was_quantized ? "are not" : "are")
             << "; ZeRO++ keeps no state, so the state resumes exactly and only the steps from here differ\n";
    return seqs / gmb;
}

}  // namespace

TrainReport train(const TrainOptions& opts, std::ostream* out, const StopRequest* stop) {
    const RunShape shape = check_train_options(opts);  // every check, once
    TrainReport r = TrainReport::start(opts, shape);
    r.links = resolve_links(opts, shape.world);  // --emulate measures this CPU first
    const bool mpi = shape.mpi;  // one process per rank, under mpirun
    const bool writer = !mpi || mpi_world_rank() == 0;  // who prints and writes the files
    if (!writer) out = nullptr;
    // One writer per checkpoint directory, held until train() returns.
    std::optional<CheckpointDirLock> checkpoint_lock;
    if (opts.save_every > 0 && writer) checkpoint_lock.emplace(opts.checkpoint_dir);

    // Data first: a bad file should fail before any big allocation.
    std::vector<uint16_t> tokens = opts.data.empty() ? builtin_corpus_tokens() : read_token_file(opts.data);
    check_tokens(tokens, opts.model.V, opts.data.empty() ? "the built-in corpus" : opts.data);
    const int64_t need = int64_t(r.dp) * opts.mbs * r.T + 1;
    SS_CHECK(int64_t(tokens.size()) >= need,
             (opts.data.empty() ? std::string("the built-in corpus") : opts.data)
                 << " has " << tokens.size() << " tokens but one step of DP " << r.dp << " x MBS " << opts.mbs
                 << " x T " << r.T << " needs " << need << "; use a smaller --mbs, --seq or --ranks, or more data");
    if (out) print_run_header(*out, r);
    if (out)  // before the model's allocations: a run that cannot fit is said to, not only killed
        *out << memory_warning(opts, mpi ? 1 : shape.world, available_ram_bytes());

    Checkpoint ck;
    Shared sh{&opts, &tokens, &r, out, {}};
    sh.rank_peak.resize(size_t(r.world));
    sh.stop = stop;
    if (!opts.resume.empty()) {
        sh.skip_micro_batches = read_resume_point(opts, r, ck, out);
        sh.resume = &ck;
    }
    CommOptions copts;
    copts.timeout_seconds = opts.comm_timeout;
    if (r.links.on)
        copts.link_seconds = [links = r.links](const char* op, uint64_t bytes, const std::vector<int>& ranks) {
            return links.seconds(op, bytes, ranks);
        };
    std::vector<std::unique_ptr<Tracer>> tracers;
    if (!opts.trace.empty()) {
        tracers = make_tracers(r.world);
        for (auto& t : tracers) copts.tracers.push_back(t.get());
    }
    auto run_rank = [&](Comm& comm) { rank_main(comm, sh); };
    if (mpi) {
        const ProcessMesh mesh(r.world, shape.mesh);
        std::vector<Group> groups = mesh_groups(mesh), emb = embedding_groups(mesh);
        groups.insert(groups.end(), emb.begin(), emb.end());
        if (opts.hpz > 0)  // hpZ's groups of K inside every shard group (zero.h, hpz_group)
            for (const Group& g : mesh.groups(shape.mesh.sp > 1 ? GroupKind::dp_shard_sp : GroupKind::dp_shard))
                for (int i = 0; i < g.size(); i += opts.hpz) groups.push_back(hpz_group(g, g.ranks[size_t(i)], opts.hpz));
        const int qgz_k = qgz_node_size(opts, shape.mesh);
        if (opts.qgz && qgz_k < shape.mesh.dp_shard * shape.mesh.sp)  // qgZ's node and cross groups (zeropp.h)
            for (const Group& g : mesh.groups(shape.mesh.sp > 1 ? GroupKind::dp_shard_sp : GroupKind::dp_shard))
                for (int i = 0; i < g.size(); ++i) {
                    if (i % qgz_k == 0) groups.push_back(qgz_groups(g, g.ranks[size_t(i)], qgz_k).first);  // a node
                    if (i < qgz_k) groups.push_back(qgz_groups(g, g.ranks[size_t(i)], qgz_k).second);   // a local index
                }
        if (opts.backend == BackendKind::nccl)
            run_nccl(run_rank, copts, groups);
        else
            run_mpi(run_rank, copts, groups);
    } else {
        run_threads(r.world, run_rank, copts);
    }
    r.rank_peak = sh.rank_peak;

    if (out) {
        print_memory(*out, r);
        *out << r.gbs_line() << "\n";
    }
    if (!opts.trace.empty()) {
        const nlohmann::json other = trace_other_data(r);
        if (mpi)
            write_chrome_trace_mpi(opts.trace, *tracers[size_t(mpi_world_rank())], other, opts.comm_timeout);
        else
            write_chrome_trace(opts.trace, tracers, other);
        if (out) *out << "trace: " << opts.trace << " (open in Perfetto, or: shardscope trace summary " << opts.trace
                      << ")\n";
    }
    if (!opts.json.empty() && writer) write_json_file(opts.json, r.to_json());
    return r;
}

}  // namespace ss
