#include "train/train.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>
#include <ostream>

#include "core/check.h"
#include "core/device.h"
#include "kernels/cpu/blas.h"
#include "kernels/dispatch.h"
#include "model/checkpoint.h"
#include "model/finite.h"
#include "model/gpt2.h"
#include "optim/adamw.h"
#include "train/corpus.h"
#include "train/data.h"
#include "comm/mpi/mpi_backend.h"
#include "comm/nccl/nccl_backend.h"
#include "comm/threads/threads_backend.h"
#include "comm/trace/trace.h"
#include "mesh/process_mesh.h"
#include "parallel/tensor_parallel.h"
#include "train/plan_for_run.h"
#include "plan/report.h"
#include "parallel/pipeline.h"
#include "train/sharded_checkpoint.h"
#include "parallel/zero.h"
#include "core/atomic_file.h"
#include "comm/launch_env.h"
#include "train/checkpoint_lock.h"
#include "train/run_files.h"

namespace ss {

std::string TrainReport::gbs_line() const {
    char buf[256];
    std::snprintf(buf, sizeof buf, "GBS = MBS x GA x DP = %d x %d x %d = %lld sequences (x T %d = %lld tokens per step)",
                  opts.mbs, opts.ga, dp, (long long)gbs, T, (long long)(gbs * T));
    return buf;
}

std::string TrainReport::pipeline_line() const {
    if (pp <= 1) return "";
    std::string split;
    for (size_t i = 0; i < pp_split.size(); ++i) split += (i ? "," : "") + std::to_string(pp_split[i]);
    const int v = opts.pp_virtual, m = opts.ga;
    char buf[320];
    std::snprintf(buf, sizeof buf,
                  "pipeline: PP %d stages%s, schedule %s, blocks per stage %s; m = GA = %d micro-batch%s; "
                  "bubble (p-1)/%s = %d/%d = %.3f of the compute time",
                  pp, v > 1 ? (" x " + std::to_string(v) + " chunks").c_str() : "", opts.schedule.c_str(),
                  split.c_str(), m, m == 1 ? "" : "es", v > 1 ? "(v m)" : "m", pp - 1, v * m, bubble);
    return buf;
}

std::string TrainReport::replica_batch_line() const {
    if (dp_rep <= 1 || opts.replica_sync_every <= 1) return "";
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "local SGD: each of the %d replicas steps on MBS x GA x dp_shard = %d x %d x %d = %lld sequences, "
                  "parameters averaged every %d steps",
                  dp_rep, opts.mbs, opts.ga, dp_shard, (long long)(int64_t(opts.mbs) * opts.ga * dp_shard),
                  opts.replica_sync_every);
    return buf;
}

nlohmann::json TrainReport::to_json() const {
    using nlohmann::json;
    const GPT2Config& m = opts.model;
    json j;
    j["config"] = {{"model", m.name}, {"L", m.L},           {"C", m.C},         {"H", m.H},
                   {"V", m.V},        {"Vp", padded_vocab(m.V, tp, m.vocab_divisible_by)},
                   {"maxT", m.maxT},  {"T", T},           {"mbs", opts.mbs},
                   {"ga", opts.ga},   {"steps", opts.steps}, {"lr", opts.lr},   {"seed", opts.seed},
                   {"dtype", dtype_name(opts.dtype)},         {"data", opts.data.empty() ? "builtin" : opts.data}};
    j["num_params"] = num_params;
    j["ranks"] = {{"world", world},       {"backend", opts.backend},
                  {"device", device_name(device_or_default(opts.device))},
                  {"dp", dp}, {"dp_shard", dp_shard}, {"dp_rep", dp_rep},
                  {"tp", tp}, {"sp", sp}, {"pp", pp},
                  {"zero", opts.zero}, {"bucket_mb", opts.bucket_mb}, {"replica_sync_every", opts.replica_sync_every}};
    if (pp > 1)
        j["pipeline"] = {{"pp", pp},           {"schedule", opts.schedule}, {"pp_virtual", opts.pp_virtual},
                         {"split", pp_split},  {"micro_batches", opts.ga},  {"bubble", bubble},
                         {"recompute", opts.recompute}};
    else
        j["recompute"] = opts.recompute;
    j["gbs"] = {{"mbs", opts.mbs}, {"ga", opts.ga}, {"dp", dp}, {"gbs", gbs}, {"tokens_per_step", gbs * T},
                {"formula", "GBS = MBS x GA x DP"}, {"line", gbs_line()}};
    json st = json::array();
    for (const StepStats& s : steps)
        st.push_back({{"step", s.step}, {"loss", s.loss}, {"ms", s.ms}, {"tokens_per_s", s.tokens_per_s}});
    j["steps"] = st;
    json mem;
    for (int c = 0; c < kMemCategories; ++c)
        mem[mem_name(Mem(c))] = {{"live_bytes", live[c]}, {"peak_bytes", peak[c]}};
    mem["peak_total_bytes"] = peak_total;
    json per_rank = json::array();
    for (const auto& pk : rank_peak) {
        json one;
        for (int c = 0; c < kMemCategories; ++c) one[mem_name(Mem(c))] = pk[c];
        per_rank.push_back(one);
    }
    mem["peak_bytes_per_rank"] = per_rank;
    j["memory"] = mem;
    return j;
}

