// report.cpp — what a training run tells (report.h).
#include "train/report.h"

#include <cstdio>
#include <ostream>

#include "core/check.h"
#include "core/device.h"
#include "model/gpt2.h"
#include "train/plan_for_run.h"
#include "plan/report.h"

namespace ss {

TrainReport TrainReport::start(const TrainOptions& opts, const RunShape& shape) {
    TrainReport r;
    r.opts = opts;
    r.T = shape.T;
    r.world = shape.world;
    r.tp = shape.mesh.tp;
    r.sp = shape.mesh.sp;
    r.pp = shape.mesh.pp;
    r.dp_shard = shape.mesh.dp_shard;
    r.dp_rep = shape.mesh.dp_rep;
    r.dp = shape.mesh.dp();
    r.pp_split = shape.pp_split;
    r.bubble = shape.bubble;
    r.gbs = shape.gbs;
    r.num_params = ss::num_params(opts.model);
    return r;
}

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
                  pp, v > 1 ? (" x " + std::to_string(v) + " chunks").c_str() : "", schedule_name(opts.schedule),
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
    if (opts.replica_outer == ReplicaOuter::avg) return buf;
    char outer[160];  // DiLoCo (optim/diloco.h)
    std::snprintf(outer, sizeof outer,
                  ", then an outer Nesterov step (DiLoCo): lr_outer %g, momentum %g", double(opts.outer_lr),
                  double(opts.outer_momentum));
    return std::string(buf) + outer;
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
    j["ranks"] = {{"world", world},       {"backend", backend_name(opts.backend)},
                  {"device", device_name(device_or_default(opts.device))},
                  {"dp", dp}, {"dp_shard", dp_shard}, {"dp_rep", dp_rep},
                  {"tp", tp}, {"sp", sp}, {"pp", pp},
                  {"zero", opts.zero}, {"bucket_mb", opts.bucket_mb}, {"replica_sync_every", opts.replica_sync_every},
                  {"replica_outer", replica_outer_name(opts.replica_outer)}};
    if (opts.replica_outer == ReplicaOuter::nesterov)
        j["ranks"]["outer"] = {{"lr", opts.outer_lr}, {"momentum", opts.outer_momentum}};
    if (pp > 1)
        j["pipeline"] = {{"pp", pp},           {"schedule", schedule_name(opts.schedule)}, {"pp_virtual", opts.pp_virtual},
                         {"split", pp_split},  {"micro_batches", opts.ga},  {"bubble", bubble},
                         {"recompute", recompute_name(opts.recompute)}};
    else
        j["recompute"] = recompute_name(opts.recompute);
    j["gbs"] = {{"mbs", opts.mbs}, {"ga", opts.ga}, {"dp", dp}, {"gbs", gbs}, {"tokens_per_step", gbs * T},
                {"formula", "GBS = MBS x GA x DP"}, {"line", gbs_line()}};
    json st = json::array();
    for (const StepStats& s : steps)
        st.push_back({{"step", s.step}, {"loss", s.loss}, {"ms", s.ms}, {"tokens_per_s", s.tokens_per_s},
                      {"comm_ms", s.comm_ms}, {"exposed_comm_ms", s.exposed_comm_ms}});
    j["steps"] = st;
    j["overlap"] = {{"on", overlap_runs(opts)}, {"prefetch", opts.prefetch}};  // as it ran (nccl: off)
    if (opts.hpz > 0) j["hpz"] = opts.hpz;  // ZeRO++ hpZ's group size K
    if (opts.qwz || opts.qgz)  // ZeRO++'s quantized collectives: the results are not the unquantized run's
        j["zeropp"] = {{"qwz", opts.qwz}, {"qgz", opts.qgz}, {"quant_block", opts.quant_block},
                       {"qgz_bits", opts.qgz_bits}, {"quantized", true}};
    if (links.on) {
        j["emulated_links"] = links.describe();  // link times are emulated, not measured
        j["emulated_time_scale"] = links.time_scale;  // --emulate's factor (1: none), as a number for readers
    }
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

void print_run_header(std::ostream& out, const TrainReport& r) {
    const TrainOptions& opts = r.opts;
    char buf[256];
    std::snprintf(buf, sizeof buf, "model %s: L=%d C=%d H=%d V=%d maxT=%d, %lld parameters, %s\n",
                  opts.model.name.c_str(), opts.model.L, opts.model.C, opts.model.H, opts.model.V, opts.model.maxT,
                  (long long)r.num_params, dtype_name(opts.dtype));
    out << buf;
    const int Vp = padded_vocab(opts.model.V, opts.tp, opts.model.vocab_divisible_by);
    if (Vp != opts.model.V)
        out << "vocabulary: V = " << opts.model.V << " padded to Vp = " << Vp << " (multiple of "
            << opts.model.vocab_divisible_by << " x TP " << opts.tp << "; rows V..Vp-1 of wte are zeros, never "
            << "predicted, and not saved)\n";
    if (device_or_default(opts.device) == Device::cuda) {
        const int gpus = cuda_device_count();
        out << "device: cuda, " << gpus << " GPU" << (gpus > 1 ? "s" : "")
            << (opts.backend == BackendKind::nccl ? " per node (a process per GPU: local rank r on GPU r mod "
                                              : " (rank r on GPU r mod ")
            << gpus << ")" << (opts.dtype == DType::bf16 ? "; bf16 tensor-core matmuls, fp32 sums" : "") << "\n";
    }
    if (r.world > 1) {
        out << "ranks: " << r.world << " (" << backend_name(opts.backend) << "), ";
        if (r.pp > 1) out << "PP " << r.pp << " (pipeline: layers on different ranks) x ";
        if (r.tp > 1)
            out << "TP " << r.tp << (opts.sequence_parallel ? " with Megatron-SP" : "")
                << " (tensor parallel: shares each micro-batch) x ";
        if (r.sp > 1)
            out << "SP " << r.sp << (opts.sp_mode == SpMode::ring ? " (ring attention" : " (Ulysses")
                << ": splits each sequence) x ";
        out << "DP = dp_shard " << r.dp_shard << " x dp_rep " << r.dp_rep << ", ";
        out << (opts.zero == 0 ? std::string(opts.bucket_mb > 0 ? "DDP, bucketed" : "DDP, one all-reduce per tensor")
                               : "ZeRO-" + std::to_string(opts.zero) + " over each shard group of " +
                                     (r.sp > 1 ? "dp_shard x sp = " + std::to_string(r.dp_shard * r.sp)
                                               : std::to_string(r.dp_shard)))
            << (opts.hpz > 0 ? ", hpZ: backward gathers inside groups of " + std::to_string(opts.hpz) : std::string())
            << "\n";
        if (opts.qwz || opts.qgz)
            out << "quantized (ZeRO++, changes results):"
                << (opts.qwz ? " qwZ int8 parameter gathers" : "") << (opts.qwz && opts.qgz ? "," : "")
                << (opts.qgz ? " qgZ int" + std::to_string(opts.qgz_bits) + " gradient all-to-alls" : "")
                << ", blocks of " << opts.quant_block << "\n";
    }
    if (r.world > 1) {
        const bool on = overlap_runs(opts);
        const std::string why = overlap_off_reason(opts);
        out << "overlap: " << (on ? "on" : "off")
            << (on && opts.zero == 3 ? ", ZeRO-3 prefetch " + std::to_string(opts.prefetch) : std::string())
            << (why.empty() ? std::string() : " (" + why + ")") << "\n";
    }
    if (r.links.on) out << r.links.describe() << "\n";
    out << r.gbs_line() << "\n";
    if (!r.pipeline_line().empty()) out << r.pipeline_line() << "\n";
    if (!r.replica_batch_line().empty()) out << r.replica_batch_line() << "\n";
}

// The planner's prediction for the run that ran, for the trace's otherData, so
// a viewer can show it beside the measurement. The world is the one that ran
// (under mpirun --ranks keeps its default of 1). A run the planner cannot
// model (it is stricter than the engine, e.g. PP not dividing L with an uneven
// --pp-split) still keeps its trace: the prediction says why it is missing.
static nlohmann::json prediction_for_trace(const TrainOptions& opts, int world, const EmulatedLinks& links) {
    TrainOptions ran = opts;
    ran.ranks = world;
    try {
        return plan_json(plan(plan_input_for(ran, "out/calibration.json", links)));
    } catch (const Error& e) {
        return {{"unavailable", std::string("the planner cannot model this run: ") + e.what()}};
    }
}

nlohmann::json trace_other_data(const TrainReport& r) {
    nlohmann::json other = r.to_json();
    other["prediction"] = prediction_for_trace(r.opts, r.world, r.links);
    // Ranks per node (--gpus-per-node, with two-tier links or alone, or an --emulate preset's:
    // the links take theirs from the same two places), so `trace summary` can count what
    // crosses nodes (trace_nodes.h).
    const int node = ranks_per_node(r.opts);
    if (node > 0) other["gpus_per_node"] = node;
    other["mesh"] = {{"world", r.world}, {"pp", r.pp}, {"dp_rep", r.dp_rep}, {"dp_shard", r.dp_shard}, {"sp", r.sp},
                     {"tp", r.tp}};
    if (r.pp > 1) {  // the schedule as data, for a viewer to draw: each pp rank's actions in order
        const PipeSchedule sched = make_pipe_schedule(pipe_spec(r.opts, r.pp));
        nlohmann::json ranks = nlohmann::json::array();
        for (const auto& actions : sched.ranks) {
            nlohmann::json list = nlohmann::json::array();
            for (const PipeAction& a : actions) list.push_back({pipe_op_name(a.op), a.micro, a.chunk});
            ranks.push_back(list);
        }
        other["pipeline"]["actions"] = ranks;  // [pp rank][i] = [op, micro-batch, chunk]
    }
    return other;
}

}  // namespace ss
