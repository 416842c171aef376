// bench_kernels.cpp — `shardscope bench kernels`: the elementwise kernels beside memcpy.
//
//   shardscope bench kernels                  small, MBS 8: each kernel at the sizes a step uses
//   shardscope bench kernels --model gpt2 --mbs 1
//
// A kernel that does a few operations per element (GELU, LayerNorm, the
// residual add, AdamW) is limited by memory, not arithmetic, once its arrays
// outgrow the caches: the most it can do is move its bytes as fast as memcpy
// moves the same number. So each row is the kernel's bytes (every array it
// reads, plus every array it writes, once each) over its time, beside memcpy's
// rate on the same bytes (half read, half written), timed in the same run:
//
//     GB/s      bytes / time
//     of copy   GB/s / memcpy's GB/s on those bytes: 1.0 is memory speed
//
// Where a plain-loop reference exists (GELU with std::tanh), it is timed too.
// Each figure is the best of --reps calls (the least disturbed by the rest of
// a shared machine). Not a test: a kernel's speed is checked here, by a person
// reading the table (docs/performance.md), never by a timed assertion.
//
// By default the arrays are hot: the call before left them in cache. In a
// training step they are not: a step's saved activations (tens of MiB) outgrow
// the L3, and a kernel reads what was written layers ago. --cold writes a
// buffer of --cold-mib MiB (64: twice this project's machines' 32 MiB L3)
// before every timed call, memcpy's included, so that each starts from memory.
// A change that is faster hot and slower cold is slower in the step (twice so
// for LayerNorm forward: docs/performance.md).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "app/bench.h"
#include "app/flag_range.h"
#include "core/atomic_file.h"
#include "core/output_path.h"
#include "kernels/cpu/adamw.h"
#include "kernels/cpu/crossentropy.h"
#include "kernels/cpu/gelu.h"
#include "kernels/cpu/layernorm.h"
#include "kernels/cpu/residual.h"

