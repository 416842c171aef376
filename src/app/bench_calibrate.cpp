// bench_calibrate.cpp — `shardscope bench calibrate` (also `shardscope bench
// --calibrate`): measures this machine for the planner's `--hw cpu-local`.
//
//   shardscope bench calibrate                      writes out/calibration.json
//   shardscope bench calibrate --out /tmp/c.json --model tiny --steps 2 --warmup 1
//
// The planner (src/plan/hardware.h, docs/formulas.md "Hardware") models one
// rank as one thread: a matmul rate, the fraction of it a training step
// reaches, a memory bandwidth for the optimizer, and an alpha-beta link for
// collectives. Each is measured here the way the planner uses it:
//
//   matmul_flops      2 n^3 / t of one n x n x n product, n = 1024, one thread, best of 7 for
//                     cblas_sgemm and best of timings for the register tiles (kernels/cpu/gemm.h),
//                     the faster of the two: the peak, as the GPU presets quote theirs (in an
//                     AVX-512 build the linear layers run on the tiles, at twice the rate of
//                     OpenBLAS's Haswell kernel; an sgemm-only peak would put efficiency above 1)
//   efficiency        Narayanan FLOPs of one step (plan/time.h narayanan_flops, no recompute)
//                     / (median step of a one-rank run x matmul_flops), at most 1
//   memory_bandwidth  bytes / t of one thread's memcpy of 64 MiB, best of 7 (as bench comm)
//   comm_busbw        median busbw of the threads backend's all_reduce, 2 ranks, 1, 2, 4, 8 MiB (bench comm)
//   comm_alpha        the 1 KiB all_reduce's time / (2 ceil(log2 n)): seconds per hop, n = 2
//   cores, memory     std::thread::hardware_concurrency, physical RAM in bytes
//   cores_available   (not read by the planner) the cores this process gets now: `cores` threads
//                     each running 512^3 sgemms at once, against one thread alone,
//                     cores x t(one) / t(all at once), median of 3; other work on the machine takes
//                     its share. `bench plan` shows the prediction with it in place of `cores`.
//
// Each measurement runs once per round (--rounds, default 3), the rounds one after
// another, so one slow spell does not set a whole field: peaks (sgemm, memcpy) are
// the best over rounds, the rest medians. Those medians still include the load of
// the minutes they ran in: calibrate on the machine as loaded as it will be when
// the prediction is compared (and see cores_available).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cblas.h>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "app/bench.h"
#include "app/bench_comm.h"
#include "app/model_flags.h"
#include "core/atomic_file.h"
#include "core/check.h"
#include "core/output_path.h"
#include "kernels/cpu/blas.h"
#include "kernels/cpu/matmul_rate.h"
#include "plan/hardware.h"
#include "plan/time.h"
#include "train/train.h"

namespace ss::app {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// FLOP/s of C = A B for n x n matrices, one OpenBLAS thread, best of 7 after one untimed call.
// The best, not the median: a median taken in a slow spell of the shared machine once came
// out below what the training step then reached (efficiency 1.27).
double sgemm_flops(int n) {
    cpu::set_blas_threads(1);
    std::vector<float> a(size_t(n) * n, 0.5f), b(size_t(n) * n, 0.25f), c(size_t(n) * n, 0.0f);
    std::vector<double> t;
    for (int k = 0; k < 8; ++k) {
        auto t0 = Clock::now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f,
                    c.data(), n);
        if (k > 0) t.push_back(seconds_since(t0));
    }
    SS_CHECK(c[0] == 0.125f * float(n), "bench calibrate: sgemm gave " << c[0] << ", expected " << 0.125f * n);
    return 2.0 * n * double(n) * n / *std::min_element(t.begin(), t.end());
}

// Bytes/s of one thread's memcpy of @p bytes, best of 7 after one untimed copy.
double memcpy_bandwidth(size_t bytes) {
    std::vector<char> a(bytes, 1), b(bytes, 2);
    std::vector<double> t;
    for (int k = 0; k < 8; ++k) {
        auto t0 = Clock::now();
        std::memcpy(b.data(), a.data(), bytes);
        if (k > 0) t.push_back(seconds_since(t0));
    }
    return double(bytes) / *std::min_element(t.begin(), t.end());
}

// Cores this process gets now: @p cores threads each doing @p reps 512^3 sgemms at once, against
// one thread doing them alone; cores x t(one) / t(all), median of 3 alternations.
double cores_available(int cores, int reps = 6) {
    const int n = 512;
    auto work = [&]() {
        std::vector<float> a(size_t(n) * n, 0.5f), b(size_t(n) * n, 0.25f), c(size_t(n) * n);
        for (int k = 0; k < reps; ++k)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f,
                        c.data(), n);
    };
    cpu::set_blas_threads(1);
    std::vector<double> ratio;
    for (int round = 0; round < 3; ++round) {
        auto t0 = Clock::now();
        work();
        const double one = seconds_since(t0);
        t0 = Clock::now();
        std::vector<std::thread> threads;
        for (int i = 0; i < cores; ++i) threads.emplace_back(work);
        for (std::thread& t : threads) t.join();
        ratio.push_back(cores * one / seconds_since(t0));
    }
    return median(ratio);
}

