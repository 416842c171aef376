#include "plan/time.h"

#include <algorithm>

#include "plan/overlap.h"
#include "plan/zeropp.h"

namespace ss {

double narayanan_flops(double B, double s, double l, double h, double V, Recompute recompute) {
    const double none = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
    switch (recompute) {
        case Recompute::none: return none;
        case Recompute::selective: return none + 4 * B * s * s * h * l;
        case Recompute::full: return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
    }
    return none;
}

namespace {

// One micro-batch on one stage.
struct StageTime {
    double compute = 0;   // forward + backward FLOPs / rate
    double fwd = 0;       // forward compute
    double bwd = 0;       // backward compute (with recompute)
    double critical = 0;  // TP, SP traffic that nothing hides (and PP's with overlap off)
    double posted = 0;    // PP traffic posted early: only the fill and drain wait for it
    double dp = 0;        // per-micro-batch ZeRO traffic that did not hide
    double dp_once = 0;   // once-per-step data-parallel traffic that did not hide under one micro-batch
    double step = 0;      // the optimizer step's traffic
    // One rank's whole model (pp = 1): the step replayed unit by unit (overlap.h);
    // dp and dp_once then come from it.
    bool replayed = false;
    DpStepTime replay;
};

// The data-parallel and ZeRO collectives the replay takes over (plan_comm's "dp",
// "dp+sp", "dp_shard", "dp_shard+sp" and ZeRO++'s "hpz", "qgz_node", "qgz_cross" calls of
// parameters and gradients; not local SGD's sync, every H steps).
bool replayed_call(const CommCall& c) {
    return c.every == 1 && (c.payload == Payload::grad || c.payload == Payload::param) &&
           ((c.axis.rfind("dp", 0) == 0 && c.axis.rfind("dp_rep", 0) != 0) || c.axis == "hpz" ||
            c.axis.rfind("qgz_", 0) == 0);
}

// The step of a rank holding the whole model, unit by unit, for the replay
// (overlap.h): compute from the same FLOPs as stage_time, and each unit's
// collectives with plan_comm's bytes on the link of their axis.
DpStep dp_step_of(const PlanInput& in, const MeshShape& mesh, const GbsPlan& gbs, double layer_fwd, double layer_bwd,
                  double head_fwd, double head_bwd) {
    const PlanLayout& l = in.layout;
    const ModelSlice slice = model_slice(in.model, mesh.tp, 1, 0);
    const int c = mesh.sp, t = mesh.tp, gpn = in.gpus_per_node > 0 ? in.gpus_per_node : in.hw.gpus_per_node;
    // ZeRO's shard group; DDP's whole data-parallel group (the shard group alone when local SGD keeps the replicas apart)
    const int n = mesh.dp_shard * c,
              all = mesh.dp_rep > 1 && l.replica_sync_every > 1 ? n : mesh.dp() * c;
    const int64_t es = int64_t(dtype_size(in.dtype));
    const Link shard_link = group_link(in.hw, "all_gather", t, n, gpn);  // (and reduce_scatter: the same rule)
    const int k = l.hpz > 0 ? l.hpz : n;  // ZeRO-3's backward gathers: over the shard group, or hpZ's K
    const Link bwd_link = group_link(in.hw, "all_gather", t, k, gpn);
    const Link dp_link = group_link(in.hw, "all_reduce", t, all, gpn);
    // qgZ's hops (zeropp.h): K consecutive members of the shard group, then every K-th.
    const int qk = l.qgz && l.qgz_node > 0 ? l.qgz_node : n, qm = n / qk;
    const Link shard_a2a_link = group_link(in.hw, "all_to_all", t, n, gpn);
    const Link node_link = group_link(in.hw, "all_to_all", t, qk, gpn);
    const Link cross_link = group_link(in.hw, "all_to_all", t * qk, qm, gpn);
    DpStep s;
    s.zero = l.zero;
    s.blocking_reduce = l.qgz;
    s.ga = gbs.ga;
    s.overlap = in.overlap;
    s.prefetch = in.prefetch;
    const size_t units = slice.units.size();
    s.units.resize(units);
    for (size_t u = 0; u < units; ++u) {
        UnitWork& w = s.units[u];
        const bool block = u > 0 && u + 1 < units, head = u + 1 == units;
        w.fwd = block ? layer_fwd : head ? head_fwd : 0;
        w.bwd = block ? layer_bwd : head ? head_bwd : 0;
        const int64_t bytes = int64_t(n) * ((slice.units[u] + n - 1) / n) * es;  // padded to n chunks
        // ZeRO-1/2's step gathers stay full precision; ZeRO-3's from the primary partition may be qwZ's int8.
        const int64_t gathered = l.qwz ? qwz_gather_bytes(slice.units[u], n, in.quant_block) : bytes;
        w.gather = collective_seconds("all_gather", gathered, 1, n, shard_link);
        w.gather_bwd = l.hpz > 0 ? collective_seconds("all_gather", bytes, 1, k, bwd_link) : w.gather;
        if (l.qgz) {
            const QgzHops h = qgz_hops(slice.units[u], n, qk, in.qgz_bits, in.quant_block);
            w.reduce = qk == n ? collective_seconds("all_to_all", h.node_bytes, 1, n, shard_a2a_link)
                               : collective_seconds("all_to_all", h.node_bytes, 1, qk, node_link) +
                                     collective_seconds("all_to_all", h.cross_bytes, 1, qm, cross_link);
        } else {
            w.reduce = collective_seconds("reduce_scatter", bytes, 1, n, shard_link);
        }
    }
    if (l.zero == 0) {
        // DDP's buckets (parallel/data_parallel.cpp make_grad_buckets): filled from the end of
        // the flat buffer, each closed once it holds bucket_mb; one start when the units holding
        // it are complete. Naive (bucket_mb 0): one all_reduce per tensor as its unit completes
        // (a block has 12 tensors, the embeddings and ln_f 2 each).
        const double bucket = in.bucket_mb * 1048576.0;
        double filled = 0;
        for (size_t k = units; k-- > 0;) {
            UnitWork& w = s.units[k];
            const double bytes = double(slice.units[k] * es);
            if (bucket <= 0) {
                const int tensors = k > 0 && k + 1 < units ? 12 : 2;
                for (int i = 0; i < tensors; ++i)
                    w.all_reduces.push_back(collective_seconds("all_reduce", int64_t(bytes / tensors), 1, all, dp_link));
                continue;
            }
            filled += bytes;
            for (; filled >= bucket; filled -= bucket)
                w.all_reduces.push_back(collective_seconds("all_reduce", int64_t(bucket), 1, all, dp_link));
            if (k == 0 && filled > 0)
                w.all_reduces.push_back(collective_seconds("all_reduce", int64_t(filled), 1, all, dp_link));
        }
    }
    return s;
}

StageTime stage_time(const PlanInput& in, const MeshShape& mesh, const GbsPlan& gbs, int stage, double rate) {
    // The head multiplies by all Vp rows of the padded wte (model/config.h, padded_vocab).
    const double b = in.mbs, s = in.seq(), h = in.model.C,
                 V = padded_vocab(in.model.V, mesh.tp, in.model.vocab_divisible_by);
    const double split = double(mesh.tp) * mesh.sp;  // TP and SP ranks share each micro-batch's math
    const double layers = stage_layers(in, mesh.pp)[size_t(stage)];
    const double layer_fwd = (24 * b * s * h * h + 4 * b * s * s * h) / split;
    const double core_fwd = 4 * b * s * s * h / split;  // QK^T and scores x V
    const double head_fwd = stage == mesh.pp - 1 ? 2 * b * s * h * V / split : 0;
    const Recompute r = in.layout.recompute;
    // Ring attention's backward recomputes each block's scores (it never stored them), as selective recompute does.
    const bool blockwise = ring_attention(in, mesh);
    // FlashAttention's backward computes QK^T again (Dao et al. 2022, algorithm 4), half the core's
    // forward; O = P V is kept. Ring attention already counts its blocks' recomputation.
    const double flash_redo = flash_recomputes_scores(in, mesh) ? layers * core_fwd / 2 : 0;
    const double redo = (r == Recompute::full                       ? layers * layer_fwd
                         : r == Recompute::selective || blockwise ? layers * core_fwd
                                                                  : 0) +
                        flash_redo;
    StageTime st;
    st.fwd = (layers * layer_fwd + head_fwd) / rate;
    st.bwd = (2 * (layers * layer_fwd + head_fwd) + redo) / rate;
    st.compute = st.fwd + st.bwd;
    const double ga = gbs.ga;
    // A rank with the whole model replays its data-parallel traffic unit by unit (overlap.h).
    st.replayed = mesh.pp == 1 && mesh.dp() * mesh.sp > 1;
    double ring = 0, zero_fwd = 0, zero_bwd = 0, once_fwd = 0, once_bwd = 0;
    for (const CommCall& c : plan_comm(in, mesh, gbs, stage)) {
        if (c.op == "recv") continue;  // a send and its recv cross a duplex link at the same time
        if (st.replayed && replayed_call(c)) continue;
        // Per micro-batch for the per-micro-batch calls; local SGD's sync spread over its H steps.
        const double s = (c.each_microbatch ? c.seconds / ga : c.seconds) / c.every;
        switch (c.overlap) {
            case Overlap::none: (c.each_microbatch ? st.critical : st.step) += s; break;
            case Overlap::attention: ring += s; break;
            case Overlap::pipeline: st.posted += s; break;
            case Overlap::fwd: (c.each_microbatch ? zero_fwd : once_fwd) += s; break;
            case Overlap::bwd: (c.each_microbatch ? zero_bwd : once_bwd) += s; break;
        }
    }
    // Once-per-step traffic hides under one micro-batch: the last backward (gradients)
    // or the next step's first forward (parameters).
    st.dp_once = std::max(0.0, once_fwd - st.fwd) + std::max(0.0, once_bwd - st.bwd);
    // Ring attention passes the next K, V block while it computes on this one.
    const double core = layers * core_fwd * (3 + (r == Recompute::none ? 0 : 1)) / rate;
    st.critical += std::max(0.0, ring - core);
    st.dp = std::max(0.0, zero_fwd - st.fwd) + std::max(0.0, zero_bwd - st.bwd);
    if (st.replayed) {
        // The critical path's traffic runs inside the units' compute: spread it over the blocks.
        const double share = layers > 0 ? st.critical / 2 / layers : 0;
        const double lf = layer_fwd / rate + share, lb = (2 * layer_fwd + redo / layers) / rate + share;
        st.replay = replay_dp_step(dp_step_of(in, mesh, gbs, lf, lb, head_fwd / rate, 2 * head_fwd / rate));
        st.dp = st.replay.exposed_each_mb / ga;
        st.dp_once += st.replay.exposed - st.replay.exposed_each_mb;
    }
    return st;
}

}  // namespace

TimePlan plan_time(const PlanInput& in, const MeshShape& mesh, const GbsPlan& gbs, const MemoryPlan& mem) {
    TimePlan tp;
    const int world = gbs.world;
    // V: the padded Vp, the logits the head computes (Megatron-LM counts padded_vocab_size too).
    const double s = in.seq(), L = in.model.L, h = in.model.C,
                 V = padded_vocab(in.model.V, mesh.tp, in.model.vocab_divisible_by);
    tp.model_flops = narayanan_flops(double(gbs.gbs), s, L, h, V, Recompute::none);
    tp.hw_flops = narayanan_flops(double(gbs.gbs), s, L, h, V, in.layout.recompute);
    if (flash_recomputes_scores(in, mesh))
        tp.hw_flops += double(gbs.gbs) * L * 2 * s * s * h;  // FlashAttention's QK^T again (stage_time)
    double rate = in.hw.flops * in.hw.efficiency;
    if (in.hw.cores > 0 && world > in.hw.cores) rate *= double(in.hw.cores) / world;  // ranks share the cores
    tp.flops_per_s = rate;

    StageTime slow;
    for (int stage : stages_to_plan(in, mesh.pp)) {
        StageTime st = stage_time(in, mesh, gbs, stage, rate);
        if (stage == 0 || st.compute + st.critical + st.dp > slow.compute + slow.critical + slow.dp) slow = st;
    }
    tp.t_compute_mb = slow.compute;
    tp.t_critical_mb = slow.critical;
    tp.t_dp_mb = slow.dp;
    tp.t_mb = slow.compute + slow.critical + slow.dp;
    const int p = mesh.pp, m = gbs.ga;
    const double v = in.layout.schedule == Schedule::interleaved ? in.layout.pp_virtual : 1;
    // Sends and receives posted early (--overlap on) cost nothing in the steady state, where
    // every stage has work while they travel; the fill and the drain wait for each hop.
    tp.t_posted_mb = slow.posted;
    tp.bubble = (p - 1) / v * (tp.t_mb + tp.t_posted_mb);
    tp.bubble_fraction = (p - 1) / (v * m);
    tp.pipeline = m * tp.t_mb + tp.bubble;
    tp.dp_exposed = slow.dp_once;
    tp.step_comm = slow.step;
    // AdamW reads params, grads, master, m, v and writes params, master, m, v:
    // 2+2+4+4+4 + 2+4+4+4 = 30 bytes per element in bf16; 4x4 + 3x4 = 28 in fp32.
    const double per_elem = in.dtype == DType::bf16 ? 30 : 28;
    const double updated = in.layout.zero >= 1 ? double(mem.slice.shard(mem.shard_n)) : double(mem.slice.elems);
    tp.optimizer = updated * per_elem / in.hw.hbm_bw;
    tp.step = tp.pipeline + tp.dp_exposed + tp.step_comm + tp.optimizer;
    tp.tokens_per_s = double(gbs.tokens()) / tp.step;
    tp.mfu = tp.model_flops / (tp.step * world * in.hw.flops);
    return tp;
}

}  // namespace ss
