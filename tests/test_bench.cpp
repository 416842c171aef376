// test_bench.cpp — the `shardscope bench` commands run and print their tables.
//
// Not timing (the machine is shared and noisy): each command runs on the tiny
// model for a few steps, exits 0, and prints every header and row it promises;
// the --json files hold one row per configuration with positive speeds.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "cli_run.h"
#include "kernels/cpu/matmul_rate.h"
#include "kernels/profile.h"

using Catch::Matchers::Contains;

namespace {
std::string tmp(const std::string& name) { return std::string(SS_BINARY_DIR) + "/test_bench_" + name; }

nlohmann::json read_json(const std::string& path) {
    std::ifstream f(path);
    REQUIRE(f.good());
    return nlohmann::json::parse(f);
}

// How many lines of @p text match @p pattern (ECMAScript, whole line).
size_t count_lines(const std::string& text, const std::string& pattern) {
    std::regex re(pattern);
    size_t n = 0, at = 0;
    while (at < text.size()) {
        size_t end = text.find('\n', at);
        if (end == std::string::npos) end = text.size();
        if (std::regex_match(text.substr(at, end - at), re)) ++n;
        at = end + 1;
    }
    return n;
}
}  // namespace

TEST_CASE("bench dp: one rank, then DDP naive and bucketed, ZeRO-1/2/3 on 2 and 4 ranks", "[cli][bench]") {
    const std::string json = tmp("dp.json");
    CliResult r = run_shardscope("bench dp --model tiny --steps 2 --warmup 1 --rounds 2 --no-torch --json " + json);
    INFO(r.output);
    REQUIRE(r.code == 0);
    REQUIRE_THAT(r.output, Contains("weak scaling: MBS 8 per rank"));
    REQUIRE_THAT(r.output, Contains("config                   ranks   median ms    tokens/s  speed-up  efficiency"));
    // A row: name, ranks, then four numbers (speed-up with an x, efficiency in %).
    const std::string num = R"(\s+[0-9.]+)";
    REQUIRE(count_lines(r.output, "one rank\\s+1" + num + num + num + "x" + num + "%") == 1);
    for (const char* name : {"DDP naive \\(per tensor\\)", "DDP bucketed \\(1 MiB\\)", "ZeRO-1", "ZeRO-2", "ZeRO-3"})
        for (int n : {2, 4}) {
            INFO(name << " at " << n << " ranks");
            REQUIRE(count_lines(r.output, std::string(name) + "\\s+" + std::to_string(n) + num + num + num + "x" +
                                              num + "%.*") == 1);
        }
    // More ranks than cores: the header says so and the rows are marked.
    const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
    REQUIRE_THAT(r.output, Contains("this machine has " + std::to_string(cores) + " cores"));
    REQUIRE(count_lines(r.output, ".*\\(oversubscribed\\)") == (cores < 4 ? 5u : 0u) + (cores < 2 ? 5u : 0u));
    REQUIRE_THAT(r.output, !Contains("pytorch DDP gloo") && !Contains("ratio"));  // --no-torch
    nlohmann::json j = read_json(json);
    REQUIRE(j["scaling"] == "weak");
    REQUIRE(j["rows"].size() == 11);
    for (const auto& row : j["rows"]) {
        REQUIRE(row["tokens_per_s"].get<double>() > 0);
        REQUIRE(row["median_ms"].get<double>() > 0);
    }
    REQUIRE(j["rows"][0]["speedup"].get<double>() == 1.0);  // one rank against itself
    REQUIRE(j["rows"][0]["round_median_ms"].size() == 2);   // one median per round
}

TEST_CASE("bench dp: a world of one is not a comparison", "[cli][bench][errors]") {
    CliResult r = run_shardscope("bench dp --model tiny --steps 1 --warmup 0 --no-torch --ranks 1");
    INFO(r.output);
    REQUIRE(r.code == 1);
    REQUIRE_THAT(r.output, Contains("--ranks 1: bench dp compares N >= 2 ranks with one rank"));
}

TEST_CASE("bench trace: off and on alternated, the overhead, and a trace file", "[cli][bench]") {
    const std::string json = tmp("trace.json"), trace = tmp("trace_out.json");
    std::remove(trace.c_str());
    CliResult r = run_shardscope("bench trace --model tiny --steps 2 --warmup 1 --rounds 2 --trace " + trace +
                                 " --json " + json);
    INFO(r.output);
    REQUIRE(r.code == 0);
    REQUIRE_THAT(r.output, Contains("on 4 ranks (threads backend, DDP naive (per tensor))"));
    REQUIRE_THAT(r.output, Contains("tracing    median ms   faults / step   each run's median ms, in order"));
    const std::string num = R"(\s+[0-9.]+)";
    REQUIRE(count_lines(r.output, "off" + num + num + num + num) == 1);  // median, faults, then one per round
    REQUIRE(count_lines(r.output, "on" + num + num + num + num) == 1);
    REQUIRE_THAT(r.output, Contains("overhead = (on - off) / off = "));
    REQUIRE(read_json(trace)["traceEvents"].size() > 0);  // the traced runs wrote a Chrome trace
    nlohmann::json j = read_json(json);
    REQUIRE(j["off_run_medians_ms"].size() == 2);
    REQUIRE(j["on_run_medians_ms"].size() == 2);
    REQUIRE(j["on_minor_faults_per_step"].size() == 2);
}