// The all_reduce rows of `bench comm`'s table: {bytes, time in s, busbw in bytes/s}.
struct CommRow {
    double bytes, seconds, busbw;
};
std::vector<CommRow> all_reduce_rows(int ranks, std::ostream& log) {
    BenchCommOptions o;
    o.ranks = ranks;
    o.ops = {"all_reduce"};
    o.min_bytes = 1024;
    o.max_bytes = 8.0 * 1024 * 1024;
    o.iters = 20;
    o.warmup = 3;
    std::ostringstream text;
    run_bench_comm(o, text);
    log << text.str();
    // op, size (two words: "1.0 KiB"), count, time (us), algbw (GB/s), busbw (GB/s), /memcpy, #wrong
    std::vector<CommRow> rows;
    std::istringstream lines(text.str());
    for (std::string line; std::getline(lines, line);) {
        std::istringstream w(line);
        std::string op, size, unit;
        double count, us, algbw, busbw;
        if (w >> op >> size >> unit >> count >> us >> algbw >> busbw && op == "all_reduce")
            rows.push_back({count * 4, us * 1e-6, busbw * 1e9});  // fp32
    }
    SS_CHECK(rows.size() == 14, "bench calibrate: expected 14 all_reduce sizes from bench comm, read "
                                    << rows.size() << " (did bench comm's table change?)");
    return rows;
}

}  // namespace

int calibrated_cores_available(const std::string& path) {
    if (path == kNoCalibration) return 0;  // the defaults: as for a missing file
    std::ifstream f(path);
    nlohmann::json j = nlohmann::json::parse(f, nullptr, false);
    if (!f || !j.is_object() || !j.contains("cores_available") || !j["cores_available"].is_number()) return 0;
    return std::max(1, int(std::lround(j["cores_available"].get<double>())));
}

std::string calibration_used(const std::string& path) {
    return path != kNoCalibration && std::ifstream(path).good() ? path : "defaults";
}

