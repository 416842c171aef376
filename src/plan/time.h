// time.h — how long one optimizer step takes: compute from FLOPs, the pipeline
// bubble, and the communication that does not hide under compute.
//
// FLOPs (Narayanan et al. 2021, arXiv:2104.04473, sec. 5.1, eq. 3; B = GBS,
// s = T, l = L, h = C, V = vocabulary; matmuls only, 2 FLOPs per multiply-add;
// the planner passes the padded Vp, as many logits as the head computes):
//
//     forward of one layer          24 B s h^2 + 4 B s^2 h
//     logits                        2 B s h V
//     one step, no recompute        72 B s l h^2 (1 + s/(6h) + V/(12 l h))     (fwd + 2x bwd)
//     one step, full recompute      96 B s l h^2 (1 + s/(6h) + V/(16 l h))     (the paper's eq. 3)
//     selective recompute           no recompute + 4 B s^2 h l                 (the attention core again)
//
// One micro-batch on a stage takes t_mb = t_f + t_b: its FLOPs / (peak x
// efficiency), plus the TP, SP and PP traffic on its critical path. A step of
// m = GA micro-batches on p stages (v model chunks each) takes
//
//     (m + (p - 1) / v) x t_mb         bubble fraction (p - 1) / (v m)
//
// (GPipe and 1F1B have the same bubble; interleaving divides it by v.) With
// overlap on, PP's sends and receives are posted early: the steady state hides
// them, the fill and the drain wait for each hop, so the bubble becomes
// (p - 1) / v x (t_mb + t_posted_mb).
//
// Data-parallel traffic hides under compute where it can (Overlap in comm.h).
// A rank holding the whole model (pp = 1) replays its step unit by unit with
// the engine's rules (plan/overlap.h: DDP buckets in the last backward, ZeRO-1/2
// gathers under the next forward, ZeRO-3's prefetch depth and reduce-scatters,
// one queue per group; ZeRO++ qgZ's all-to-alls blocking, as the engine runs
// them); what the rank waits for is added. A pipeline stage keeps the
// aggregate rule: ZeRO-2/3's per-unit traffic under each micro-batch's forward
// or backward (qgZ's on the critical path), gradient buckets (DDP, ZeRO-1,
// replicas) under the last backward, ZeRO-1/2's parameter all-gather under the
// next forward, only what exceeds that compute added. Then the traffic nothing
// hides and the optimizer (memory-bound: ~30 bytes per parameter it updates).
// MFU = model FLOPs (no recompute) / (step time x GPUs x peak) (Chowdhery et al. 2022, app. B).
#pragma once

#include <vector>

#include "mesh/process_mesh.h"
#include "plan/comm.h"
#include "plan/gbs.h"
#include "plan/input.h"
#include "plan/memory.h"

namespace ss {

/// FLOPs of one optimizer step of @p B sequences (Narayanan et al. 2021, eq. 3 and its
/// variants above): matmul FLOPs of forward, backward and what @p recompute redoes.
double narayanan_flops(double B, double s, double l, double h, double V, Recompute recompute);

/// Where the time of one step goes (seconds unless said otherwise).
struct TimePlan {
    double model_flops = 0;    ///< FLOPs of the step without recompute, whole cluster (MFU's numerator)
    double hw_flops = 0;       ///< FLOPs the hardware runs (with recompute)
    double flops_per_s = 0;    ///< what one rank reaches: peak x efficiency (shared cores counted)
    double t_compute_mb = 0;   ///< one micro-batch's forward + backward compute on the slowest stage
    double t_critical_mb = 0;  ///< TP / SP / PP traffic on that micro-batch's critical path
    double t_dp_mb = 0;        ///< per micro-batch data-parallel traffic that did not hide
    double t_mb = 0;           ///< one micro-batch: compute + critical + dp
    double t_posted_mb = 0;    ///< PP send/recv of one micro-batch posted early (--overlap on): the fill and drain wait for it
    double pipeline = 0;       ///< m x t_mb + (p-1)/v x (t_mb + t_posted_mb)
    double bubble = 0;         ///< (p-1)/v x (t_mb + t_posted_mb)
    double bubble_fraction = 0;  ///< (p-1) / (v m)
    double dp_exposed = 0;     ///< once-per-step data-parallel traffic that did not hide under one micro-batch
    double step_comm = 0;      ///< once-per-step traffic nothing hides (tied embeddings, the loss; all of it with overlap off)
    double optimizer = 0;      ///< AdamW over what this rank updates
    double step = 0;           ///< everything: one optimizer step
    double tokens_per_s = 0;   ///< GBS x T / step, whole cluster
    double mfu = 0;            ///< model FLOPs utilisation (0..1)
};

/// The step time of @p in on @p mesh, given the memory plan (for the optimizer's share).
TimePlan plan_time(const PlanInput& in, const MeshShape& mesh, const GbsPlan& gbs, const MemoryPlan& mem);

}  // namespace ss