TEST_CASE("bench without a subcommand is still the one-rank run; bench comm is wired", "[cli][bench]") {
    CliResult plain = run_shardscope("bench --model tiny --steps 2 --warmup 1 --rounds 1 --no-torch");
    INFO(plain.output);
    REQUIRE(plain.code == 0);
    REQUIRE_THAT(plain.output, Contains("one rank"));
    REQUIRE(count_lines(plain.output, R"(shardscope\s+[0-9.]+\s+[0-9]+\s+\(round 1 of 1, the median round; all 2 steps: .*)") == 1);
    REQUIRE_THAT(plain.output, !Contains("bench dp"));
    // A count of one takes the singular (it printed "1 round(s) of 1 warm-up + 2 measured steps").
    REQUIRE_THAT(plain.output, Contains("1 BLAS thread; 1 round of 1 warm-up + 2 measured steps, median"));

    CliResult comm = run_shardscope("bench comm --ops all_reduce --min-bytes 1024 --max-bytes 4096 --iters 1 --warmup 0");
    INFO(comm.output);
    REQUIRE(comm.code == 0);
    REQUIRE_THAT(comm.output, Contains("all_reduce"));
}

TEST_CASE("bench: the sgemm rate, the limit it gives and --profile's shares, in one run", "[cli][bench]") {
    const std::string json = tmp("plain_profile.json");
    CliResult r = run_shardscope("bench --model tiny --steps 2 --warmup 1 --rounds 2 --no-torch --profile --json " + json);
    INFO(r.output);
    REQUIRE(r.code == 0);
    const std::string num = R"(\s+[0-9.]+)";
    // Two rounds, each against the GEMMs timed around it; of an even count the lower of the middle two is shown.
    REQUIRE(count_lines(r.output, R"(shardscope\s+[0-9.]+\s+[0-9]+\s+\(round [12] of 2, the median round; all 4 steps: median [0-9.]+ ms\))") == 1);
    REQUIRE(count_lines(r.output, R"(rounds, each its steps against the GEMMs timed just before and after them \(the goal's row\): [0-9.]+ [0-9.]+  \(median: round [12]\))") == 1);
    // The host's speed across each round: the goal's rate timed before and after it, and how far it moved
    // (a warning past 10% may or may not follow: it depends on the host, not on the code).
    REQUIRE(count_lines(r.output, R"(the goal's GEMM rate, timed just before / just after each round's steps \(GFLOP/s\): [0-9.]+/[0-9.]+ [0-9.]+/[0-9.]+  \(moved by up to [0-9]+%; the rounds' fractions spread by [0-9]+%\))") == 1);
    REQUIRE(count_lines(r.output, "OpenBLAS core: \\S+ \\(OPENBLAS_CORETYPE .*\\)") == 1);
    REQUIRE(count_lines(r.output, "FLOPs per step: 72 B s l h\\^2 .* = [0-9.e+]+ GFLOP .*") == 1);
    // The rate, the limit and the fraction; PyTorch's column is "-" with --no-torch.
    REQUIRE(count_lines(r.output, "sgemm, square 1024\\^3" + num + num + num + "\\s+-") == 1);
    for (const char* gemm : {"sgemm", "tiles", "the faster per shape"})
        REQUIRE(count_lines(r.output, std::string(gemm) + ", model's GEMMs \\(15 shapes, time-weighted\\)" + num + num +
                                          num + "\\s+-") == 1);
    // The profile: every kernel row, then other and total.
    for (const char* k : {"encoder", "layernorm fwd", "layernorm bwd", "matmul fwd", "matmul dinp", "matmul dW",
                          "attention fwd", "attention bwd", "gelu fwd", "gelu bwd", "residual", "lm_head fwd",
                          "lm_head bwd", "crossentropy", "adamw", "other", "total"}) {
        INFO(k);
        REQUIRE(count_lines(r.output, std::string(k) + num + num + "%.*") == 1);
    }
    nlohmann::json j = read_json(json);
    REQUIRE(j["recompute"] == "none");  // the default: attention saves P
    REQUIRE_FALSE(j["blas_core"].get<std::string>().empty());
    const nlohmann::json& lim = j["limits"];
    REQUIRE(lim["model_shapes"]["shapes"].size() == 15);  // 4 layers x (fwd, dinp, dW) + the head's 3
    // The goal's rate is the faster GEMM shape by shape: at least each one's, at most the faster's (time-weighted).
    const double best = lim["model_shapes"]["gflops"].get<double>();
    REQUIRE(best >= std::max(lim["model_shapes_sgemm"]["gflops"].get<double>(),
                             lim["model_shapes_tiles"]["gflops"].get<double>()) * (1 - 1e-12));
    const double ours = j["shardscope"]["tokens_per_s"].get<double>();
    // The table is the shown round's: its fraction at the goal's row is that round's, the lower of the two.
    REQUIRE(j["rounds"].size() == 2);
    const nlohmann::json& shown = j["rounds"][j["shardscope"]["round"].get<int>() - 1];
    REQUIRE(shown["tokens_per_s"].get<double>() == ours);
    // (1e-12: the same quotient, computed once in the round and once in the table)
    REQUIRE(shown["fraction"].get<double>() == Approx(lim["model_shapes"]["shardscope_fraction"].get<double>()).epsilon(1e-12));
    REQUIRE(shown["fraction"].get<double>() == std::min(j["rounds"][0]["fraction"].get<double>(),
                                                        j["rounds"][1]["fraction"].get<double>()));
    // Each round's two timings of the goal's rate, and the largest move between them, as printed.
    double moved = 0;
    for (const auto& round : j["rounds"]) {
        const double before = round["gflops_before"].get<double>(), after = round["gflops_after"].get<double>();
        REQUIRE(before > 0);
        REQUIRE(after > 0);
        moved = std::max(moved, std::fabs(before - after) / std::max(before, after));
    }
    REQUIRE(j["host_moved"].get<double>() == moved);
    const double f0 = j["rounds"][0]["fraction"].get<double>(), f1 = j["rounds"][1]["fraction"].get<double>();
    REQUIRE(j["fraction_spread"].get<double>() == std::fabs(f0 - f1) / std::max(f0, f1));
    for (const char* key : {"square_1024", "model_shapes_sgemm", "model_shapes_tiles", "model_shapes"}) {
        INFO(key);
        REQUIRE(lim[key]["gflops"].get<double>() > 0);
        REQUIRE(!lim[key].contains("pytorch_fraction"));
        // fraction = tokens/s / limit; limit = B T / (FLOPs / rate). 1e-9: a double's rounding over three operations.
        const double limit = double(j["mbs"].get<int>()) * j["T"].get<int>() / (lim["step_flops"].get<double>() / (lim[key]["gflops"].get<double>() * 1e9));
        REQUIRE(lim[key]["limit_tokens_per_s"].get<double>() == Approx(limit).epsilon(1e-9));
        REQUIRE(lim[key]["shardscope_fraction"].get<double>() == Approx(ours / limit).epsilon(1e-9));
    }
    // The core's FMA peak, and the goal's rate and the engine as fractions of it (1e-9 as above);
    // a build without a fused multiply-add (the sanitizer stages) says it did not measure the peak.
    const nlohmann::json& peak = lim["fma_peak"];
    REQUIRE(peak["gflops"].get<double>() > 0);
    REQUIRE(peak["fused"].get<bool>() == ss::cpu::kFusedMultiplyAdd);
    if (ss::cpu::kFusedMultiplyAdd) {
        REQUIRE(peak["goal_gemm_vs_peak"].get<double>() == Approx(best / peak["gflops"].get<double>()).epsilon(1e-9));
        const double peak_limit = double(j["mbs"].get<int>()) * j["T"].get<int>() / (lim["step_flops"].get<double>() / (peak["gflops"].get<double>() * 1e9));
        REQUIRE(peak["limit_tokens_per_s"].get<double>() == Approx(peak_limit).epsilon(1e-9));
        REQUIRE(peak["shardscope_fraction"].get<double>() == Approx(ours / peak_limit).epsilon(1e-9));
        REQUIRE(count_lines(r.output, "this core's FMA peak, 12 register-only chains of [0-9]+-float multiply-adds.*") == 1);
    } else {
        REQUIRE(count_lines(r.output, "this core's FMA peak: not measured by this build, which has no FMA instruction.*") == 1);
    }
    // The shares are of the mean step and "other" is the rest: they sum to 100 (1e-9: rounding of 16 sums);
    // the printed ones, rounded to 0.1 each, to within 16 x 0.05.
    double share = 0, printed = 0, flops = 0;
    for (const auto& row : j["profile"]["rows"]) {
        share += row["share"].get<double>();
        flops += row["flops_per_step"].get<double>();
    }
    REQUIRE(share == Approx(100.0).epsilon(1e-9));
    REQUIRE(j["profile"]["rows"].size() == size_t(ss::kern::kKernelCount) + 1);  // the kernels and "other"
    for (const auto& row : j["profile"]["rows"]) {  // the table's share column, row by row
        std::smatch m;
        const std::regex re("(^|\n)" + row["kernel"].get<std::string>() + R"(\s+[0-9.]+\s+([0-9.]+)%)");
        REQUIRE(std::regex_search(r.output, m, re));
        printed += std::stod(m[2].str());
    }
    REQUIRE(printed == Approx(100.0).margin(16 * 0.05));
    // The kernels count the model's FLOPs: together exactly eq. 3 (the attention core's full squares
    // included), so the profile and the limit measure the same work. 1e-12: sums of exact products.
    REQUIRE(flops == Approx(lim["step_flops"].get<double>()).epsilon(1e-12));
    // The step's GEMMs against alone: the matmul and lm_head rows' FLOPs over their time, over
    // the goal's rate of the same shapes (the shown round's). 1e-9: a double's rounding of a few sums.
    double gemm_flops = 0, gemm_ms = 0;
    for (const auto& row : j["profile"]["rows"]) {
        const std::string k = row["kernel"].get<std::string>();
        if (k.rfind("matmul", 0) == 0 || k.rfind("lm_head", 0) == 0) {
            gemm_flops += row["flops_per_step"].get<double>();
            gemm_ms += row["ms_per_step"].get<double>();
        }
    }
    const double in_step = gemm_flops / (gemm_ms * 1e6);
    REQUIRE(j["profile"]["gemm_in_step_gflops"].get<double>() == Approx(in_step).epsilon(1e-9));
    REQUIRE(j["profile"]["gemm_alone_gflops"].get<double>() == best);
    REQUIRE(j["profile"]["gemm_in_step_vs_alone"].get<double>() == Approx(in_step / best).epsilon(1e-9));
    REQUIRE(count_lines(r.output, R"(the step's GEMMs \(matmul and lm_head rows\): [0-9.]+ GFLOP/s, [0-9.]+ of the same shapes alone \([0-9.]+, the goal's rate; .*\))") == 1);
    // The mean step's fraction, (F / rate) / step, and the three it is the product of.
    const nlohmann::json& p = j["profile"];
    const double step_ms = p["step_ms"].get<double>();
    REQUIRE(p["gemm_share"].get<double>() == Approx(gemm_ms / step_ms).epsilon(1e-9));
    REQUIRE(p["flops_over_gemm_flops"].get<double>() == Approx(flops / gemm_flops).epsilon(1e-9));
    const double fraction = flops / (best * 1e9) / (step_ms / 1e3);
    REQUIRE(p["mean_step_fraction"].get<double>() == Approx(fraction).epsilon(1e-9));
    REQUIRE(fraction == Approx(p["flops_over_gemm_flops"].get<double>() * p["gemm_share"].get<double>() *
                               p["gemm_in_step_vs_alone"].get<double>()).epsilon(1e-9));
    REQUIRE(count_lines(r.output, R"(the mean step's fraction of the limit, [0-9.]+ = [0-9.]+ \(all FLOPs / the GEMMs'\) x [0-9.]+ \(the GEMMs' share of the step\) x [0-9.]+ \(their rate in the step / alone\))") == 1);
}

