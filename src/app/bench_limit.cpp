// bench_limit.cpp — bench_limit.h: the sgemm rate, the step's FLOPs, the limit
// they give, and the --profile table.
//
// The model's GEMMs, for B*T = N rows (matmul.cpp, lm_head.cpp):
//
//   layer (C -> OC)     forward  out  = inp W        M x N x K = N  x OC x C
//                       dinp    += dout W^T                      N  x C  x OC   (B read transposed)
//                       dW      += inp^T dout                    C  x OC x N    (A read transposed)
//   head                logits   = x wte^T                       N  x Vp x C    (B transposed)
//                       dx      += dlogits wte                   N  x C  x Vp
//                       dwte    += dlogits^T x                   Vp x C  x N    (A transposed)
//
// with (C, OC) = c_attn (C, 3C), attn c_proj (C, C), c_fc (C, 4C), mlp c_proj (4C, C).
//
// Each shape is timed twice, by sgemm and by the register tiles (gemm.h); the
// limit takes the faster per shape. The model-shapes rate is time-weighted: sum(n_i F_i) / sum(n_i F_i / r_i),
// n_i calls per step, F_i = 2 M N K, r_i the shape's measured rate: the rate
// at which one step's linear layers would run if each GEMM ran as fast as it
// does alone. It is the honest limit for a step whose FLOPs are mostly these
// GEMMs; the attention core's FLOPs (eq. 3's s/(6h) term) are charged at it too.
#include "app/bench_limit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/tile.h"
#include "kernels/profile.h"
#include "plan/time.h"
#include "train/report.h"

