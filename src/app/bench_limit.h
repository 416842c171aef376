// bench_limit.h — the yardstick of `shardscope bench` (bench_limit.cpp): how
// fast could one rank train if nothing but its matrix products cost time?
//
//   limit tokens/s = B T / (FLOPs per step / GEMM rate)
//   fraction       = measured tokens/s / limit = FLOPs per step / (step time x GEMM rate)
//
// FLOPs per step: Narayanan et al. 2021 (arXiv:2104.04473), eq. 3 without
// recompute, the planner's narayanan_flops (plan/time.h). The GEMM rate is
// measured in the same run, on the same threads (just before a round's steps
// and just after them, the better per shape: keep_best; bench.cpp runs the
// rounds): sgemm at one square 1024 x 1024 x 1024
// product, and at the model's own GEMMs (model_gemms), each as often as a step
// calls it, by sgemm and by the register tiles (gemm.h). The goal's rate is the
// faster of the two shape by shape: the best this machine is known to do, so
// that a kernel faster than OpenBLAS's raises the bar instead of the fraction.
// docs/formulas.md "The one-rank limit".
//
// With --profile, profile_rows splits the measured steps' time by kernel
// (kernels/profile.h); what the kernels do not account for is "other".
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/cpu/matmul_rate.h"
#include "model/config.h"

namespace ss {
struct TrainReport;
}