TEST_CASE("bench --recompute selective: the tiled attention on one rank, timed as the attention rows",
          "[cli][bench]") {
    const std::string json = tmp("plain_selective.json");
    CliResult r = run_shardscope("bench --model tiny --steps 2 --warmup 1 --rounds 1 --no-torch --profile "
                                 "--recompute selective --json " + json);
    INFO(r.output);
    REQUIRE(r.code == 0);
    REQUIRE_THAT(r.output, Contains("--recompute selective (the tiled attention: no T x T matrix"));
    nlohmann::json j = read_json(json);
    REQUIRE(j["recompute"] == "selective");
    // The blockwise passes are the attention rows (L calls each a step, with time), and the rows' model
    // FLOPs still add up to eq. 3 (the recompute's are not model FLOPs). 1e-12: sums of exact products.
    double flops = 0;
    for (const auto& row : j["profile"]["rows"]) {
        flops += row["flops_per_step"].get<double>();
        const std::string k = row["kernel"].get<std::string>();
        if (k == "attention fwd" || k == "attention bwd") {
            INFO(k);
            REQUIRE(row["calls_per_step"].get<double>() == 2.0);  // tiny: L = 2
            REQUIRE(row["ms_per_step"].get<double>() > 0);
            REQUIRE(row["flops_per_step"].get<double>() > 0);
        }
    }
    REQUIRE(flops == Approx(j["limits"]["step_flops"].get<double>()).epsilon(1e-12));

    // Full recompute would count each block's forward kernels twice against eq. 3's once: refused.
    CliResult full = run_shardscope("bench --model tiny --steps 1 --warmup 0 --rounds 1 --no-torch --recompute full");
    INFO(full.output);
    REQUIRE(full.code != 0);
    REQUIRE_THAT(full.output, Contains("bench --recompute full") && Contains("choose one of those"));
}

