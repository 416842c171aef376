#include "plan/time.h"

#include <algorithm>

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
    double critical = 0;  // TP, SP, PP traffic that nothing hides
    double dp = 0;        // per-micro-batch ZeRO traffic that did not hide
    double dp_once = 0;   // once-per-step data-parallel traffic that did not hide under one micro-batch
    double step = 0;      // the optimizer step's traffic
};

StageTime stage_time(const PlanInput& in, const MeshShape& mesh, const GbsPlan& gbs, int stage, double rate) {
    // The head multiplies by all Vp rows of the padded wte (model/config.h, padded_vocab).
    const double b = in.mbs, s = in.seq(), h = in.model.C,
                 V = padded_vocab(in.model.V, mesh.tp, in.model.vocab_divisible_by);
    const double split = double(mesh.tp) * mesh.sp;  // TP and SP ranks share each micro-batch's math
    const double layers = double(in.model.L) / mesh.pp;
    const double layer_fwd = (24 * b * s * h * h + 4 * b * s * s * h) / split;
    const double core_fwd = 4 * b * s * s * h / split;  // QK^T and scores x V
    const double head_fwd = stage == mesh.pp - 1 ? 2 * b * s * h * V / split : 0;
    const Recompute r = in.layout.recompute;
    // Ring attention's backward recomputes each block's scores (it never stored them), as selective recompute does.
    const bool blockwise = mesh.sp > 1 && in.layout.sp_mode == SpMode::ring;
    const double redo = r == Recompute::full                       ? layers * layer_fwd
                        : r == Recompute::selective || blockwise ? layers * core_fwd
                                                                 : 0;
    StageTime st;
    st.fwd = (layers * layer_fwd + head_fwd) / rate;
    st.bwd = (2 * (layers * layer_fwd + head_fwd) + redo) / rate;
    st.compute = st.fwd + st.bwd;
    const double ga = gbs.ga;
    double ring = 0, zero_fwd = 0, zero_bwd = 0, once_fwd = 0, once_bwd = 0;
    for (const CommCall& c : plan_comm(in, mesh, gbs, stage)) {
        if (c.op == "recv") continue;  // a send and its recv cross a duplex link at the same time
        const double s = c.each_microbatch ? c.seconds / ga : c.seconds;
        switch (c.overlap) {
            case Overlap::none: (c.each_microbatch ? st.critical : st.step) += s; break;
            case Overlap::attention: ring += s; break;
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
    double rate = in.hw.flops * in.hw.efficiency;
    if (in.hw.cores > 0 && world > in.hw.cores) rate *= double(in.hw.cores) / world;  // ranks share the cores
    tp.flops_per_s = rate;

    StageTime slow;
    for (int stage : {0, mesh.pp - 1}) {
        StageTime st = stage_time(in, mesh, gbs, stage, rate);
        if (stage == 0 || st.compute + st.critical + st.dp > slow.compute + slow.critical + slow.dp) slow = st;
        if (mesh.pp == 1) break;
    }
    tp.t_compute_mb = slow.compute;
    tp.t_critical_mb = slow.critical;
    tp.t_dp_mb = slow.dp;
    tp.t_mb = slow.compute + slow.critical + slow.dp;
    const int p = mesh.pp, m = gbs.ga;
    const double v = in.layout.schedule == Schedule::interleaved ? in.layout.pp_virtual : 1;
    tp.bubble = (p - 1) / v * tp.t_mb;
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