namespace ss::app {

/// One of the sgemm calls a step of the model makes, and its measured rate.
struct ModelGemm {
    std::string name;      ///< "c_fc fwd", "c_fc dinp", "c_fc dW", "lm_head dwte", ...
    cpu::SgemmShape shape; ///< M x N x K and which operand is read transposed, as the kernel calls sgemm
    int per_step = 0;      ///< calls per step (L for a block's layer, 1 for the head)
    double gflops = 0;     ///< sgemm's rate, measured (measure_sgemm_rates)
    double tile_gflops = 0;  ///< the register tiles' rate at the same product (gemm.h)
    /// The faster of the two: what this machine's best GEMM here does at this shape.
    double best_gflops() const { return gflops > tile_gflops ? gflops : tile_gflops; }
};

/// The sgemm calls of one step of @p m on B*T = @p N rows (TP 1, no recompute):
/// c_attn, attn c_proj, c_fc and mlp c_proj (matmul.cpp: forward, then dinp and dW)
/// L times each, and the tied head (lm_head.cpp: logits, dx, dwte over @p Vp rows) once.
/// The attention core's per-head products (attention.cpp) are not among them.
std::vector<ModelGemm> model_gemms(const GPT2Config& m, int N, int Vp);

/// This machine's GEMM rates: sgemm on the threads OpenBLAS has now, the tiles on one thread.
struct SgemmRates {
    double square_gflops = 0;      ///< sgemm at 1024 x 1024 x 1024
    double model_gflops = 0;       ///< sgemm, time-weighted over the model's GEMMs: sum(n F) / sum(n F / rate)
    double tile_model_gflops = 0;  ///< the tiles (gemm.h), time-weighted the same way
    double best_model_gflops = 0;  ///< the faster of the two shape by shape, time-weighted: the limit's rate
    std::vector<ModelGemm> gemms;  ///< each with its own rates
};

/// Measures SgemmRates for @p m at B*T = @p N rows and @p Vp words,
/// about @p seconds per shape (cpu::measure_sgemm_gflops).
SgemmRates measure_sgemm_rates(const GPT2Config& m, int N, int Vp, double seconds = 0.1);

/// Keeps, shape by shape, the faster of @p r and @p again (the same shapes measured
/// later) and recomputes the time-weighted rate: load on a shared machine only ever
/// slows a timing, so the best of a timing before the steps and one after them is
/// the closer estimate of what the machine can do.
void keep_best(SgemmRates& r, const SgemmRates& again);

/// FLOPs of one optimizer step of @p B sequences of @p T tokens on @p m with @p Vp logits:
/// narayanan_flops without recompute, 72 B s l h^2 (1 + s/(6h) + V/(12 l h)).
double step_flops(const GPT2Config& m, int B, int T, int Vp);

/// The limit in tokens/s: @p B x @p T tokens a step, the step's @p flops run at @p gflops.
double limit_tokens_per_s(double flops, int B, int T, double gflops);

/// How far a shared host's speed moved between two measurements of the same thing
/// (two timings of the same GEMMs, or two rounds' fractions): |a - b| / max(a, b),
/// 0 when both are 0.
double host_moved(double a, double b);

/// A round whose GEMMs, timed just before and just after its steps, differ by more
/// than this, or rounds whose fractions do, are flagged: the host's speed moved
/// while the steps ran (the fractions can move while the GEMMs alone do not: the
/// step touches memory, which other guests share, far more than a GEMM in cache).
/// 10% is seven times the spread of the same timings on a quiet host (91.2-92.5
/// GFLOP/s over a quiet hour on the Zen 3 host, docs/performance.md) and larger
/// than the distance between the fractions this host measures (0.80-0.86) and the
/// goal's 0.85.
constexpr double kHostMovedWarn = 0.10;

/// Prints the FLOPs, the rates (sgemm square, sgemm / tiles / the faster at the model's shapes), their limits in tokens/s and the fraction that
/// @p ours (and @p theirs, PyTorch's, when positive) reach of each; returns the same as JSON.
nlohmann::json print_limits(const SgemmRates& rates, double flops, int B, int T, int threads, double ours,
                            double theirs);

/// Prints this core's FMA peak (@p peak_gflops, cpu::measure_fma_peak_gflops), the
/// goal's GEMM rate (@p goal_gflops) as a fraction of it, and @p ours (tokens/s) as a
/// fraction of the limit at the peak (@p flops a step of @p B x @p T tokens): how
/// near the goal's limit already is to what the core can do at all. Returns the same
/// as JSON (fused, gflops, goal_gemm_vs_peak, limit_tokens_per_s, shardscope_fraction).
/// A build without a fused multiply-add (cpu::kFusedMultiplyAdd false: the sanitizer
/// builds) times a multiply and an add, no peak of the core and slower than sgemm: it
/// prints that the peak is not measured, with the rate it timed (JSON: fused, gflops).
nlohmann::json print_fma_peak(double peak_gflops, double goal_gflops, double flops, int B, int T, double ours);

/// One row of the --profile table.
struct ProfileRow {
    std::string kernel;     ///< kern::kernel_name, or "other"
    double ms_per_step = 0; ///< mean over the measured steps
    double share = 0;       ///< percent of the mean step
    double gflops = 0;      ///< model FLOPs / time, for the rows that multiply matrices (else 0)
    double calls_per_step = 0;  ///< kern:: calls per step
    double flops_per_step = 0;  ///< model FLOPs per step (kernels/profile.h); summed over the rows: eq. 3
    bool gemm = false;          ///< a linear layer's or the head's GEMM: the shapes the limit's rate is timed at
};

/// The --profile table of the steps of @p r after @p warmup: every kernel row, then
/// "other" = mean step minus the kernels' sum (copies, communication, memsets, the loop).
/// The shares sum to 100.
std::vector<ProfileRow> profile_rows(const TrainReport& r, int warmup);

/// Prints @p rows (and the per-shape rates of @p rates beside them), then the step's GEMMs
/// (the matmul and lm_head rows: their FLOPs over their time) against the same shapes alone
/// (@p rates' best_model_gflops), and the mean step's fraction of the limit as the product
/// of three: all FLOPs / the GEMMs', the GEMMs' share of @p step_ms, their rate in the step
/// over alone. Returns the same as JSON (gemm_in_step_gflops, gemm_alone_gflops,
/// gemm_in_step_vs_alone, gemm_share, flops_over_gemm_flops, mean_step_fraction).
nlohmann::json print_profile(const std::vector<ProfileRow>& rows, const SgemmRates& rates, double step_ms,
                             int steps);

}  // namespace ss::app