TEST_CASE("bench: the OpenBLAS core is named, and Prescott on an AVX2 / AVX-512 CPU gets advice", "[cli][bench]") {
    CliResult prescott = run_shell(std::string("OPENBLAS_NUM_THREADS=1 OPENBLAS_CORETYPE=Prescott ") +
                                   SS_SHARDSCOPE_EXE + " bench --model tiny --steps 1 --warmup 0 --rounds 1 --no-torch");
    INFO(prescott.output);
    REQUIRE(prescott.code == 0);
    REQUIRE_THAT(prescott.output, Contains("OpenBLAS core: Prescott (OPENBLAS_CORETYPE Prescott)"));
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f"))
        REQUIRE_THAT(prescott.output, Contains("note: OpenBLAS runs its generic Prescott (SSE3) kernels on a CPU with "
                                               "AVX-512") && Contains("OPENBLAS_CORETYPE=SkylakeX"));
    else if (__builtin_cpu_supports("avx2"))
        REQUIRE_THAT(prescott.output, Contains("OPENBLAS_CORETYPE=Haswell"));
    else
        REQUIRE_THAT(prescott.output, !Contains("note: OpenBLAS"));
    if (__builtin_cpu_supports("avx2")) {  // a core that this CPU runs: named, and no advice
        CliResult haswell = run_shell(std::string("OPENBLAS_NUM_THREADS=1 OPENBLAS_CORETYPE=Haswell ") +
                                      SS_SHARDSCOPE_EXE + " bench --model tiny --steps 1 --warmup 0 --rounds 1 --no-torch");
        INFO(haswell.output);
        REQUIRE(haswell.code == 0);
        REQUIRE_THAT(haswell.output, Contains("OpenBLAS core: Haswell") && !Contains("note: OpenBLAS"));
    }
#endif
}

TEST_CASE("bench layouts: DP N beside DP N/2 x (SP, TP) 2, ZeRO 0 and 3, GBS halved", "[cli][bench]") {
    const std::string json = tmp("layouts.json");
    // --calibration none: the planner's cpu-local defaults, whatever out/ holds here.
    CliResult r = run_shardscope("bench layouts --model tiny --steps 2 --warmup 1 --rounds 1 --ranks 4 "
                                 "--calibration none --json " + json);
    INFO(r.output);
    REQUIRE(r.code == 0);
    REQUIRE_THAT(r.output, Contains("layout                       zero  DP  GBS  median ms   tokens/s    vs DP "
                                    "planned t/s plan/meas"));
    // A row: name, ZeRO, DP, GBS, then median ms, tokens/s, ratio with an x, the planner's tokens/s and ratio.
    const std::string num = R"(\s+[0-9.]+)";
    for (int z : {0, 3}) {
        const std::string zdp = "\\s+" + std::to_string(z);
        REQUIRE(count_lines(r.output, "DP 4" + zdp + "\\s+4\\s+32" + num + num + num + "x" + num + num) == 1);
        // the control: DP 4 at half the MBS, the GBS of the split layouts
        REQUIRE(count_lines(r.output, "DP 4, MBS 4" + zdp + "\\s+4\\s+16" + num + num + num + "x" + num + num) == 1);
        for (const char* name : {"SP 2 \\(Ulysses\\)", "SP 2 \\(ring\\)", "SP 2 \\(ring, contig\\.\\)", "TP 2",
                                 "TP 2 \\+ Megatron-SP"}) {
            INFO(name << " with ZeRO " << z);
            REQUIRE(count_lines(r.output, std::string("DP 2 x ") + name + zdp + "\\s+2\\s+16" + num + num + num +
                                              "x" + num + num) == 1);
        }
    }
    REQUIRE_THAT(r.output, Contains("load before: ") && Contains("load after: "));
    REQUIRE_THAT(r.output, !Contains("rounds' vs DP"));  // one round: no range column
    REQUIRE_THAT(r.output, Contains("DDP (ZeRO 0) all-reduces in 25 MiB buckets (PyTorch's default is 25"));
    nlohmann::json j = read_json(json);
    REQUIRE(j["bucket_mb"].get<double>() == 25.0);
    REQUIRE_THAT(r.output, Contains("DP 4, MBS 4: the same GBS by a smaller micro-batch"));
    REQUIRE(j["rows"].size() == 14);
    for (const auto& row : j["rows"]) {
        REQUIRE(row["tokens_per_s"].get<double>() > 0);
        REQUIRE(row["planned_tokens_per_s"].get<double>() > 0);
    }
    REQUIRE(j["rows"][0]["vs_dp"].get<double>() == 1.0);  // DP N against itself
    REQUIRE(j["rows"][1]["mbs"].get<int>() == 4);          // the control, against DP N at MBS 8
    REQUIRE(j["rows"][1]["gbs"].get<int>() == 16);
    REQUIRE(j["rows"][0]["mbs"].get<int>() == 8);
}