namespace ss::app {

std::vector<ModelGemm> model_gemms(const GPT2Config& m, int N, int Vp) {
    std::vector<ModelGemm> g;
    auto layer = [&](const std::string& name, int C, int OC) {
        g.push_back({name + " fwd", {N, OC, C, false, false}, m.L, 0});
        g.push_back({name + " dinp", {N, C, OC, false, true}, m.L, 0});
        g.push_back({name + " dW", {C, OC, N, true, false}, m.L, 0});
    };
    layer("c_attn", m.C, 3 * m.C);
    layer("attn c_proj", m.C, m.C);
    layer("c_fc", m.C, 4 * m.C);
    layer("mlp c_proj", 4 * m.C, m.C);
    g.push_back({"lm_head fwd", {N, Vp, m.C, false, true}, 1, 0});
    g.push_back({"lm_head dx", {N, m.C, Vp, false, false}, 1, 0});
    g.push_back({"lm_head dwte", {Vp, m.C, N, true, false}, 1, 0});
    return g;
}

namespace {
// sum(n F) / sum(n F / rate) over the shapes: the time-weighted rate.
template <class Rate>
double time_weighted_gflops(const std::vector<ModelGemm>& gemms, Rate rate) {
    double flops = 0, time = 0;  // per step, at each shape's rate
    for (const ModelGemm& g : gemms) {
        const double f = g.per_step * 2.0 * g.shape.M * g.shape.N * g.shape.K;
        flops += f;
        time += f / rate(g);
    }
    return flops / time;
}

void weigh(SgemmRates& r) {
    r.model_gflops = time_weighted_gflops(r.gemms, [](const ModelGemm& g) { return g.gflops; });
    r.tile_model_gflops = time_weighted_gflops(r.gemms, [](const ModelGemm& g) { return g.tile_gflops; });
    r.best_model_gflops = time_weighted_gflops(r.gemms, [](const ModelGemm& g) { return g.best_gflops(); });
}
}  // namespace

SgemmRates measure_sgemm_rates(const GPT2Config& m, int N, int Vp, double seconds) {
    SgemmRates r;
    r.square_gflops = cpu::measure_sgemm_gflops({1024, 1024, 1024, false, false}, 3 * seconds);
    r.gemms = model_gemms(m, N, Vp);
    for (ModelGemm& g : r.gemms) {
        g.gflops = cpu::measure_sgemm_gflops(g.shape, seconds);
        g.tile_gflops = cpu::measure_tile_gemm_gflops(g.shape, seconds);
    }
    weigh(r);
    return r;
}

void keep_best(SgemmRates& r, const SgemmRates& again) {
    r.square_gflops = std::max(r.square_gflops, again.square_gflops);
    for (size_t i = 0; i < r.gemms.size() && i < again.gemms.size(); ++i) {
        r.gemms[i].gflops = std::max(r.gemms[i].gflops, again.gemms[i].gflops);
        r.gemms[i].tile_gflops = std::max(r.gemms[i].tile_gflops, again.gemms[i].tile_gflops);
    }
    weigh(r);
}

double host_moved(double a, double b) {
    const double top = std::max(a, b);
    return top > 0 ? std::fabs(a - b) / top : 0.0;
}

double step_flops(const GPT2Config& m, int B, int T, int Vp) {
    // Eq. 3 counts the attention core's products over the whole T x T square:
    // the causal mask's halving is not taken (attention.cpp skips most of the
    // masked half, so it does a little less than this).
    return narayanan_flops(B, T, m.L, m.C, Vp, Recompute::none);
}

double limit_tokens_per_s(double flops, int B, int T, double gflops) {
    return double(B) * T / (flops / (gflops * 1e9));
}

nlohmann::json print_limits(const SgemmRates& rates, double flops, int B, int T, int threads, double ours,
                            double theirs) {
    std::printf("FLOPs per step: 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) = %.4g GFLOP  (Narayanan 2021 eq. 3: "
                "fwd + bwd, no recompute, V = Vp; the causal mask's halving not taken)\n",
                flops / 1e9);
    std::printf("limit = B T / (FLOPs per step / GEMM rate): the step's FLOPs at the GEMM rate, nothing else "
                "costing time; each GEMM timed alone, just before and just after the round's steps, the better\n");
    std::printf("%-64s %9s %14s %11s %9s\n", ("GEMM rate, " + std::to_string(threads) + " thread(s)").c_str(),
                "GFLOP/s", "limit tok/s", "shardscope", "pytorch");
    nlohmann::json j = {{"step_flops", flops}};
    auto row = [&](const char* key, const std::string& label, double gflops) {
        const double limit = limit_tokens_per_s(flops, B, T, gflops);
        char theirs_text[32] = "-";
        if (theirs > 0) std::snprintf(theirs_text, sizeof theirs_text, "%.3f", theirs / limit);
        std::printf("%-64s %9.1f %14.0f %11.3f %9s\n", label.c_str(), gflops, limit, ours / limit, theirs_text);
        j[key] = {{"gflops", gflops}, {"limit_tokens_per_s", limit}, {"shardscope_fraction", ours / limit}};
        if (theirs > 0) j[key]["pytorch_fraction"] = theirs / limit;
    };
    const std::string shapes_text = " (" + std::to_string(rates.gemms.size()) + " shapes, time-weighted)";
    row("square_1024", "sgemm, square 1024^3", rates.square_gflops);
    row("model_shapes_sgemm", "sgemm, model's GEMMs" + shapes_text, rates.model_gflops);
    row("model_shapes_tiles", "tiles, model's GEMMs" + shapes_text, rates.tile_model_gflops);
    row("model_shapes", "the faster per shape, model's GEMMs" + shapes_text, rates.best_model_gflops);
    std::printf("goal: shardscope >= 0.85 of the limit at the faster GEMM per shape (the engine's linear layers run "
                "on %s in this build: cpu::kMatmulOnTiles)\n",
                cpu::kMatmulOnTiles ? "the tiles" : "sgemm");
    nlohmann::json shapes = nlohmann::json::array();
    for (const ModelGemm& g : rates.gemms)
        shapes.push_back({{"name", g.name}, {"M", g.shape.M}, {"N", g.shape.N}, {"K", g.shape.K},
                          {"trans_a", g.shape.trans_a}, {"trans_b", g.shape.trans_b}, {"per_step", g.per_step},
                          {"gflops", g.gflops}, {"tile_gflops", g.tile_gflops}});
    j["model_shapes"]["shapes"] = shapes;
    return j;
}

nlohmann::json print_fma_peak(double peak_gflops, double goal_gflops, double flops, int B, int T, double ours) {
    if (!cpu::kFusedMultiplyAdd) {  // a multiply and an add a step: no peak of the core, and slower than sgemm
        std::printf("this core's FMA peak: not measured by this build, which has no FMA instruction (its chains of "
                    "a multiply and an add ran at %.1f GFLOP/s); a native or x86-64-v3 build measures it\n",
                    peak_gflops);
        return {{"fused", false}, {"gflops", peak_gflops}};
    }
    const double limit = limit_tokens_per_s(flops, B, T, peak_gflops);
    std::printf("this core's FMA peak, %d register-only chains of %d-float multiply-adds (no GEMM runs faster): "
                "%.1f GFLOP/s; the goal's GEMM rate is %.2f of it; shardscope reaches %.3f of the limit at the peak\n",
                cpu::kFmaPeakChains, cpu::kVecFloats, peak_gflops, goal_gflops / peak_gflops, ours / limit);
    return {{"fused", true}, {"gflops", peak_gflops}, {"goal_gemm_vs_peak", goal_gflops / peak_gflops},
            {"limit_tokens_per_s", limit}, {"shardscope_fraction", ours / limit}};
}

std::vector<ProfileRow> profile_rows(const TrainReport& r, int warmup) {
    kern::KernelTimes sum;
    double ms = 0;
    int steps = 0;
    for (size_t i = size_t(std::max(warmup, 0)); i < r.steps.size(); ++i, ++steps) {
        sum += r.steps[i].kernels;
        ms += r.steps[i].ms;
    }
    std::vector<ProfileRow> rows;
    if (steps == 0 || ms <= 0) return rows;
    const double step_ms = ms / steps;
    double kernels_ms = 0;
    for (int k = 0; k < kern::kKernelCount; ++k) {
        ProfileRow row;
        row.kernel = kern::kernel_name(kern::Kernel(k));
        switch (kern::Kernel(k)) {  // the rows whose calls are the 15 shapes of measure_sgemm_rates
            case kern::Kernel::matmul_fwd: case kern::Kernel::matmul_dinp: case kern::Kernel::matmul_dw:
            case kern::Kernel::lm_head_fwd: case kern::Kernel::lm_head_bwd: row.gemm = true; break;
            default: break;
        }
        row.ms_per_step = sum.seconds[size_t(k)] * 1e3 / steps;
        row.share = 100.0 * row.ms_per_step / step_ms;
        row.calls_per_step = double(sum.calls[size_t(k)]) / steps;
        row.flops_per_step = sum.flops[size_t(k)] / steps;
        if (sum.flops[size_t(k)] > 0 && sum.seconds[size_t(k)] > 0)
            row.gflops = sum.flops[size_t(k)] / sum.seconds[size_t(k)] / 1e9;
        kernels_ms += row.ms_per_step;
        rows.push_back(row);
    }
    ProfileRow other;
    other.kernel = "other";
    other.ms_per_step = step_ms - kernels_ms;
    other.share = 100.0 * other.ms_per_step / step_ms;
    rows.push_back(other);
    return rows;
}

nlohmann::json print_profile(const std::vector<ProfileRow>& rows, const SgemmRates& rates, double step_ms,
                             int steps) {
    std::printf("\nprofile: the mean of %d measured steps, %.2f ms (kernels/profile.h; GFLOP/s = the row's model "
                "FLOPs / its time)\n",
                steps, step_ms);
    std::printf("%-16s %10s %8s %9s %10s\n", "kernel", "ms/step", "share", "GFLOP/s", "calls/step");
    nlohmann::json j = {{"step_ms", step_ms}, {"steps", steps}, {"rows", nlohmann::json::array()}};
    for (const ProfileRow& row : rows) {
        char gf[32] = "";
        if (row.gflops > 0) std::snprintf(gf, sizeof gf, "%.1f", row.gflops);
        char calls[32] = "";
        if (row.kernel != "other") std::snprintf(calls, sizeof calls, "%.0f", row.calls_per_step);
        std::printf("%-16s %10.3f %7.1f%% %9s %10s%s\n", row.kernel.c_str(), row.ms_per_step, row.share, gf, calls,
                    row.kernel == "other" ? "  (step minus the kernels: copies, communication, memsets, the loop)"
                                          : "");
        j["rows"].push_back({{"kernel", row.kernel}, {"ms_per_step", row.ms_per_step}, {"share", row.share},
                             {"gflops", row.gflops}, {"calls_per_step", row.calls_per_step},
                             {"flops_per_step", row.flops_per_step}});
    }
    std::printf("%-16s %10.3f %7.1f%%\n", "total", step_ms, 100.0);
    std::printf("alone at the model's shapes, sgemm / tiles (GFLOP/s):");
    for (size_t i = 0; i < rates.gemms.size(); ++i)
        std::printf("%s%s %.1f / %.1f", i % 4 == 0 ? "\n  " : ",  ", rates.gemms[i].name.c_str(),
                    rates.gemms[i].gflops, rates.gemms[i].tile_gflops);
    std::printf("\n");
    // The same GEMMs in the step against alone: the matmul and lm_head rows' FLOPs over their
    // time, beside the goal's rate of those shapes. Alone, a GEMM runs on operands already in
    // cache; in the step they come from L3 or memory, which a shared host's other guests use too.
    double gemm_flops = 0, gemm_ms = 0, flops = 0;
    for (const ProfileRow& row : rows) {
        flops += row.flops_per_step;  // all rows: eq. 3's FLOPs, the limit's
        if (row.gemm) {
            gemm_flops += row.flops_per_step;
            gemm_ms += row.ms_per_step;
        }
    }
    if (gemm_ms > 0 && gemm_flops > 0 && step_ms > 0 && rates.best_model_gflops > 0) {
        const double in_step = gemm_flops / (gemm_ms * 1e6), vs_alone = in_step / rates.best_model_gflops;
        std::printf("the step's GEMMs (matmul and lm_head rows): %.1f GFLOP/s, %.3f of the same shapes alone (%.1f, "
                    "the goal's rate; alone their operands stay in cache, in the step they come from L3 or memory, "
                    "which other guests of a shared host use too)\n",
                    in_step, vs_alone, rates.best_model_gflops);
        // The mean step's fraction of the limit, (F / rate) / step, is exactly the product of three:
        // F / F_gemm (the attention core's FLOPs, which the limit prices at the GEMM rate),
        // the GEMMs' share of the step, and their rate in the step over alone.
        const double over_gemm = flops / gemm_flops, share = gemm_ms / step_ms;
        const double fraction = flops / (rates.best_model_gflops * 1e9) / (step_ms / 1e3);
        std::printf("the mean step's fraction of the limit, %.3f = %.3f (all FLOPs / the GEMMs') x %.3f (the GEMMs' "
                    "share of the step) x %.3f (their rate in the step / alone)\n",
                    fraction, over_gemm, share, vs_alone);
        j["gemm_in_step_gflops"] = in_step;
        j["gemm_alone_gflops"] = rates.best_model_gflops;
        j["gemm_in_step_vs_alone"] = vs_alone;
        j["gemm_share"] = share;
        j["flops_over_gemm_flops"] = over_gemm;
        j["mean_step_fraction"] = fraction;
    }
    return j;
}

}  // namespace ss::app