nlohmann::json run_bench_calibrate(const CalibrateOptions& o) {
    SS_CHECK(o.steps >= 1 && o.warmup >= 0 && o.rounds >= 1,
             "bench calibrate: --steps and --rounds must be >= 1 and --warmup >= 0");
    check_writable_file("--out", o.out);  // found now, not after the measurements
    const GPT2Config& m = o.model;
    std::printf("bench calibrate: this machine for `plan --hw cpu-local`, one thread per rank; writes %s\n",
                o.out.c_str());
    std::printf("  load before: %s\n", load_average().c_str());
    std::fflush(stdout);

    // Every measurement runs once per round, the rounds one after another, so a slow spell of
    // the shared machine falls on one round of each and not on all of one: peaks are the best
    // over the rounds, the rest the median.
    double flops = 0, bandwidth = 0;
    std::vector<double> step_ms, avail, busbw_rounds, alpha_rounds;
    std::ostringstream comm_log;
    TrainReport r;
    for (int round = 0; round < o.rounds; ++round) {
        // 1. The matmul rate and the memory bandwidth of one thread, and the cores we get.
        flops = std::max({flops, sgemm_flops(1024), 1e9 * cpu::measure_tile_gemm_gflops({1024, 1024, 1024}, 0.3)});
        bandwidth = std::max(bandwidth, memcpy_bandwidth(64u << 20));
        avail.push_back(cores_available(machine_cores()));

        // 2. One rank's training step (its Narayanan FLOPs at the matmul rate: below).
        TrainOptions t;
        t.model = m;
        t.mbs = o.mbs;
        t.steps = o.warmup + o.steps;
        t.blas_threads = 1;
        t.quiet = true;
        r = train(t, nullptr);
        for (double ms : measured_steps_ms(r, o.warmup)) step_ms.push_back(ms);

        // 3. The threads backend's all_reduce on 2 ranks (bench comm's table).
        comm_log.str("");
        std::vector<CommRow> ar = all_reduce_rows(2, comm_log);
        std::vector<double> busbw;
        for (const CommRow& c : ar)
            if (c.bytes >= (1 << 20) && c.bytes <= (8 << 20)) busbw.push_back(c.busbw);
        busbw_rounds.push_back(median(busbw));
        alpha_rounds.push_back(ar.front().seconds / (2 * std::ceil(std::log2(2.0))));
        std::printf("  round %d/%d measured\n", round + 1, o.rounds);
        std::fflush(stdout);
    }
    const double step_s = median(step_ms) / 1000.0;
    // One rank: the head multiplies by Vp = padded_vocab(V, 1, D) rows, as the planner counts it.
    const double Vp = padded_vocab(m.V, 1, m.vocab_divisible_by);
    const double step_flops = narayanan_flops(double(r.gbs), r.T, m.L, m.C, Vp, Recompute::none);
    // Above 1 only if the GEMMs ran in a slower spell than the step; the planner accepts (0, 1].
    const double measured_efficiency = step_flops / (step_s * flops);
    const double efficiency = std::min(1.0, measured_efficiency);
    const double comm_busbw = median(busbw_rounds), comm_alpha = median(alpha_rounds);
    const double available = median(avail);

    const double ram = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
    nlohmann::json j = {{"matmul_flops", flops},       {"efficiency", efficiency}, {"memory_bandwidth", bandwidth},
                        {"comm_busbw", comm_busbw},    {"comm_alpha", comm_alpha}, {"cores", machine_cores()},
                        {"memory", ram},         {"cores_available", available}};
    std::printf("%-18s %14s   %s\n", "field", "value", "how");
    std::printf("%-18s %14.3e   FLOP/s: 1024^3, the faster of cblas_sgemm and the tiles, one thread, best per round "
                "(%.1f GFLOP/s)\n",
                "matmul_flops", flops, flops / 1e9);
    std::printf("%-18s %14.3f   %s step, MBS %d, T %d: %.3e FLOPs (Narayanan) in %.2f ms (median of %d)\n",
                "efficiency", efficiency, m.name.c_str(), o.mbs, r.T, step_flops, step_s * 1e3, o.steps * o.rounds);
    if (measured_efficiency > 1)
        std::printf("%-18s %14s   measured %.3f > 1: the GEMMs ran in a slower spell than the step; kept at 1 "
                    "(rerun when the machine is quieter)\n", "", "", measured_efficiency);
    std::printf("%-18s %14.3e   bytes/s: memcpy of 64 MiB, one thread, best of 7 per round (%.2f GB/s)\n",
                "memory_bandwidth", bandwidth, bandwidth / 1e9);
    std::printf("%-18s %14.3e   bytes/s: all_reduce busbw, 2 ranks, median of 1-8 MiB, median of rounds "
                "(%.2f GB/s)\n", "comm_busbw", comm_busbw, comm_busbw / 1e9);
    std::printf("%-18s %14.3e   s: 1 KiB all_reduce / (2 ceil(log2 2)), median of rounds\n", "comm_alpha",
                comm_alpha);
    std::printf("%-18s %14d   std::thread::hardware_concurrency\n", "cores", machine_cores());
    std::printf("%-18s %14.2f   cores this process got just now: %d threads of 512^3 sgemms at once vs one, "
                "median of rounds (not read by the planner)\n", "cores_available", available, machine_cores());
    std::printf("%-18s %14.3e   bytes of RAM (%.1f GB)\n", "memory", ram, ram / 1e9);
    std::printf("  load after: %s\n", load_average().c_str());
    if (o.show_comm) std::cout << "\n" << comm_log.str();
    write_json_file(o.out, j);
    std::printf("wrote %s (`shardscope plan --hw cpu-local` reads it)\n", o.out.c_str());
    std::fflush(stdout);
    return j;
}

void add_bench_calibrate_command(CLI::App& bench) {
    auto* cmd = bench.add_subcommand(
        "calibrate", "Measure this machine (sgemm, memcpy, a one-rank step, all_reduce) for `plan --hw cpu-local`; "
                     "writes out/calibration.json");
    auto o = std::make_shared<CalibrateOptions>();
    auto model = std::make_shared<ModelFlags>(ModelFlags{"small"});
    add_model_flags(*cmd, *model);
    cmd->add_option("--mbs", o->mbs, "Micro-batch size of the measured step")->capture_default_str();
    cmd->add_option("--steps", o->steps, "Measured steps of the one-rank run")->capture_default_str();
    cmd->add_option("--warmup", o->warmup, "Warm-up steps (not measured)")->capture_default_str();
    cmd->add_option("--rounds", o->rounds, "Rounds of every measurement (peaks: best; the rest: median)")
        ->capture_default_str();
    cmd->add_option("--out", o->out, "Where to write the calibration")->capture_default_str();
    cmd->add_flag("--show-comm", o->show_comm, "Also print bench comm's all_reduce table");
    limit_bench_flags(*cmd);
    cmd->callback([o, model]() {
        o->model = model->resolve();
        run_bench_calibrate(*o);
    });
}

}  // namespace ss::app