TEST_CASE("bench layouts --bucket-mb 0: DDP one tensor per call, said in the header and the JSON", "[cli][bench]") {
    const std::string json = tmp("layouts_naive.json");
    CliResult r = run_shardscope("bench layouts --model tiny --steps 1 --warmup 0 --rounds 3 --ranks 2 --zero 0 "
                                 "--bucket-mb 0 --json " + json);
    INFO(r.output);
    REQUIRE(r.code == 0);
    REQUIRE_THAT(r.output, Contains("DDP (ZeRO 0) all-reduces one tensor per call (--bucket-mb 0)"));
    nlohmann::json j = read_json(json);
    REQUIRE(j["bucket_mb"].get<double>() == 0.0);
    REQUIRE(j["rows"].size() == 7);  // DP 2, DP 2 at MBS 4, then DP 1 x (Ulysses, ring, ring contiguous, TP 2,
                                     // TP 2 + Megatron-SP)
    // Round 1 runs the rows as listed, the later rounds each in a shuffled order: every row once a round.
    REQUIRE_THAT(r.output, Contains("each later round in a shuffled order"));
    const auto& orders = j["round_order"];
    REQUIRE(orders.size() == 3);
    std::vector<std::vector<size_t>> runs;
    for (const auto& o : orders) runs.push_back(o.get<std::vector<size_t>>());
    REQUIRE(runs[0] == std::vector<size_t>{0, 1, 2, 3, 4, 5, 6});
    for (std::vector<size_t> o : runs) {
        std::sort(o.begin(), o.end());
        REQUIRE(o == runs[0]);
    }
    REQUIRE((runs[1] != runs[0] || runs[2] != runs[0]));
    for (const auto& row : j["rows"]) REQUIRE(row["round_vs_dp"].size() == 3);
    // More than one round: each row ends in the range of its rounds' ratios to DP N, as the JSON has them.
    REQUIRE_THAT(r.output, Contains("plan/meas  rounds' vs DP"));
    for (const auto& row : j["rows"]) {
        const std::vector<double> v = row["round_vs_dp"].get<std::vector<double>>();
        char range[48];
        std::snprintf(range, sizeof range, "  %.2f-%.2f", *std::min_element(v.begin(), v.end()),
                      *std::max_element(v.begin(), v.end()));
        const std::string name = row["layout"].get<std::string>();
        INFO(name << ": " << range);
        size_t at = r.output.find("\n" + name + " ");
        REQUIRE(at != std::string::npos);
        const std::string line = r.output.substr(at + 1, r.output.find('\n', at + 1) - at - 1);
        REQUIRE(line.size() > std::strlen(range));
        REQUIRE(line.substr(line.size() - std::strlen(range)) == range);
    }
}

// An audit (bench subcommands): with no out/calibration.json, bench layouts named the missing file as its
// calibration, where bench plan and bench overlap say the defaults; its JSON did not say which was used.
TEST_CASE("bench layouts without a calibration file says the defaults, in the header and the JSON", "[cli][bench]") {
    const std::string dir = tmp("no_calibration_here"), json = tmp("layouts_defaults.json");
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);  // no out/calibration.json below it
    CliResult r = run_shell("cd " + dir + " && OPENBLAS_NUM_THREADS=1 " + SS_SHARDSCOPE_EXE +
                            " bench layouts --model tiny --steps 1 --warmup 0 --rounds 1 --ranks 2 --zero 0 --json " +
                            json);
    INFO(r.output);
    REQUIRE(r.code == 0);
    REQUIRE_THAT(r.output, Contains("\n  calibration: defaults measured on the development machine"));
    REQUIRE_THAT(r.output, !Contains("out/calibration.json"));
    REQUIRE_THAT(r.output, Contains("  1 round, each running every layout once (0 warm-up + 1 measured step)"));
    nlohmann::json j = read_json(json);
    REQUIRE(j["calibration"] == "defaults");
    REQUIRE(j["planner_cores"].is_null());  // no calibration's cores_available (was 0)
}

