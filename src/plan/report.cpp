#include "plan/report.h"

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <sstream>

namespace ss {

std::string commas(int64_t v) {
    std::string digits = std::to_string(v < 0 ? -v : v), out = v < 0 ? "-" : "";
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

std::string decimal_bytes(double bytes) {
    struct Unit {
        double size;
        const char* name;
    };
    const Unit units[] = {{1e12, "TB"}, {1e9, "GB"}, {1e6, "MB"}, {1e3, "kB"}};
    char buf[64];
    for (const Unit& u : units)
        if (bytes >= u.size) {
            std::snprintf(buf, sizeof buf, "%.2f %s", bytes / u.size, u.name);
            return buf;
        }
    std::snprintf(buf, sizeof buf, "%.0f B", bytes);
    return buf;
}

namespace {

std::string fmt(const char* f, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, f);
    std::vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    return buf;
}

// Exact below 1 MB (small runs are compared with traces byte for byte), else decimal units.
std::string comm_bytes(int64_t b) { return b < 1000000 ? commas(b) + " B" : decimal_bytes(double(b)); }

std::string flops_str(double f) { return f >= 1e12 ? fmt("%.0f TFLOP/s", f / 1e12) : fmt("%.1f GFLOP/s", f / 1e9); }

const char* overlap_name(Overlap o) {
    switch (o) {
        case Overlap::none: return "-";
        case Overlap::fwd: return "forward";
        case Overlap::bwd: return "backward";
        case Overlap::attention: return "attention";
        case Overlap::pipeline: return "fill/drain";
    }
    return "?";
}

std::string model_line(const PlanResult& r) {
    const GPT2Config& m = r.input.model;
    return fmt("model %s: L=%d C=%d H=%d V=%d maxT=%d, %s parameters, %s, T=%d, activations: %s\n", m.name.c_str(),
               m.L, m.C, m.H, m.V, m.maxT, commas(r.num_params).c_str(),
               r.input.grad_reduce_fp32 ? "bf16 (gradients in fp32)" : dtype_name(r.input.dtype), r.input.seq(),
               r.input.act_model == ActModel::engine ? "engine (fp32)"
               : r.input.flash_attention             ? "paper (Korthikanti, 16-bit), FlashAttention (no scores kept)"
                                                     : "paper (Korthikanti, 16-bit)");
}

std::string cluster_line(const PlanInput& in) {
    const Hardware& h = in.hw;
    std::string node = in.gpus_per_node >= in.gpus ? "all in one node" : fmt("%d per node", in.gpus_per_node);
    // Ranks that share a CPU's cores share its rate too (plan/time.cpp): say so where it applies.
    const std::string shared = h.cores > 0 && in.gpus > h.cores
                                   ? fmt(" x %d cores / %d ranks", h.cores, in.gpus)
                                   : std::string();
    return fmt("cluster: %d x %s, %s: %s peak x %.2f%s, %s, links %s/s in a node, %s/s between\n", in.gpus,
               h.label.c_str(), node.c_str(), flops_str(h.flops).c_str(), h.efficiency, shared.c_str(),
               decimal_bytes(h.memory).c_str(), decimal_bytes(h.intra.busbw).c_str(), decimal_bytes(h.inter.busbw).c_str());
}

// What qwZ and qgZ do to the numbers: the run trains on quantized values.
std::string quantized_line(const PlanInput& in, int shard_n) {
    const PlanLayout& l = in.layout;
    std::string what;
    if (l.qwz) what += "int8 weights in every gather from the primary partition";
    if (l.qgz)
        what += (what.empty() ? "" : ", ") +
                (l.qgz_node < shard_n ? fmt("int%d gradients, summed in nodes of %d, then across", in.qgz_bits, l.qgz_node)
                                      : fmt("int%d gradients in one all-to-all over %d", in.qgz_bits, shard_n));
    return fmt("quantized: qwZ/qgZ change results (%s; blocks of %d, one fp32 scale each; "
               "|x - q s| <= s (1/2 + 2 q_max 2^-24), docs/formulas.md)",
               what.c_str(), in.quant_block);
}

}  // namespace

std::string format_plan(const PlanResult& r) {
    const PlanInput& in = r.input;
    const PlanLayout& l = in.layout;
    const MemoryPlan& mem = r.memory;
    const TimePlan& t = r.time;
    std::ostringstream o;
    o << model_line(r);
    const int Vp = padded_vocab(in.model.V, r.mesh.tp, in.model.vocab_divisible_by);
    if (Vp != in.model.V)  // what the memory rows, traffic and FLOPs below count (model/config.h)
        o << fmt("vocabulary: V = %d padded to Vp = %d (multiple of %d x TP %d, Megatron-LM's rule; "
                 "--vocab-divisible-by)\n",
                 in.model.V, Vp, in.model.vocab_divisible_by, r.mesh.tp);
    o << cluster_line(in);
    o << "layout: " << r.layout_str() << "\n";
    if (l.qwz || l.qgz) o << quantized_line(in, r.memory.shard_n) << "\n";
    o << "\n";

    o << r.gbs.line() << "\n";
    o << "  " << r.gbs.axes_line() << "\n";
    o << "  tokens per step: " << commas(r.gbs.gbs) << " x " << in.seq() << " = " << commas(r.gbs.tokens()) << "\n";
    if (r.mesh.dp_rep > 1 && l.replica_sync_every > 1)  // the replicas' own batch (tutorials/05-replicas.md, (d))
        o << fmt("  local SGD: each of the %d replicas steps on MBS x GA x dp_shard = %d x %d x %d = %lld sequences, "
                 "averaged every %d steps%s\n",
                 r.mesh.dp_rep, in.mbs, r.gbs.ga, r.mesh.dp_shard, (long long)(r.gbs.gbs / r.mesh.dp_rep),
                 l.replica_sync_every, l.replica_outer == ReplicaOuter::nesterov ? ", then DiLoCo's outer step" : "");
    o << "\n";

    const int es = int(dtype_size(in.dtype)), K = in.dtype == DType::bf16 ? 12 : 8;
    const std::string N = std::to_string(mem.shard_n);
    o << fmt("memory per GPU (pipeline stage %d of %d)  %10s %16s  formula\n", mem.stage, r.mesh.pp, "", "bytes");
    auto row = [&](const char* name, double bytes, const std::string& formula) {
        o << fmt("  %-22s %12s %16s  %s\n", name, decimal_bytes(bytes).c_str(), commas(int64_t(std::llround(bytes))).c_str(),
                 formula.c_str());
    };
    row("params", double(mem.states.params),
        fmt("%d Psi%s   Psi = %s parameters on this GPU (its TP/PP slice)", es, l.zero >= 3 ? (" / " + N).c_str() : "",
            commas(mem.slice.elems).c_str()));
    row("grads", double(mem.states.grads), fmt("%d Psi%s", r.input.grad_bytes(), l.zero >= 2 ? (" / " + N).c_str() : ""));
    row("optim", double(mem.states.optim),
        l.zero >= 1 ? fmt("%d Psi / %s   ZeRO-%d, N = dp_shard x sp = %d", K, N.c_str(), l.zero, mem.shard_n)
                    : fmt("%d Psi   ZeRO-0: every rank holds all of it", K));
    row("acts", mem.acts.total,
        fmt("%s x %g layer-micro-batches%s", mem.acts.formula.c_str(), mem.acts.layer_sets,
            (mem.acts.head > 0 || mem.acts.embedding > 0) ? " + embedding/head" : ""));
    {  // what the comm line holds, the parts that are there (plan/memory.cpp, plan_memory)
        std::vector<std::string> parts;
        if (l.zero >= 3)
            parts.push_back("(2 + prefetch) x the largest unit (in use, prefetched, its gradient)");
        else if (int64_t(r.mesh.dp_rep) * r.mesh.dp_shard * r.mesh.sp > 1 && in.bucket_mb > 0)
            parts.push_back("2 gradient buckets");
        if (l.qwz || l.qgz) parts.push_back("the quantized wires of qwZ/qgZ");
        if (model_parallel_comm_bytes(in, r.mesh) > 0) parts.push_back("the TP/SP operators' buffers");
        if (const int64_t pipe = pipeline_comm_bytes(in, r.mesh, r.gbs.ga, mem.stage); pipe > 0)
            parts.push_back(fmt("%lld pipeline boundary tensors", (long long)(pipe / pipeline_comm_bytes_each(in, r.mesh))));
        std::string what;
        for (const std::string& p : parts) what += (what.empty() ? "" : " + ") + p;
        row("comm buffers", double(mem.comm), what.empty() ? "none" : what);
    }
    if (mem.outer > 0)
        row("outer", double(mem.outer), fmt("8 %s   DiLoCo: theta and the outer momentum, fp32, over what the optimizer updates",
                                            l.zero >= 1 ? ("Psi / " + N).c_str() : "Psi"));
    if (mem.hpz > 0)
        row("hpz", double(mem.hpz), fmt("%d Psi / %d   ZeRO++ hpZ: the secondary partition, 1/K of the parameters", es,
                                        l.hpz));
    row("total", double(mem.total),
        fmt("of %s: %s", decimal_bytes(mem.capacity).c_str(), mem.fits() ? "fits" : "DOES NOT FIT"));
    o << "\n";

    o << "communication per step (global rank 0" << (mem.stage != 0 ? ", pipeline stage 0; the memory above is stage " +
                                                        std::to_string(mem.stage) + "'s" : std::string()) << ")\n";
    o << fmt("  %-12s %-15s %-9s %-5s %6s %-6s %8s %12s %10s  %s\n", "axis", "op", "payload", "phase", "group", "link",
             "calls", "bytes", "time ms", "hides under");
    bool every = false;
    for (const CommCall& c : r.comm) {
        o << fmt("  %-12s %-15s %-9s %-5s %6d %-6s %8lld %12s %10.3f  %s%s\n", c.axis.c_str(), c.op.c_str(),
                 payload_name(c.payload), phase_name(c.phase), c.group, c.intra_node ? "node" : "net",
                 (long long)c.calls, comm_bytes(c.bytes).c_str(), c.seconds * 1e3, overlap_name(c.overlap),
                 c.every > 1 ? fmt(" (every %d steps)", c.every).c_str() : "");
        every |= c.every > 1;
    }
    o << fmt("  %-60s %12s%s\n\n", "total", decimal_bytes(double(r.comm_bytes())).c_str(),
             every ? "  (on a sync step; the step time below spreads a sync over its steps)" : "");

    // The FLOPs the compute line's time is made of: every GPU's share when the
    // stages are one; with a pipeline, the slowest stage's (the last holds the
    // head), which is more than the mean over all GPUs, printed beside it.
    auto flop = [](double f) { return f >= 1e12 ? fmt("%.1f TFLOP", f / 1e12) : fmt("%.2f GFLOP", f / 1e9); };
    const double mean_flops = t.hw_flops / r.gbs.world;
    const std::string flops_on =
        r.mesh.pp == 1 ? flop(mean_flops) + " per GPU"
                       : flop(r.gbs.ga * t.t_compute_mb * t.flops_per_s) + " per GPU of the slowest stage (mean " +
                             flop(mean_flops) + ")";
    o << "time per step (predicted)\n";
    o << fmt("  compute          %10.1f ms  %d micro-batch%s x %.1f ms; %s at %s\n",
             r.gbs.ga * t.t_compute_mb * 1e3, r.gbs.ga, r.gbs.ga > 1 ? "es" : "", t.t_compute_mb * 1e3,
             flops_on.c_str(), flops_str(t.flops_per_s).c_str());
    o << fmt("  TP/SP/PP comm    %10.1f ms  on the critical path of every micro-batch\n",
             r.gbs.ga * t.t_critical_mb * 1e3);
    o << fmt("  bubble           %10.1f ms  (p-1)/(v m) = %.3f\n", t.bubble * 1e3, t.bubble_fraction);
    o << fmt("  DP comm exposed  %10.1f ms  data-parallel traffic that did not hide under compute\n",
             (r.gbs.ga * t.t_dp_mb + t.dp_exposed) * 1e3);
    o << fmt("  step comm        %10.1f ms  once-per-step traffic nothing hides (tied embeddings, the loss%s)\n",
             t.step_comm * 1e3, every ? fmt("; the sync's / %d", l.replica_sync_every).c_str() : "");
    o << fmt("  optimizer        %10.1f ms  AdamW, memory-bound\n", t.optimizer * 1e3);
    o << fmt("  step             %10.1f ms\n", t.step * 1e3);
    o << fmt("throughput: %s tokens/s (%s per GPU), MFU %.1f%%\n", commas(int64_t(t.tokens_per_s)).c_str(),
             commas(int64_t(t.tokens_per_s / r.gbs.world)).c_str(), t.mfu * 100);
    return o.str();
}

std::string format_search(const SearchInput& in, const std::vector<PlanResult>& best, const SearchStats& stats) {
    std::ostringstream o;
    if (!best.empty()) o << model_line(best.front()) << cluster_line(best.front().input);
    o << "search: " << in.base.gpus << " GPUs";
    if (in.base.gbs > 0) o << ", GBS = " << in.base.gbs;
    if (in.base.layout.replica_sync_every > 1)
        o << ", replicas (rep > 1) " << (in.base.layout.replica_outer == ReplicaOuter::nesterov ? "DiLoCo" : "local SGD")
          << " every " << in.base.layout.replica_sync_every << " steps";
    if (in.max_gbs > 0) o << ", GBS <= " << in.max_gbs;
    o << ", memory <= " << fmt("%.3g", in.base.hw.memory / 1e9) << " GB; " << commas(stats.evaluated)
      << " layouts evaluated, " << commas(stats.fitting) << " fit, "
      << fmt("%.3f s", stats.seconds) << (stats.ga_capped ? fmt("; GA above %lld not tried", (long long)kSearchMaxGa) : std::string())
      << "; step times and tokens/s are predictions\n";
    o << fmt("%4s %4s %4s %-12s %6s %6s %4s %-14s %-14s %4s %4s %6s %-9s %8s %9s %12s %6s\n", "rank", "TP", "PP", "SP",
             "shard", "rep", "ZeRO", "ZeRO++", "schedule", "MBS", "GA", "GBS", "recompute", "mem GB", "step ms",
             "tokens/s", "MFU");
    int i = 0;
    bool quantized = false;
    for (const PlanResult& r : best) {
        const PlanLayout& l = r.input.layout;
        const std::string sp = r.mesh.sp > 1 ? fmt("%d %s", r.mesh.sp, sp_mode_name(l.sp_mode)) : "1";
        const std::string sched = r.mesh.pp == 1 ? "-"
                                  : l.schedule == Schedule::interleaved ? fmt("interleaved %d", l.pp_virtual)
                                                                        : schedule_name(l.schedule);
        // ZeRO++ in short: hpZ's K, qwZ, qgZ's bits ("hpZ8+qwZ+qgZ4"); a star marks what changes results.
        std::string zpp;
        auto add = [&](const std::string& part) { zpp += (zpp.empty() ? "" : "+") + part; };
        if (l.hpz > 0) add(fmt("hpZ%d", l.hpz));
        if (l.qwz) add("qwZ");
        if (l.qgz) add(fmt("qgZ%d", r.input.qgz_bits));
        if (l.qwz || l.qgz) zpp += "*";
        quantized |= l.qwz || l.qgz;
        o << fmt("%4d %4d %4d %-12s %6d %6d %4d %-14s %-14s %4d %4d %6lld %-9s %8.1f %9.1f %12s %5.1f%%\n", ++i,
                 r.mesh.tp, r.mesh.pp, sp.c_str(), r.mesh.dp_shard, r.mesh.dp_rep, l.zero, zpp.empty() ? "-" : zpp.c_str(),
                 sched.c_str(), r.input.mbs, r.gbs.ga, (long long)r.gbs.gbs, recompute_name(l.recompute),
                 r.memory.total / 1e9, r.time.step * 1e3, commas(int64_t(r.time.tokens_per_s)).c_str(),
                 r.time.mfu * 100);
    }
    if (quantized)
        o << "* qwZ/qgZ change results: quantized weights (int8) and gradients (qgZ's bits), ranked here by "
             "speed alone; check the loss against an unquantized row before trading accuracy for it\n";
    else if (in.allow_quantized)
        o << "(--allow-quantized: qwZ and qgZ were tried; none is among these)\n";
    return o.str();
}

nlohmann::json plan_json(const PlanResult& r) {
    using nlohmann::json;
    const PlanInput& in = r.input;
    const PlanLayout& l = in.layout;
    const GPT2Config& m = in.model;
    json j;
    j["model"] = {{"name", m.name}, {"L", m.L}, {"C", m.C}, {"H", m.H}, {"V", m.V}, {"maxT", m.maxT},
                  {"Vp", padded_vocab(m.V, r.mesh.tp, m.vocab_divisible_by)},
                  {"vocab_divisible_by", m.vocab_divisible_by},
                  {"T", in.seq()},  {"num_params", r.num_params}, {"dtype", dtype_name(in.dtype)},
                  {"activations", act_model_name(in.act_model)}, {"flash_attention", in.flash_attention},
                  {"grad_reduce_fp32", in.grad_reduce_fp32}};
    j["cluster"] = {{"gpus", in.gpus},
                    {"gpus_per_node", in.gpus_per_node},
                    {"hw", in.hw.name},
                    {"flops", in.hw.flops},
                    {"efficiency", in.hw.efficiency},
                    {"memory_bytes", in.hw.memory},
                    {"hbm_bytes_per_s", in.hw.hbm_bw},
                    {"intra_busbw", in.hw.intra.busbw},
                    {"intra_alpha_s", in.hw.intra.alpha},
                    {"inter_busbw", in.hw.inter.busbw},
                    {"inter_alpha_s", in.hw.inter.alpha},
                    {"source", in.hw.source}};
    j["layout"] = {{"tp", r.mesh.tp},
                   {"pp", r.mesh.pp},
                   {"sp", r.mesh.sp},
                   {"sp_mode", sp_mode_name(l.sp_mode)},
                   {"dp", r.mesh.dp()},
                   {"dp_shard", r.mesh.dp_shard},
                   {"dp_rep", r.mesh.dp_rep},
                   {"sequence_parallel", l.sequence_parallel && r.mesh.tp > 1},
                   {"zero", l.zero},
                   {"hpz", l.hpz},
                   {"qwz", l.qwz},
                   {"qgz", l.qgz},
                   {"qgz_node", l.qgz_node},
                   {"qgz_bits", in.qgz_bits},
                   {"quant_block", in.quant_block},
                   {"quantized", l.qwz || l.qgz},
                   {"schedule", schedule_name(l.schedule)},
                   {"pp_virtual", l.pp_virtual},
                   {"recompute", recompute_name(l.recompute)},
                   {"replica_sync_every", r.mesh.dp_rep > 1 ? l.replica_sync_every : 1},
                   {"replica_outer", replica_outer_name(l.replica_outer)},
                   {"text", r.layout_str()}};
    j["gbs"] = {{"mbs", r.gbs.mbs}, {"ga", r.gbs.ga}, {"dp", r.gbs.dp}, {"gbs", r.gbs.gbs},
                {"tokens_per_step", r.gbs.tokens()}, {"formula", "GBS = MBS x GA x DP, DP = world / (TP x PP x SP)"},
                {"line", r.gbs.line()}};
    const MemoryPlan& mem = r.memory;
    j["memory"] = {{"stage", mem.stage},
                   {"params_on_gpu", mem.slice.elems},
                   {"shard_n", mem.shard_n},
                   {"params", mem.states.params},
                   {"grads", mem.states.grads},
                   {"optim", mem.states.optim},
                   {"acts", int64_t(mem.acts.total + 0.5)},
                   {"acts_per_layer", mem.acts.per_layer},
                   {"acts_layer_microbatches", mem.acts.layer_sets},
                   {"acts_formula", mem.acts.formula},
                   {"comm", mem.comm},
                   {"hpz", mem.hpz},
                   {"outer", mem.outer},
                   {"total", mem.total},
                   {"capacity", mem.capacity},
                   {"fits", mem.fits()}};
    json calls = json::array();
    for (const CommCall& c : r.comm)
        calls.push_back({{"axis", c.axis},
                         {"op", c.op},
                         {"payload", payload_name(c.payload)},
                         {"phase", phase_name(c.phase)},
                         {"group", c.group},
                         {"intra_node", c.intra_node},
                         {"calls", c.calls},
                         {"bytes", c.bytes},
                         {"seconds", c.seconds},
                         {"overlap", overlap_name(c.overlap)},
                         {"every", c.every},
                         {"what", c.what}});
    j["comm"] = calls;
    const TimePlan& t = r.time;
    j["time"] = {{"model_flops", t.model_flops}, {"hw_flops", t.hw_flops},      {"flops_per_s", t.flops_per_s},
                 {"compute_per_microbatch_s", t.t_compute_mb},                    {"critical_comm_per_microbatch_s", t.t_critical_mb},
                 {"dp_per_microbatch_s", t.t_dp_mb}, {"pipeline_s", t.pipeline}, {"bubble_s", t.bubble},
                 {"bubble_fraction", t.bubble_fraction}, {"dp_exposed_s", t.dp_exposed}, {"step_comm_s", t.step_comm},
                 {"optimizer_s", t.optimizer}, {"step_s", t.step}, {"tokens_per_s", t.tokens_per_s}, {"mfu", t.mfu}};
    return j;
}

nlohmann::json search_json(const SearchInput& in, const std::vector<PlanResult>& best, const SearchStats& stats) {
    nlohmann::json j;
    j["constraints"] = {{"gpus", in.base.gpus}, {"max_gbs", in.max_gbs}, {"gbs", in.base.gbs},
                        {"memory_bytes", in.base.hw.memory}};
    j["stats"] = {{"evaluated", stats.evaluated}, {"fitting", stats.fitting}, {"seconds", stats.seconds},
                  {"ga_capped", stats.ga_capped}};
    j["constraints"]["allow_quantized"] = in.allow_quantized;
    nlohmann::json rs = nlohmann::json::array();
    for (const PlanResult& r : best) rs.push_back(plan_json(r));
    j["results"] = rs;
    return j;
}

}  // namespace ss