// 1234567 -> "1,234,567"
static std::string with_commas(size_t v) {
    std::string digits = std::to_string(v), out;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

void print_memory(std::ostream& out, const TrainReport& r) {
    char buf[200];
    std::snprintf(buf, sizeof buf, "memory of rank 0 (bytes)   %16s %16s %12s\n", "live at end", "peak", "peak MiB");
    out << buf;
    for (int c = 0; c < kMemCategories; ++c) {
        std::snprintf(buf, sizeof buf, "  %-24s %16s %16s %12.3f\n", mem_name(Mem(c)), with_commas(r.live[c]).c_str(),
                      with_commas(r.peak[c]).c_str(), r.peak[c] / 1048576.0);
        out << buf;
    }
    std::snprintf(buf, sizeof buf, "  %-24s %16s %16s %12.3f\n", "total (peak of the sum)", "",
                  with_commas(r.peak_total).c_str(), r.peak_total / 1048576.0);
    out << buf;
    if (r.pp > 1 && !r.rank_peak.empty()) {  // pipeline stages hold different layers and micro-batches
        out << "acts peak of each pipeline stage (rank, bytes):";
        const int per_stage = int(r.rank_peak.size()) / r.pp;  // the grid puts pp outermost
        for (int stage = 0; stage < r.pp; ++stage)
            out << (stage ? ", " : " ") << "stage " << stage << " (rank " << stage * per_stage
                << ") " << with_commas(r.rank_peak[size_t(stage * per_stage)][int(Mem::acts)]);
        out << "\n";
    }
}

static void check_options(const TrainOptions& o, int T) {
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
}

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
};

cpu::AdamWParams adamw_params(const TrainOptions& o) {
    cpu::AdamWParams hp;
    hp.lr = o.lr;
    hp.beta1 = o.beta1;
    hp.beta2 = o.beta2;
    hp.eps = o.eps;
    hp.weight_decay = o.weight_decay;
    return hp;
}

// The schedule a run asks for: p stages, m = GA micro-batches, v chunks.
PipeSpec pipe_spec(const TrainOptions& o, int pp) {
    PipeSpec spec;
    spec.kind = parse_schedule(o.schedule);
    spec.p = pp;
    spec.m = o.ga;
    spec.v = o.pp_virtual;
    return spec;
}