// The same audit: sizes under one element per rank ran as rows of 0 B, and sizes between whole elements
// were rounded down without a word.
TEST_CASE("bench comm: a size under one element per rank is refused; rounded sizes are said once", "[cli][bench]") {
    CliResult tiny = run_shardscope("bench comm --min-bytes 3 --max-bytes 3 --iters 1 --warmup 0");
    INFO(tiny.output);
    REQUIRE(tiny.code == 1);
    // all_gather, reduce_scatter and all_to_all take an element for each of the 2 ranks: 8 bytes of fp32.
    REQUIRE_THAT(tiny.output, Contains("error: bench comm: --min-bytes 3 is under one element per rank: "
                                       "reduce_scatter of fp32 on 2 ranks moves at least 8 bytes (4 bytes an element "
                                       "x 2 ranks); give --min-bytes 8 or more"));
    REQUIRE_THAT(tiny.output, !Contains("memcpy on this machine"));  // refused before any work
    CliResult three = run_shardscope("bench comm --ranks 3 --ops all_gather --min-bytes 1000 --max-bytes 2000 "
                                     "--iters 1 --warmup 0");
    INFO(three.output);
    REQUIRE(three.code == 0);
    REQUIRE(count_lines(three.output, "note: sizes are rounded down to whole fp32 elements per rank.*") == 1);
    REQUIRE_THAT(three.output, Contains("(all_gather: 1000 bytes moves 996 on 3 ranks)"));
    REQUIRE(count_lines(three.output, "all_gather +996 B +83 .*") == 1);
    REQUIRE_THAT(three.output, Contains("median of 1 call after 0 warm-up"));
    CliResult whole = run_shardscope("bench comm --ranks 2 --ops all_gather --min-bytes 1024 --max-bytes 1024 "
                                     "--iters 1 --warmup 0");
    INFO(whole.output);
    REQUIRE(whole.code == 0);
    REQUIRE_THAT(whole.output, !Contains("rounded down"));  // whole elements: nothing to say
}

TEST_CASE("bench layouts at an odd MBS: no half-MBS control row", "[cli][bench]") {
    const std::string json = tmp("layouts_odd_mbs.json");
    CliResult r = run_shardscope("bench layouts --model tiny --mbs 3 --steps 1 --warmup 0 --rounds 1 --ranks 2 "
                                 "--zero 0 --json " + json);
    INFO(r.output);
    REQUIRE(r.code == 0);
    REQUIRE_THAT(r.output, !Contains("MBS 1"));
    nlohmann::json j = read_json(json);
    REQUIRE(j["rows"].size() == 6);
    for (const auto& row : j["rows"]) REQUIRE(row["mbs"].get<int>() == 3);
}

TEST_CASE("bench layouts: an odd world cannot be split in two", "[cli][bench][errors]") {
    CliResult r = run_shardscope("bench layouts --model tiny --steps 1 --warmup 0 --ranks 3");
    INFO(r.output);
    REQUIRE(r.code == 1);
    REQUIRE_THAT(r.output, Contains("--ranks 3: bench layouts splits the world into DP x 2"));
}

TEST_CASE("bench layouts: a negative bucket says its range, as train's does", "[cli][bench][errors]") {
    CliResult r = run_shardscope("bench layouts --model tiny --steps 1 --warmup 0 --bucket-mb -1");
    INFO(r.output);
    REQUIRE(r.code == 1);
    REQUIRE_THAT(r.output, Contains("--bucket-mb -1 is out of range: it must be at least 0 (0: one all-reduce per "
                                    "tensor)"));
}

TEST_CASE("bench layouts --link: the seed's three layouts on emulated links, predicted with them", "[cli][bench]") {
    const std::string json = tmp("layouts_links.json");
    CliResult r = run_shardscope("bench layouts --model tiny --steps 1 --warmup 0 --rounds 1 --ranks 4 --zero 0 "
                                 "--link 50,1 --json " + json);
    INFO(r.output);
    REQUIRE(r.code == 0);
    REQUIRE_THAT(r.output, Contains("EMULATED links (not measured): --link 50,1") &&
                               Contains("only the seed's layouts run (DP, Ulysses, TP: no ring or Megatron-SP rows)") &&
                               Contains("emulated links (not measured): 50 GB/s, 1 us on every link") &&
                               Contains("; EMULATED links"));
    nlohmann::json j = read_json(json);
    REQUIRE(j["rows"].size() == 4);  // DP 4, DP 4 at MBS 4, DP 2 x SP 2 (Ulysses), DP 2 x TP 2
    REQUIRE_THAT(j["emulated_links"].get<std::string>(), Contains("not measured"));
    for (const auto& row : j["rows"]) REQUIRE(row["planned_tokens_per_s"].get<double>() > 0);
}

TEST_CASE("bench layouts: --emulate brings its own links", "[cli][bench][errors]") {
    CliResult r = run_shardscope("bench layouts --model tiny --steps 1 --warmup 0 --emulate h100x4-ib400 --link 1");
    INFO(r.output);
    REQUIRE(r.code == 1);
    REQUIRE_THAT(r.output, Contains("--emulate h100x4-ib400 brings its own links: leave out --link 1"));
}

TEST_CASE("bench overlap: every strategy on and off, measured beside predicted, on emulated links", "[cli][bench]") {
    const std::string json = tmp("overlap.json");
    CliResult r = run_shardscope("bench overlap --model tiny --steps 1 --warmup 1 --ranks 2 --link 5,1 --cost-rounds 1 "
                                 "--json " + json);
    INFO(r.output);
    REQUIRE(r.code == 0);
    // The prediction's sentence, then the calibration on its own line (they ran into one another).
    REQUIRE_THAT(r.output, Contains("for the same run, its compute rate fitted per world size (below)"));
    REQUIRE(count_lines(r.output, "  calibration: .*") == 1);
    REQUIRE_THAT(r.output, Contains("over 1 round of 1 warm-up + 1 step;") &&
                               Contains("DDP, 2 ranks, 1 round alternating"));
    REQUIRE_THAT(r.output, Contains("EMULATED links (not measured): --link 5,1") &&
                               Contains("2 ranks: DDP without emulated links") &&
                               Contains("(b) the machinery's cost, no emulated links"));
    const std::string num = R"(\s+[0-9.]+)";
    for (const char* name : {"DDP \\(bucketed\\)", "ZeRO-1", "ZeRO-2", "ZeRO-3 prefetch 0", "ZeRO-3 prefetch 1",
                             "ZeRO-3 prefetch 2", "PP 2 \\(1F1B, GA 4\\)"})
        for (const char* on : {"off", "on"}) {
            INFO(name << " overlap " << on);
            REQUIRE(count_lines(r.output, std::string(name) + "\\s+2\\s+" + on + " \\|" + num + num + num +
                                              "\\s+[0-9]+% \\|" + num + num + "\\s+-?[0-9.]+\\s+[-+][0-9]+%") == 1);
        }
    nlohmann::json j = read_json(json);
    REQUIRE(j["emulated"].get<bool>());
    // No cores_available from a calibration: null, not 0 (out/calibration.json here may or may not exist).
    REQUIRE((j["calibration"] == "defaults") == j["planner_cores"].is_null());
    REQUIRE(j["rows"].size() == 14);
    for (const auto& row : j["rows"]) {
        REQUIRE(row["step_ms"].get<double>() > 0);
        REQUIRE(row["predicted_step_ms"].get<double>() > 0);
    }
    REQUIRE(j["cost"]["on_traced_ms"].get<double>() > 0);
}