namespace ss::app {

namespace {

using Clock = std::chrono::steady_clock;

struct KernelBenchFlags {
    ModelFlags model{"small"};
    int mbs = 8, seq = 0, reps = 20;
    bool cold = false;
    int cold_mib = 64;
    std::string json;
};

// The best time of @p reps calls of @p f, in seconds; @p evict (if set) runs before each.
double best_seconds(int reps, const std::function<void()>& f, const std::function<void()>& evict) {
    f();  // warm: pages touched, caches as a step leaves them
    double best = 1e30;
    for (int r = 0; r < reps; ++r) {
        if (evict) evict();
        const auto t0 = Clock::now();
        f();
        best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
    }
    return best;
}

// Values a model's activations take: small, both signs, no two alike in a row.
std::vector<float> filled(size_t n, float scale) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = scale * float(int(i * 2654435761u % 2001) - 1000) / 1000.0f;
    return v;
}

struct Row {
    std::string kernel, shape;
    double bytes, seconds, copy_seconds, reference_seconds;  // reference_seconds 0: none
};

void run_bench_kernels(const KernelBenchFlags& f) {
    if (!f.json.empty()) check_writable_file("--json", f.json);  // found now, not after the runs
    const GPT2Config m = f.model.resolve();
    const int T = f.seq > 0 ? f.seq : m.maxT;
    const int N = f.mbs * T, C = m.C, F = 4 * m.C, Vp = padded_vocab(m.V, 1, m.vocab_divisible_by);
    const long nF = long(N) * F, nC = long(N) * C;
    const long P = long(num_params(m));
    std::cout << "bench kernels: " << m.name << " (C=" << C << " V=" << m.V << "), MBS " << f.mbs << ", T " << T
              << ": each elementwise kernel at a step's sizes, one thread, best of "
              << count_of(f.reps, "call") << "; bytes = arrays read + arrays written, each once\n"
              << (f.cold ? "  cold: a " + std::to_string(f.cold_mib) +
                               " MiB buffer written before every timed call (memcpy's too): the arrays come from memory\n"
                         : std::string("  hot: each call finds the arrays where the call before left them (--cold: from memory)\n"));
    std::vector<char> junk(f.cold ? size_t(f.cold_mib) << 20 : 0);
    std::function<void()> evict;
    if (f.cold)
        evict = [&junk] {  // one write a cache line: every line of the buffer passes through the caches
            for (size_t i = 0; i < junk.size(); i += 64) junk[i] = char(junk[i] + 1);
        };

    std::vector<float> a = filled(size_t(std::max({nF, long(N) * Vp, P})), 3.0f);
    std::vector<float> b = filled(a.size(), 1.0f), out(a.size()), acc(a.size());
    const size_t nrows = static_cast<size_t>(N), cols = static_cast<size_t>(C), params = static_cast<size_t>(P);
    std::vector<float> w = filled(cols, 1.0f), bias = filled(static_cast<size_t>(F), 0.1f);
    std::vector<float> mean(nrows), rstd(nrows), dw(cols), db(cols), losses(nrows);
    std::vector<int> targets(nrows);
    for (int i = 0; i < N; ++i) targets[size_t(i)] = i % m.V;
    std::vector<float> mom(params), var(params, 1e-4f);
    std::vector<char> src, dst;  // memcpy's buffers, grown to each row's bytes

    auto copy_of = [&](double bytes) {  // memcpy moving @p bytes: half read, half written
        const size_t half = size_t(bytes / 2);
        if (src.size() < half) {
            src.assign(half, 1);
            dst.assign(half, 2);
        }
        return best_seconds(f.reps, [&] { std::memcpy(dst.data(), src.data(), half); }, evict);
    };
    std::vector<Row> rows;
    auto add = [&](std::string kernel, std::string shape, double bytes, const std::function<void()>& fast,
                   const std::function<void()>& reference) {
        Row r{std::move(kernel), std::move(shape), bytes, best_seconds(f.reps, fast, evict), copy_of(bytes), 0.0};
        if (reference) r.reference_seconds = best_seconds(std::max(1, f.reps / 4), reference, evict);
        rows.push_back(r);
    };
    const std::string sF = std::to_string(N) + " x " + std::to_string(F);
    const std::string sC = std::to_string(N) + " x " + std::to_string(C);
    add("gelu_forward", sF, 2.0 * 4 * nF, [&] { cpu::gelu_forward(out.data(), a.data(), nF); },
        [&] { cpu::gelu_forward_reference(out.data(), a.data(), nF); });
    add("gelu_backward", sF, 4.0 * 4 * nF, [&] { cpu::gelu_backward(acc.data(), a.data(), b.data(), nF); },
        [&] { cpu::gelu_backward_reference(acc.data(), a.data(), b.data(), nF); });
    add("layernorm_forward", sC, 2.0 * 4 * nC,
        [&] { cpu::layernorm_forward(out.data(), mean.data(), rstd.data(), a.data(), w.data(), w.data(), N, C); }, {});
    add("layernorm_backward", sC, 4.0 * 4 * nC,
        [&] {
            cpu::layernorm_backward(acc.data(), dw.data(), db.data(), b.data(), a.data(), w.data(), mean.data(),
                                    rstd.data(), N, C);
        },
        {});
    add("add_inplace (residual)", sC, 3.0 * 4 * nC, [&] { cpu::add_inplace(acc.data(), a.data(), nC); }, {});
    add("add_bias", sF, 2.0 * 4 * nF, [&] { cpu::add_bias(acc.data(), bias.data(), N, F); }, {});
    add("crossentropy_forward", std::to_string(N) + " x " + std::to_string(Vp), 2.0 * 4 * N * Vp,
        [&] { cpu::crossentropy_forward(losses.data(), out.data(), a.data(), targets.data(), N, m.V, Vp); }, {});
    const cpu::AdamWParams hp{};
    int t = 1;
    add("adamw_update", std::to_string(P) + " params", 7.0 * 4 * P,
        [&] { cpu::adamw_update(acc.data(), b.data(), mom.data(), var.data(), P, t++, hp); }, {});

    std::printf("%-24s %-14s %10s %10s %9s %9s %9s\n", "kernel", "shape", "MB", "us", "GB/s", "of copy",
                "vs ref");
    nlohmann::json js = nlohmann::json::array();
    for (const Row& r : rows) {
        const double gbs = r.bytes / r.seconds / 1e9, copy = r.bytes / r.copy_seconds / 1e9;
        char ref[32] = "-";
        if (r.reference_seconds > 0) std::snprintf(ref, sizeof ref, "%.1fx", r.reference_seconds / r.seconds);
        std::printf("%-24s %-14s %10.2f %10.1f %9.1f %9.2f %9s\n", r.kernel.c_str(), r.shape.c_str(), r.bytes / 1e6,
                    r.seconds * 1e6, gbs, gbs / copy, ref);
        nlohmann::json j = {{"kernel", r.kernel}, {"shape", r.shape},         {"bytes", r.bytes},
                            {"us", r.seconds * 1e6}, {"gb_per_s", gbs},       {"memcpy_gb_per_s", copy}};
        if (r.reference_seconds > 0) j["reference_us"] = r.reference_seconds * 1e6;
        js.push_back(j);
    }
    std::cout << "of copy: the kernel's GB/s over memcpy's on the same bytes (1.0: memory speed); "
                 "vs ref: the plain-loop reference's time over the kernel's\n"
              << std::flush;
    if (!f.json.empty())
        write_json_file(f.json, {{"model", m.name}, {"mbs", f.mbs}, {"T", T}, {"cold", f.cold}, {"kernels", js}});
}

}  // namespace

void add_bench_kernels_command(CLI::App& bench) {
    auto* cmd = bench.add_subcommand("kernels", "The elementwise kernels at a step's sizes, beside memcpy");
    auto f = std::make_shared<KernelBenchFlags>();
    add_model_flags(*cmd, f->model);
    cmd->add_option("--mbs", f->mbs, "Micro-batch size (rows = MBS x T)")->capture_default_str();
    cmd->add_option("--seq", f->seq, "Sequence length (default: the model's maxT)");
    cmd->add_option("--reps", f->reps, "Timed calls per kernel (the best is shown)")->capture_default_str();
    cmd->add_flag("--cold", f->cold,
                  "Write a --cold-mib buffer before every timed call, so the arrays come from memory, as in a step "
                  "whose activations outgrew the L3 (default: hot, in cache)");
    cmd->add_option("--cold-mib", f->cold_mib, "MiB written before each call under --cold (at least the L3)")
        ->capture_default_str();
    cmd->add_option("--json", f->json, "Write the results here");
    limit_bench_flags(*cmd);
    limit(*cmd, "--reps", at_least(1));
    limit(*cmd, "--cold-mib", at_least(1, 65536));
    cmd->callback([f] { run_bench_kernels(*f); });
}

}  // namespace ss::app