// The planner's prediction for the run that ran, for the trace's otherData, so
// a viewer can show it beside the measurement. The world is the one that ran
// (under mpirun --ranks keeps its default of 1). A run the planner cannot
// model (it is stricter than the engine, e.g. PP not dividing L with an uneven
// --pp-split) still keeps its trace: the prediction says why it is missing.
nlohmann::json prediction_for_trace(const TrainOptions& opts, int world) {
    TrainOptions ran = opts;
    ran.ranks = world;
    try {
        return plan_json(plan(plan_input_for(ran)));
    } catch (const Error& e) {
        return {{"unavailable", std::string("the planner cannot model this run: ") + e.what()}};
    }
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
    const int gpu = device != Device::cuda ? 0 : opts.backend == "nccl" ? nccl_local_gpu() : comm.rank() % cuda_device_count();
    set_current_device(device, gpu);
    kern::set_bf16_matmuls(device == Device::cuda && opts.dtype == DType::bf16);  // mixed precision on the GPU

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
    TensorParallelComm tp(comm, mpu.get_tensor_model_parallel_group(), opts.sequence_parallel);
    UlyssesComm ulysses(comm, mpu.get_sequence_parallel_group());
    RingAttention ring(comm, mpu.get_sequence_parallel_group());
    SequenceParallel* sp = opts.sp_mode == "ring" ? static_cast<SequenceParallel*>(&ring) : &ulysses;
    // sp ranks hold the same parameters and see different tokens: gradients are
    // averaged over dp x sp and ZeRO shards over dp_shard x sp.
    // (With sp = 1 these are the plain dp and dp_shard groups, and the trace says so.)
    const Group grad_group = r.sp > 1 ? mpu.get_sequence_data_parallel_group() : mpu.get_data_parallel_group();
    const Group shard_group = r.sp > 1 ? mpu.dp_shard_sp_group() : mpu.dp_shard_group();
    // Every rank is one pipeline rank (p = 1: the whole model, and the schedule is
    // forward then backward of each micro-batch in turn, as plain training).
    const Recompute recompute = parse_recompute(opts.recompute);
    auto make_chunk = [&](const ModelPart& part) {
        return std::make_unique<ZeroModel>(opts.model, opts.dtype, zc, comm, grad_group, shard_group,
                                           mpu.dp_rep_group(), ledger, adamw_params(opts), r.tp > 1 ? &tp : nullptr,
                                           r.sp > 1 ? sp : nullptr, part, recompute);
    };
    const Group pp_group = mpu.get_pipeline_model_parallel_group();
    const int Tl = T / r.sp;  // this rank's tokens of each sequence (sp)
    PipelineRank pipe(comm, opts.model, pipe_spec(opts, r.pp), r.pp_split, pp_group, embedding_group(pp_group),
                      opts.sequence_parallel ? Tl / r.tp : Tl, make_chunk);
    if (opts.init.empty())
        pipe.init(opts.seed);  // counter-based: every rank computes the same values for what it holds
    else
        pipe.load(opts.init);
    if (sh.resume) {  // the checkpoint's whole state; each rank takes its part
        const Checkpoint& ck = *sh.resume;
        pipe.load_state(ck.master, ck.m, ck.v, ck.adam_t, ck.step);
        for (int64_t b = 0; b < sh.skip_micro_batches; ++b) loader.next_batch();  // the data position
    }

    // Ulysses: this rank's tokens of each sequence are [sp_rank * Tl, (sp_rank + 1) * Tl).
    const int t0 = mpu.get_sequence_parallel_rank() * Tl;
    std::vector<std::vector<int>> in(size_t(opts.ga), std::vector<int>(size_t(B) * Tl)), tg = in;
    auto my_tokens = [&](const std::vector<int32_t>& all, std::vector<int>& mine) {
        for (int b = 0; b < B; ++b)
            std::copy(all.begin() + size_t(b) * T + t0, all.begin() + size_t(b) * T + t0 + Tl, mine.begin() + size_t(b) * Tl);
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
                       {"schedule", opts.schedule}, {"dp_rep", r.dp_rep}, {"dp_shard", r.dp_shard}, {"sp", r.sp},
                       {"sp_mode", opts.sp_mode}, {"tp", r.tp}, {"sequence_parallel", opts.sequence_parallel},
                       {"zero", opts.zero}};
        const int64_t micro_done = sh.skip_micro_batches + int64_t(step - r.first_step + 1) * opts.ga;
        j["data"] = {{"source", opts.data.empty() ? "builtin" : opts.data}, {"T", T}, {"ga", opts.ga},
                     {"global_micro_batch", int64_t(r.dp) * B}, {"sequences_done", micro_done * r.dp * B}};
        return j;
    };
    for (int step = r.first_step; step <= opts.steps; ++step) {
        inject_fault(opts.fault, comm, step, opts.steps);  // --inject-fault: arms it on its rank at its step
        auto t0 = std::chrono::steady_clock::now();
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
        {
            ScopedSpan span(tracer, "optimizer", "step", {{"step", step}});
            pipe.step();
        }
        if (opts.save_every > 0 && step % opts.save_every == 0) {
            save_checkpoint(comm, pipe, opts.checkpoint_dir, step, run_description(step));
            if (rank0) prune_checkpoints(opts.checkpoint_dir, step, opts.keep_last);  // --keep-last, after latest moved
        }
        // The step's loss is the mean over all dp ranks' tokens (the last stage has it).
        float loss = loss_sum / float(opts.ga);
        if (r.pp > 1)
            comm.all_reduce(&loss, 1, pp_group, ReduceOp::sum, Label{Payload::scalar, -1, Phase::step, -1, step});
        comm.all_reduce(&loss, 1, grad_group, ReduceOp::avg,
                        Label{Payload::scalar, -1, Phase::step, -1, step});
        auto t1 = std::chrono::steady_clock::now();

        if (rank0) {
            StepStats s;
            s.step = step;
            s.loss = loss;
            s.ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
            s.tokens_per_s = double(r.gbs) * T / (s.ms / 1000.0);
            r.steps.push_back(s);
            if (sh.out && !opts.quiet) {
                char buf[160];
                std::snprintf(buf, sizeof buf, "step %4d/%d | loss %.4f | %8.1f ms | %10.0f tok/s\n", step,
                              opts.steps, s.loss, s.ms, s.tokens_per_s);
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

}  // namespace

TrainReport train(const TrainOptions& opts, std::ostream* out) {
    TrainReport r;
    r.opts = opts;
    r.T = opts.T > 0 ? opts.T : opts.model.maxT;
    check_options(opts, r.T);
    SS_CHECK(opts.ranks >= 1, "--ranks must be at least 1 (got " << opts.ranks << ")");
    SS_CHECK(opts.backend == "threads" || opts.backend == "mpi" || opts.backend == "nccl",
             "--backend " << opts.backend << " is not a backend; use threads (ranks are threads of this process), "
                          << "mpi (one process per rank under mpirun) or nccl (one process per GPU under mpirun)");
    SS_CHECK(opts.backend != "nccl" || device_or_default(opts.device) == Device::cuda,
             "--backend nccl moves GPU memory between GPUs; add --device cuda (or use --backend mpi on the CPU)");
    check_not_launched_by_mpi(opts.backend);  // mpirun with threads: N runs of one rank, racing for the files
    const bool mpi = opts.backend == "mpi" || opts.backend == "nccl";  // one process per rank, under mpirun
    if (device_or_default(opts.device) == Device::cuda) require_cuda();  // says why not, before any work
    r.world = opts.ranks;
    if (mpi) {
        // Under mpirun the world is the job: -np decides, --ranks may only repeat it.
        const int np = mpi_world_size();
        SS_CHECK(opts.ranks == 1 || opts.ranks == np, "--ranks " << opts.ranks << " but mpirun started " << np
                                                                 << " processes; leave --ranks out with --backend mpi");
        r.world = np;
        if (mpi_world_rank() != 0) out = nullptr;  // one process prints
    }
    SS_CHECK(opts.tp >= 1, "--tp must be at least 1 (got " << opts.tp << ")");
    SS_CHECK(opts.sp >= 1, "--sp must be at least 1 (got " << opts.sp << ")");
    SS_CHECK(opts.sp_mode == "ulysses" || opts.sp_mode == "ring",
             "--sp-mode " << opts.sp_mode << " is not a mode; use ulysses (all-to-all around attention) or ring "
                          << "(keys and values passed round the sp ranks)");
    if (opts.sequence_parallel) {
        SS_CHECK(opts.tp > 1, "--sequence-parallel splits the sequence over the tp ranks; it needs --tp 2 or more "
                              "(for a sequence axis of its own use --sp N --sp-mode ulysses)");
        SS_CHECK(opts.sp == 1, "--sequence-parallel (Megatron, on the tp axis) and --sp " << opts.sp
                                   << (opts.sp_mode == "ring" ? " (ring attention)" : " (Ulysses)")
                                   << " cannot be combined here; choose one");
        check_divides("TP with --sequence-parallel", opts.tp, "the sequence length T", r.T);
    }
    if (opts.sp > 1) {
        check_divides("SP", opts.sp, "the sequence length T", r.T);
        SS_CHECK(opts.sp_mode == "ring" || (opts.model.H % opts.tp == 0 && (opts.model.H / opts.tp) % opts.sp == 0),
                 "Ulysses SP=" << opts.sp << " must divide the heads each TP rank holds, H/TP = " << opts.model.H
                               << "/" << opts.tp << "; choose SP from the divisors of "
                               << (opts.model.H % opts.tp == 0 ? opts.model.H / opts.tp : opts.model.H));
    }
    if (opts.tp > 1) {
        check_divides("TP", opts.tp, "n_head", opts.model.H);  // V needs no check: wte is padded (padded_vocab)
    }
    SS_CHECK(opts.pp >= 1, "--pp must be at least 1 (got " << opts.pp << ")");
    SS_CHECK(opts.pp_virtual >= 1, "--pp-virtual must be at least 1 (got " << opts.pp_virtual << ")");
    {
        const Schedule kind = parse_schedule(opts.schedule);  // throws naming the choices
        SS_CHECK(opts.pp_virtual == 1 || kind == Schedule::interleaved,
                 "--pp-virtual " << opts.pp_virtual << " gives each pipeline rank several model chunks, which only "
                                 << "--schedule interleaved runs; add --schedule interleaved or drop --pp-virtual");
        SS_CHECK(kind != Schedule::interleaved || (opts.pp > 1 && opts.pp_virtual > 1),
                 "--schedule interleaved needs --pp 2 or more and --pp-virtual 2 or more (model chunks per rank)");
        parse_recompute(opts.recompute);  // throws naming the choices
        SS_CHECK(kind != Schedule::interleaved || !opts.pp_split.empty() ||
                     opts.model.L % (opts.pp * opts.pp_virtual) == 0,
                 "--schedule interleaved cuts the L=" << opts.model.L << " blocks into --pp x --pp-virtual = "
                     << opts.pp * opts.pp_virtual << " equal chunks, which does not divide them (interleaving "
                     << "needs equal chunks); choose --pp-virtual so that pp x v divides " << opts.model.L
                     << ", or give the chunks with --pp-split");
        r.pp_split = pipeline_split(opts.model.L, opts.pp * opts.pp_virtual, opts.pp_split);
        r.bubble = opts.pp > 1 ? pipe_bubble_formula(pipe_spec(opts, opts.pp)) : 0.0;
        make_pipe_schedule(pipe_spec(opts, opts.pp));  // throws for a schedule it cannot make (too few micro-batches)
    }
    MeshShape shape = fill_dp(r.world, MeshShape{opts.pp, opts.dp_rep, opts.dp_shard, opts.sp, opts.tp});
    ProcessMesh mesh(r.world, shape);  // throws a clear error for a bad layout
    SS_CHECK(opts.zero >= 0 && opts.zero <= 3, "--zero " << opts.zero << " does not exist; choose 0 (DDP), 1, 2 or 3");
    SS_CHECK(opts.replica_sync_every >= 1,
             "--replica-sync-every must be at least 1 (got " << opts.replica_sync_every << ")");
    SS_CHECK(opts.bucket_mb >= 0, "--bucket-mb must not be negative (got " << opts.bucket_mb << ")");
    r.tp = shape.tp;
    r.sp = shape.sp;
    r.pp = shape.pp;
    r.dp_shard = shape.dp_shard;
    r.dp_rep = shape.dp_rep;
    r.dp = shape.dp();
    r.gbs = int64_t(opts.mbs) * opts.ga * r.dp;
    r.num_params = num_params(opts.model);

    // Every output can be written and none overwrites another or an input: found now, not after
    // the last step. One writer per checkpoint directory, held until train() returns.
    SS_CHECK(opts.keep_last >= 0, "--keep-last must not be negative (got " << opts.keep_last
                                                                         << "); 0 keeps every checkpoint");
    check_run_files(opts);
    std::optional<CheckpointDirLock> checkpoint_lock;
    if (opts.save_every > 0 && !opts.checkpoint_dir.empty() && (!mpi || mpi_world_rank() == 0))
        checkpoint_lock.emplace(opts.checkpoint_dir);

    // Data first: a bad file should fail before any big allocation.
    std::vector<uint16_t> tokens = opts.data.empty() ? builtin_corpus_tokens() : read_token_file(opts.data);
    check_tokens(tokens, opts.model.V, opts.data.empty() ? "the built-in corpus" : opts.data);
    const int64_t need = int64_t(r.dp) * opts.mbs * r.T + 1;
    SS_CHECK(int64_t(tokens.size()) >= need,
             (opts.data.empty() ? std::string("the built-in corpus") : opts.data)
                 << " has " << tokens.size() << " tokens but one step of DP " << r.dp << " x MBS " << opts.mbs
                 << " x T " << r.T << " needs " << need << "; use a smaller --mbs, --seq or --ranks, or more data");

    if (out) {
        char buf[256];
        std::snprintf(buf, sizeof buf, "model %s: L=%d C=%d H=%d V=%d maxT=%d, %lld parameters, %s\n",
                      opts.model.name.c_str(), opts.model.L, opts.model.C, opts.model.H, opts.model.V,
                      opts.model.maxT, (long long)r.num_params, dtype_name(opts.dtype));
        *out << buf;
        const int Vp = padded_vocab(opts.model.V, opts.tp, opts.model.vocab_divisible_by);
        if (Vp != opts.model.V)
            *out << "vocabulary: V = " << opts.model.V << " padded to Vp = " << Vp << " (multiple of "
                 << opts.model.vocab_divisible_by << " x TP " << opts.tp << "; rows V..Vp-1 of wte are zeros, never "
                 << "predicted, and not saved)\n";
        if (device_or_default(opts.device) == Device::cuda) {
            const int gpus = cuda_device_count();
            *out << "device: cuda, " << gpus << " GPU" << (gpus > 1 ? "s" : "")
                 << (opts.backend == "nccl" ? " per node (a process per GPU: local rank r on GPU r mod "
                                            : " (rank r on GPU r mod ")
                 << gpus << ")" << (opts.dtype == DType::bf16 ? "; bf16 tensor-core matmuls, fp32 sums" : "") << "\n";
        }
        if (r.world > 1) {
            *out << "ranks: " << r.world << " (" << opts.backend << "), ";
            if (r.pp > 1) *out << "PP " << r.pp << " (pipeline: layers on different ranks) x ";
            if (r.tp > 1)
                *out << "TP " << r.tp << (opts.sequence_parallel ? " with Megatron-SP" : "")
                     << " (tensor parallel: shares each micro-batch) x ";
            if (r.sp > 1)
                *out << "SP " << r.sp << (opts.sp_mode == "ring" ? " (ring attention" : " (Ulysses")
                     << ": splits each sequence) x ";
            *out << "DP = dp_shard " << r.dp_shard << " x dp_rep " << r.dp_rep << ", ";
            *out << (opts.zero == 0 ? std::string(opts.bucket_mb > 0 ? "DDP, bucketed" : "DDP, one all-reduce per tensor")
                                    : "ZeRO-" + std::to_string(opts.zero) + " over each shard group of " +
                                          (r.sp > 1 ? "dp_shard x sp = " + std::to_string(r.dp_shard * r.sp)
                                                    : std::to_string(r.dp_shard)))
                 << "\n";
        }
        *out << r.gbs_line() << "\n";
        if (!r.pipeline_line().empty()) *out << r.pipeline_line() << "\n";
        if (!r.replica_batch_line().empty()) *out << r.replica_batch_line() << "\n";
    }

    // Checkpoints: check the options, and read a checkpoint to resume from once, here.
    SS_CHECK(opts.save_every >= 0, "--save-every must not be negative (got " << opts.save_every << ")");
    SS_CHECK(opts.save_every == 0 || !opts.checkpoint_dir.empty(),
             "--save-every " << opts.save_every << " needs --checkpoint-dir DIR: where to write the checkpoints");
    SS_CHECK(opts.save_every == 0 || opts.replica_sync_every == 1,
             "--save-every with --replica-sync-every " << opts.replica_sync_every << ": between syncs the replicas "
                 << "hold different parameters and a checkpoint keeps one copy; use --replica-sync-every 1");
    SS_CHECK(opts.init.empty() || opts.resume.empty(),
             "--init and --resume both say where the parameters start; give one of them");
    Checkpoint ck;
    int64_t skip = 0;
    if (!opts.resume.empty()) {
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
        skip = seqs / gmb;
        SS_CHECK(ck.step < opts.steps, "--resume: the checkpoint is at step " << ck.step << " and --steps is "
                                                                           << opts.steps << ": nothing to do; raise --steps");
        r.first_step = ck.step + 1;
        if (out) *out << "resumed from " << ck.dir << " (step " << ck.step << "); continuing at step " << r.first_step << "\n";
    }

    Shared sh{&opts, &tokens, &r, out, {}};
    sh.rank_peak.resize(size_t(r.world));
    sh.resume = opts.resume.empty() ? nullptr : &ck;
    sh.skip_micro_batches = skip;
    CommOptions copts;
    copts.timeout_seconds = opts.comm_timeout;
    std::vector<std::unique_ptr<Tracer>> tracers;
    if (!opts.trace.empty()) {
        tracers = make_tracers(r.world);
        for (auto& t : tracers) copts.tracers.push_back(t.get());
    }
    if (mpi) {
        std::vector<Group> groups = mesh_groups(mesh), emb = embedding_groups(mesh);
        groups.insert(groups.end(), emb.begin(), emb.end());
        if (opts.backend == "nccl")
            run_nccl([&](Comm& comm) { rank_main(comm, sh); }, copts, groups);
        else
            run_mpi([&](Comm& comm) { rank_main(comm, sh); }, copts, groups);
    } else {
        run_threads(r.world, [&](Comm& comm) { rank_main(comm, sh); }, copts);
    }
    const bool writer = !mpi || mpi_world_rank() == 0;  // who writes the files
    r.rank_peak = sh.rank_peak;

    if (out) {
        print_memory(*out, r);
        *out << r.gbs_line() << "\n";
    }
    if (!opts.trace.empty()) {
        nlohmann::json other = r.to_json();
        other["prediction"] = prediction_for_trace(opts, r.world);
        other["mesh"] = {{"world", r.world}, {"pp", r.pp}, {"dp_rep", r.dp_rep}, {"dp_shard", r.dp_shard}, {"sp", r.sp},
                         {"tp", r.tp}};
        if (r.pp > 1) {  // the schedule as data, for a viewer to draw: each pp rank's actions in order
            const PipeSchedule sched = make_pipe_schedule(pipe_spec(opts, r.pp));
            nlohmann::json ranks = nlohmann::json::array();
            for (const auto& actions : sched.ranks) {
                nlohmann::json list = nlohmann::json::array();
                for (const PipeAction& a : actions) list.push_back({pipe_op_name(a.op), a.micro, a.chunk});
                ranks.push_back(list);
            }
            other["pipeline"]["actions"] = ranks;  // [pp rank][i] = [op, micro-batch, chunk]
        }
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