TEST_CASE("bench overlap: world sizes are even, 2 to 8", "[cli][bench][errors]") {
    CliResult r = run_shardscope("bench overlap --model tiny --steps 1 --warmup 0 --ranks 3");
    INFO(r.output);
    REQUIRE(r.code == 1);
    REQUIRE_THAT(r.output, Contains("--ranks 3: give even world sizes from 2 to 8"));
}

TEST_CASE("bench pipeline: PP 1 beside PP 2 and 4 with each schedule, the bubble beside its formula", "[cli][bench]") {
    const std::string json = tmp("pipeline.json");
    CliResult r = run_shardscope("bench pipeline --model tiny --layers 4 --mbs 2 --ga 4 --steps 1 --warmup 1 "
                                 "--rounds 1 --json " + json);
    INFO(r.output);
    REQUIRE(r.code == 0);
    REQUIRE_THAT(r.output, Contains("MBS 2 x GA 4 = 8 sequences (512 tokens) per step, DP 1"));
    // L=4 holds p x v = 4 virtual stages for PP 2, not the 8 PP 4 would need.
    REQUIRE_THAT(r.output, Contains("skipped: PP 4 interleaved v=2: needs p x v = 8 blocks, the model has L=4"));
    const std::string num = R"(\s+[0-9.]+)";
    const std::string measured = R"(\s+-?[0-9.]+)";  // an overhead measured on a loaded machine can be below 0
    REQUIRE(count_lines(r.output, "PP 1\\s+-\\s+1" + num + num + "\\s+1.00x\\s+-\\s+-\\s+-" + num) == 1);
    for (const char* row : {"PP 2\\s+gpipe\\s+2", "PP 2\\s+1f1b\\s+2", "PP 2\\s+interleaved v=2\\s+2",
                            "PP 4\\s+gpipe\\s+4", "PP 4\\s+1f1b\\s+4"}) {
        INFO(row);
        REQUIRE(count_lines(r.output, std::string(row) + num + num + num + "x\\s+[0-9/()x]+ = [0-9.]+" + num +
                                          measured + num) == 1);
    }
    nlohmann::json j = read_json(json);
    REQUIRE(j["rows"].size() == 6);
    const int cores = j["cores"].get<int>();
    for (const auto& row : j["rows"]) {
        INFO(row.dump());
        REQUIRE(row["tokens_per_s"].get<double>() > 0);
        const int p = row["pp"].get<int>();
        const double formula = row["bubble_formula"].get<double>(), predicted = row["predicted_overhead"].get<double>();
        if (p == 1) continue;
        // The formula, from the rows' p, m = GA 4 and v.
        REQUIRE(formula == Approx(double(p - 1) / (4.0 * row["v"].get<int>())));
        // With a core per rank the simulated lists are the formula exactly (forward 1, backward 2, messages
        // free: pipeline_schedule.h); with fewer cores than ranks, idle ranks lend their cores and less is left.
        if (p <= cores) REQUIRE(predicted == Approx(formula).margin(1e-12));
        else REQUIRE(predicted < formula);
    }
    REQUIRE(j["rows"][0]["vs_pp1"].get<double>() == 1.0);  // PP 1 against itself
}

TEST_CASE("bench pipeline: a pipeline needs at least 2 stages and at most L", "[cli][bench][errors]") {
    CliResult r = run_shardscope("bench pipeline --model tiny --pp 4 --steps 1 --warmup 0 --rounds 1");
    INFO(r.output);
    REQUIRE(r.code == 1);
    REQUIRE_THAT(r.output, Contains("--pp 4: a pipeline needs 2 to L=2 stages"));
}

TEST_CASE("bench calibrate writes what plan --hw cpu-local reads", "[cli][bench]") {
    const std::string out = tmp("calibration.json");
    std::remove(out.c_str());
    CliResult r = run_shardscope("bench calibrate --model tiny --steps 2 --warmup 1 --rounds 1 --out " + out);
    INFO(r.output);
    REQUIRE(r.code == 0);
    REQUIRE_THAT(r.output, Contains("field                       value   how"));
    nlohmann::json j = read_json(out);
    for (const char* key : {"matmul_flops", "efficiency", "memory_bandwidth", "comm_busbw", "comm_alpha", "cores",
                            "memory"}) {
        INFO(key);
        REQUIRE(j[key].get<double>() > 0);
        REQUIRE(count_lines(r.output, std::string(key) + "\\s+[0-9.e+-]+\\s+.*") == 1);
    }
    REQUIRE(j["cores"].get<int>() == int(std::max(1u, std::thread::hardware_concurrency())));
    REQUIRE(j["efficiency"].get<double>() <= 1.0);  // the planner accepts (0, 1]; a noisy sgemm must not break it
    REQUIRE(j["cores_available"].get<double>() > 0);
    // The planner takes it: the calibrated label and this file as the source.
    CliResult p = run_shardscope("plan --hw cpu-local --calibration " + out + " --model tiny --gpus 2");
    INFO(p.output);
    REQUIRE(p.code == 0);
    REQUIRE_THAT(p.output, Contains("calibrated"));
}

TEST_CASE("bench plan: the search's time, and predicted against measured step times", "[cli][bench]") {
    const std::string json = tmp("plan.json");
    CliResult r = run_shardscope("bench plan --model tiny --steps 2 --warmup 1 --rounds 1 --search-runs 1 "
                                 "--calibration none --json " + json);
    INFO(r.output);
    REQUIRE(r.code == 0);
    REQUIRE_THAT(r.output, Contains("search          median ms    evaluated        fitting   fastest layout"));
    REQUIRE(count_lines(r.output, R"(512 GPUs\s+[0-9.]+\s+[0-9]+\s+[0-9]+\s+TP .*)") == 1);
    REQUIRE_THAT(r.output, Contains("layout           ranks  predicted ms  measured ms    error"));
    // No calibration file: cpu-local's defaults, said once (it printed "(defaults) (defaults measured ...)").
    REQUIRE_THAT(r.output, Contains("\n  calibration: defaults measured on the development machine"));
    REQUIRE_THAT(r.output, !Contains("(defaults) (defaults"));
    REQUIRE_THAT(r.output, Contains("in-process, 1 run\n") && Contains("  1 round, each running every layout once"));
    const std::string nums = R"(\s+[0-9.]+\s+[0-9.]+\s+[-+][0-9]+%.*)";
    for (const char* name : {"one rank\\s+1", "DP 2\\s+2", "ZeRO-3 x 2\\s+2", "TP 2\\s+2", "SP 2 \\(Ulysses\\)\\s+2",
                             "SP 2 \\(ring\\)\\s+2", "DP 2 x TP 2\\s+4", "ZeRO-1 x 4\\s+4"}) {
        INFO(name);
        REQUIRE(count_lines(r.output, name + nums) == 1);
    }
    nlohmann::json j = read_json(json);
    REQUIRE(j["calibration"] == "defaults");  // as bench layouts and bench overlap write it
    REQUIRE(j["search"]["evaluated"].get<int64_t>() > 1000);
    REQUIRE(j["layouts"].size() == 8);
    for (const auto& row : j["layouts"]) {
        REQUIRE(row["predicted_ms"].get<double>() > 0);
        REQUIRE(row["measured_ms"].get<double>() > 0);
        // The table's "-": without a calibration there is no second prediction (it was 0.0).
        REQUIRE(row["predicted_at_available_cores_ms"].is_null());
    }
    REQUIRE(j["cores_available"].is_null());  // was 0
}

TEST_CASE("bench --calibrate is bench calibrate with its defaults", "[cli][bench]") {
    CliResult r = run_shardscope("bench --help");
    INFO(r.output);
    REQUIRE(r.code == 0);
    REQUIRE_THAT(r.output, Contains("--calibrate"));
    // The footer lists every subcommand with a line of what it does (validate and overlap were missing).
    const size_t at = r.output.find("Subcommands (their flags come after the name");
    REQUIRE(at != std::string::npos);
    const std::string footer = r.output.substr(at);
    for (const char* sub : {"dp", "trace", "comm", "layouts", "calibrate", "plan", "validate", "pipeline", "overlap",
                            "kernels", "gpu"}) {
        INFO(sub);
        REQUIRE(count_lines(footer, std::string("  ") + sub + " +\\S.*") == 1);
    }
}

TEST_CASE("bench kernels: every elementwise kernel beside memcpy, at a step's sizes", "[cli][bench]") {
    const std::string json = tmp("kernels.json");
    CliResult r = run_shardscope("bench kernels --model tiny --mbs 2 --reps 2 --json " + json);
    INFO(r.output);
    REQUIRE(r.code == 0);
    REQUIRE_THAT(r.output, Contains("of copy"));
    for (const char* k : {"gelu_forward", "gelu_backward", "layernorm_forward", "layernorm_backward", "add_inplace",
                          "add_bias", "crossentropy_forward", "adamw_update"})
        REQUIRE(count_lines(r.output, std::string(k) + " .*") == 1);
    const nlohmann::json j = read_json(json);
    REQUIRE(j["kernels"].size() == 8);
    for (const auto& k : j["kernels"]) {
        REQUIRE(k["gb_per_s"].get<double>() > 0);
        REQUIRE(k["memcpy_gb_per_s"].get<double>() > 0);
    }
    REQUIRE(j["cold"] == false);
    REQUIRE_THAT(r.output, Contains("hot: each call finds the arrays"));
    CliResult bad = run_shardscope("bench kernels --model tiny --reps 0");
    REQUIRE(bad.code != 0);
    REQUIRE_THAT(bad.output, Contains("--reps"));
}

TEST_CASE("bench kernels --cold: the caches written over before every timed call, and said so", "[cli][bench]") {
    const std::string json = tmp("kernels_cold.json");
    CliResult r = run_shardscope("bench kernels --model tiny --mbs 2 --reps 1 --cold --cold-mib 2 --json " + json);
    INFO(r.output);
    REQUIRE(r.code == 0);
    REQUIRE_THAT(r.output, Contains("cold: a 2 MiB buffer written before every timed call"));
    const nlohmann::json j = read_json(json);
    REQUIRE(j["cold"] == true);
    REQUIRE(j["kernels"].size() == 8);
    CliResult bad = run_shardscope("bench kernels --model tiny --cold --cold-mib 0");
    REQUIRE(bad.code != 0);
    REQUIRE_THAT(bad.output, Contains("--cold-mib"));
}
