// bench.cpp — `shardscope bench`: training speed, measured beside PyTorch.
//
//   shardscope bench                     small, MBS 8, one rank, one thread, vs PyTorch
//   shardscope bench --model tiny --steps 5 --no-torch
//   shardscope bench --calibrate         measure this machine for the planner (= bench calibrate)
//   shardscope bench dp | trace | comm | layouts | calibrate | plan | validate | pipeline | overlap | kernels | gpu
//                                        (bench.h lists their files)
//
// Machines here are noisy, so the figure that matters is the RATIO of this
// engine's tokens/s to PyTorch's on the same model, batch and machine,
// measured in the same run (Debian's python3-torch, eager, OpenBLAS). Each side
// runs warm-up steps that are not counted and reports the median step.
//
// Beside it, the yardstick of the goal (bench_limit.h): this machine's sgemm
// rate, measured in the same process, the model's FLOPs per step, and the
// fraction of the limit they give that each side reaches; the header names the
// OpenBLAS kernels in use. --profile splits the step by kernel.
//
// The steps run in --rounds rounds, and the GEMMs are timed between them:
//
//   G0  steps 1  G1  steps 2  G2  steps 3  G3  [PyTorch  G4]
//
// Each round's steps are held against the GEMM rates timed just before and
// just after them (the better of the two per shape): on a shared host the
// speed moves within minutes, so a rate and a step time taken minutes apart
// give a fraction that says more about the host than about the engine. The
// table prints the median round (of an even count, the lower of the middle
// two), and a line lists every round's fraction.
#include "app/bench.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>

#include "app/bench_comm.h"
#include "app/commands.h"
#include "app/bench_limit.h"
#include "app/flag_range.h"
#include "app/layout_flags.h"
#include "app/model_flags.h"
#include "core/atomic_file.h"
#include "core/check.h"
#include "core/output_path.h"
#include "kernels/cpu/blas.h"
#include "kernels/cpu/matmul_rate.h"
#include "train/train.h"

namespace ss::app {

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n == 0 ? 0.0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

std::vector<double> measured_steps_ms(const TrainReport& r, int warmup) {
    std::vector<double> ms;
    for (size_t i = size_t(std::max(warmup, 0)); i < r.steps.size(); ++i) ms.push_back(r.steps[i].ms);
    return ms;
}

std::string torch_model_args(const GPT2Config& m, int T, int mbs, int steps, int warmup, int threads) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "--layers %d --dim %d --heads %d --vocab %d --seq %d --mbs %d --steps %d "
                  "--warmup %d --threads %d", m.L, m.C, m.H, m.V, T, mbs, steps, warmup, threads);
    return buf;
}

namespace {
/// @p s as one word of a POSIX shell command: in single quotes, each ' written '\''.
std::string shell_quoted(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}
}  // namespace

nlohmann::json run_torch_script(const std::string& script, const std::string& args, int threads, std::string* why) {
    auto failed = [&](const std::string& reason) {
        if (why != nullptr) *why = reason;
        return nlohmann::json(nullptr);
    };
    if (!std::ifstream(script).good()) return failed("no script at " + script);
    // The script's stderr goes to a file of its own, so its last line can say why it failed: a fresh
    // file in the temporary folder ($TMPDIR, else /tmp), mkstemp replacing the template's six Xs.
    std::error_code ec;
    std::string err_path = (std::filesystem::temp_directory_path(ec) / "shardscope-torch-XXXXXX").string();
    const int fd = ec ? -1 : mkstemp(err_path.data());
    if (fd < 0) return failed("cannot create a temporary file for its stderr");
    close(fd);
    const std::string cmd = "OPENBLAS_NUM_THREADS=" + std::to_string(threads) + " " + kBenchPython + " " +
                            shell_quoted(script) + " " + args + " 2>" + shell_quoted(err_path);
    std::string text;
    int status = -1;
    if (FILE* pipe = popen(cmd.c_str(), "r")) {
        char buf[4096];
        while (size_t n = fread(buf, 1, sizeof buf, pipe)) text.append(buf, n);
        status = pclose(pipe);
    }
    std::string last, line;
    for (std::ifstream err(err_path); std::getline(err, line);)
        if (line.find_first_not_of(" \t") != std::string::npos) last = line;
    std::remove(err_path.c_str());
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_object()) return j;
    if (!last.empty()) return failed(script + ": " + last.substr(last.find_first_not_of(" \t")));
    return failed(script + " printed no JSON (exit status " + std::to_string(status) + ")");
}

std::string count_of(long long n, const std::string& noun) {
    return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

int machine_cores() { return std::max(1u, std::thread::hardware_concurrency()); }

std::string load_average() {
    std::ifstream f("/proc/loadavg");
    std::string one, five, fifteen;
    if (!(f >> one >> five >> fifteen)) return "?";
    return one + " " + five + " " + fifteen;
}

void add_bench_run_flags(CLI::App& cmd, ModelFlags& model, int& mbs, int& seq, int& steps, int& warmup, int& rounds,
                         const std::string& each, const std::string& mbs_help, const std::string& rounds_help) {
    add_model_flags(cmd, model);
    cmd.add_option("--mbs", mbs, mbs_help)->capture_default_str();
    cmd.add_option("--seq", seq, "Sequence length (default: the model's maxT)");
    cmd.add_option("--steps", steps, "Measured steps per " + each)->capture_default_str();
    cmd.add_option("--warmup", warmup, "Warm-up steps per " + each + " (not measured)")->capture_default_str();
    cmd.add_option("--rounds", rounds, rounds_help)->capture_default_str();
}

void limit_bench_flags(CLI::App& cmd) {
    auto has = [&](const char* flag) { return cmd.get_option_no_throw(flag) != nullptr; };
    for (const char* n : {"--mbs", "--seq", "--steps", "--rounds", "--search-runs", "--iters", "--ga", "--cost-rounds"})
        if (has(n)) limit(cmd, n, at_least(1));
    if (has("--warmup")) limit(cmd, "--warmup", at_least(0));
    if (has("--threads")) limit(cmd, "--threads", at_least(1, kMaxBlasThreads));
    if (has("--ranks")) limit(cmd, "--ranks", at_least(1, kMaxThreadRanks), "the threads backend runs every rank in this process");
    if (has("--zero")) limit(cmd, "--zero", at_least(0, 3));
    for (const char* axis : {"--pp", "--pp-virtual"})
        if (has(axis)) limit(cmd, axis, at_least(1));
    if (has("--bucket-mb")) limit(cmd, "--bucket-mb", at_least(0), "0: one all-reduce per tensor");
    if (has("--comm-timeout")) limit(cmd, "--comm-timeout", above(0, 1e6), "seconds; 1e6 is 11 days, more than any call should wait");
}

namespace {

// Refuses the flags given to `bench` itself when its subcommand @p sub runs: they are plain
// bench's (the one-rank run), so `bench --model tiny trace` would run trace on its default model.
void refuse_flags_before_subcommand(const CLI::App& bench, const CLI::App& sub) {
    std::string given, moved, unknown;  // every flag typed before the name; those sub has; those it lacks
    for (const CLI::Option* opt : bench.get_options()) {
        if (opt->count() == 0 || opt == bench.get_help_ptr()) continue;
        const std::string flag = opt->get_name();  // its long name, "--model"
        given += (given.empty() ? "" : ", ") + flag;
        if (sub.get_option_no_throw(flag) != nullptr) moved += " " + flag + " ...";
        else unknown += (unknown.empty() ? "" : ", ") + flag;
    }
    if (given.empty()) return;
    const std::string cmd = "shardscope bench " + sub.get_name();
    std::ostringstream msg;
    msg << "bench: " << given << (given.find(',') == std::string::npos ? " was" : " were")
        << " given before the subcommand `" << sub.get_name() << "`";
    if (!moved.empty()) msg << "; put the subcommand's options after its name: " << cmd << moved;
    if (!unknown.empty()) msg << "; `" << cmd << "` has no " << unknown << ": leave it out (`" << cmd
                              << " --help` lists its flags)";
    SS_FAIL(msg.str());
}

struct BenchFlags {
    ModelFlags model{"small"};
    int mbs = 8, seq = 0, steps = 20, warmup = 3, threads = 1, rounds = 3;
    bool no_torch = false, calibrate = false, profile = false;
    Recompute recompute = Recompute::none;  ///< none: attention saves P; selective: the tiled kernels, no T x T
    std::string torch_script = SS_SOURCE_DIR "/bench/torch_gpt2.py";
    std::string json;
};

/// One round of the one-rank bench: its steps and the GEMM rates timed around them.
struct BenchRound {
    TrainReport report;
    std::vector<double> ms;  ///< the measured steps (after the warm-up)
    double median_ms = 0, tokens_per_s = 0;
    SgemmRates rates;     ///< the better, per shape, of the timings just before and just after the steps
    double fraction = 0;  ///< tokens_per_s over the limit at rates.best_model_gflops (the goal's row)
    double before_gflops = 0, after_gflops = 0;  ///< the goal's rate timed just before, and just after, the steps
};

void run_bench(const BenchFlags& f) {
    if (!f.json.empty()) check_writable_file("--json", f.json);  // found now, not after the runs
    TrainOptions o;
    o.model = f.model.resolve();
    o.T = f.seq;
    o.mbs = f.mbs;
    o.steps = f.warmup + f.steps;
    o.blas_threads = f.threads;
    o.quiet = true;
    o.profile = f.profile;
    // Full recompute runs each block's forward twice: its kernels would count their FLOPs
    // twice in --profile, and eq. 3 (the limit's FLOPs) counts them once.
    SS_CHECK(f.recompute != Recompute::full,
             "bench --recompute full: the one-rank bench measures none (attention saves its T x T probabilities) "
             "or selective (the tiled attention, which recomputes them); choose one of those");
    o.recompute = f.recompute;
    const int Vp = padded_vocab(o.model.V, 1, o.model.vocab_divisible_by);
    const int T = check_train_options(o).T;  // bad flags fail here, before the sgemm timings
    std::cout << "bench: training steps of " << o.model.name << " (L=" << o.model.L << " C=" << o.model.C
              << " H=" << o.model.H << " V=" << o.model.V << "), MBS " << f.mbs << ", one rank, "
              << count_of(f.threads, "BLAS thread") << "; " << count_of(f.rounds, "round") << " of " << f.warmup
              << " warm-up + " << count_of(f.steps, "measured step") << ", median; --recompute "
              << recompute_name(f.recompute)
              << (f.recompute == Recompute::selective
                      ? " (the tiled attention: no T x T matrix, its probabilities recomputed in backward; "
                        "the limit counts eq. 3's FLOPs, without the recompute's)"
                      : " (attention saves its T x T probabilities for backward, as PyTorch's eager twin does)")
              << "\n";
    const char* coretype = std::getenv("OPENBLAS_CORETYPE");
    const std::string core = cpu::blas_core_name(), advice = cpu::blas_core_advice();
    std::cout << "OpenBLAS core: " << core << " (OPENBLAS_CORETYPE " << (coretype ? coretype : "unset") << ")\n";
    if (!advice.empty()) std::cout << "note: " << advice << "\n";
    std::cout << std::flush;
    const double flops = step_flops(o.model, f.mbs, T, Vp);
    auto time_gemms = [&] {
        cpu::set_blas_threads(f.threads);  // the rate of the threads the step gets
        return measure_sgemm_rates(o.model, f.mbs * T, Vp);
    };
    auto limit_of = [&](double gflops) { return limit_tokens_per_s(flops, f.mbs, T, gflops); };

    // G0, then each round's steps and the timing after them (the next round's "before").
    double fma_peak = cpu::measure_fma_peak_gflops();  // before and after the rounds, the better
    SgemmRates before = time_gemms();
    std::vector<BenchRound> rounds(size_t(f.rounds));
    for (BenchRound& round : rounds) {
        round.report = train(o, nullptr);
        SgemmRates after = time_gemms();
        round.ms = measured_steps_ms(round.report, f.warmup);
        round.median_ms = median(round.ms);
        round.tokens_per_s = double(f.mbs) * round.report.T / (round.median_ms / 1000.0);
        round.before_gflops = before.best_model_gflops;
        round.after_gflops = after.best_model_gflops;
        round.rates = before;
        keep_best(round.rates, after);
        round.fraction = round.tokens_per_s / limit_of(round.rates.best_model_gflops);
        before = std::move(after);
    }
    // The median round by the goal's fraction; of an even count, the lower of the middle two.
    std::vector<size_t> order(rounds.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return rounds[a].fraction < rounds[b].fraction; });
    const size_t mid = order[(order.size() - 1) / 2];
    const BenchRound& shown = rounds[mid];
    std::vector<double> all_ms;
    for (const BenchRound& round : rounds) all_ms.insert(all_ms.end(), round.ms.begin(), round.ms.end());

    // PyTorch after the rounds, with its own timing after it: its steps against G_R and G_R+1.
    std::string torch_why;  // why it was not measured, when it was not
    nlohmann::json torch =
        f.no_torch ? nlohmann::json(nullptr)
                   : run_torch_script(f.torch_script,
                                      torch_model_args(o.model, shown.report.T, f.mbs, f.steps, f.warmup, f.threads),
                                      f.threads, &torch_why);
    double theirs = 0, theirs_fraction = 0;
    if (torch.is_object()) {
        theirs = torch["tokens_per_s"].get<double>();
        SgemmRates torch_rates = before;
        keep_best(torch_rates, time_gemms());
        theirs_fraction = theirs / limit_of(torch_rates.best_model_gflops);
    }

    char line[256];
    std::printf("%-22s %12s %14s\n", "engine", "median ms", "tokens/s");
    std::printf("%-22s %12.2f %14.0f   (round %zu of %d, the median round; all %zu steps: median %.2f ms)\n",
                "shardscope", shown.median_ms, shown.tokens_per_s, mid + 1, f.rounds, all_ms.size(), median(all_ms));
    nlohmann::json out = {{"model", o.model.name}, {"mbs", f.mbs}, {"T", shown.report.T}, {"threads", f.threads},
                          {"recompute", recompute_name(f.recompute)},
                          {"blas_core", core}, {"openblas_coretype", coretype ? coretype : ""},
                          {"blas_core_advice", advice}, {"rounds", nlohmann::json::array()},
                          {"shardscope",
                           {{"median_ms", shown.median_ms}, {"tokens_per_s", shown.tokens_per_s}, {"round", mid + 1},
                            {"step_ms", shown.ms}, {"all_rounds_median_ms", median(all_ms)}}}};
    if (torch.is_object()) {
        std::printf("%-22s %12.2f %14.0f\n", ("pytorch " + torch["torch"].get<std::string>()).c_str(),
                    torch["median_ms"].get<double>(), theirs);
        std::snprintf(line, sizeof line, "ratio shardscope / pytorch = %.2f  (target: >= 1.00)\n",
                      shown.tokens_per_s / theirs);
        std::cout << line;
        out["pytorch"] = torch;
        out["ratio"] = shown.tokens_per_s / theirs;
    } else if (!f.no_torch) {
        std::cout << "pytorch: not measured (" << torch_why << "; PyTorch here is Debian's python3-torch: "
                  << "apt-get install python3-torch)\n";
    }
    std::cout << "\n" << std::flush;
    out["limits"] = print_limits(shown.rates, flops, f.mbs, shown.report.T, f.threads, shown.tokens_per_s, theirs);
    fma_peak = std::max(fma_peak, cpu::measure_fma_peak_gflops());
    out["limits"]["fma_peak"] = print_fma_peak(fma_peak, shown.rates.best_model_gflops, flops, f.mbs,
                                               shown.report.T, shown.tokens_per_s);
    if (torch.is_object()) {
        std::printf("pytorch's fraction above is of this round's limit; against the GEMMs timed around its own "
                    "steps: %.3f\n", theirs_fraction);
        out["limits"]["model_shapes"]["pytorch_fraction_own_timing"] = theirs_fraction;
    }
    std::printf("rounds, each its steps against the GEMMs timed just before and after them (the goal's row):");
    for (size_t i = 0; i < rounds.size(); ++i) {
        std::printf(" %.3f", rounds[i].fraction);
        out["rounds"].push_back({{"median_ms", rounds[i].median_ms}, {"tokens_per_s", rounds[i].tokens_per_s},
                                 {"best_model_gflops", rounds[i].rates.best_model_gflops},
                                 {"fraction", rounds[i].fraction}, {"gflops_before", rounds[i].before_gflops},
                                 {"gflops_after", rounds[i].after_gflops}});
    }
    std::printf("  (median: round %zu)\n", mid + 1);
    // The host's speed across each round: on a shared machine other guests slow a timing
    // (or the steps) for minutes at a time. A round whose two GEMM timings disagree, or
    // rounds whose fractions disagree, were measured while the speed moved.
    double moved = 0, lo = rounds.front().fraction, hi = lo;
    std::printf("the goal's GEMM rate, timed just before / just after each round's steps (GFLOP/s):");
    for (const BenchRound& round : rounds) {
        std::printf(" %.1f/%.1f", round.before_gflops, round.after_gflops);
        moved = std::max(moved, host_moved(round.before_gflops, round.after_gflops));
        lo = std::min(lo, round.fraction);
        hi = std::max(hi, round.fraction);
    }
    const double spread = host_moved(lo, hi);  // the rounds' fractions: (hi - lo) / hi
    std::printf("  (moved by up to %.0f%%; the rounds' fractions spread by %.0f%%)\n", 100.0 * moved, 100.0 * spread);
    out["host_moved"] = moved;
    out["fraction_spread"] = spread;
    if (moved > kHostMovedWarn || spread > kHostMovedWarn)
        std::printf("warning: the host's speed moved while this ran (by more than %.0f%%: other guests on a shared "
                    "machine?), so the fractions above are not a steady measurement; rerun when the machine is "
                    "quiet (`uptime`), and read every round's fraction, not only the median\n",
                    100.0 * kHostMovedWarn);
    if (f.profile) {
        TrainReport measured;  // every round's measured steps, for the profile's means
        for (const BenchRound& round : rounds) {
            const auto& steps = round.report.steps;
            const long warm = std::min<long>(f.warmup, long(steps.size()));
            measured.steps.insert(measured.steps.end(), steps.begin() + warm, steps.end());
        }
        double sum = 0;
        for (double x : all_ms) sum += x;
        out["profile"] = print_profile(profile_rows(measured, 0), shown.rates,
                                       all_ms.empty() ? 0 : sum / double(all_ms.size()), int(all_ms.size()));
    }
    std::cout << std::flush;
    if (!f.json.empty()) write_json_file(f.json, out);
}

}  // namespace

void add_bench_command(CLI::App& root) {
    auto* cmd = root.add_subcommand("bench", "Speed benchmarks: training tokens/s beside PyTorch");
    cmd->require_subcommand(0, 1);
    auto f = std::make_shared<BenchFlags>();
    add_model_flags(*cmd, f->model);
    cmd->add_option("--mbs", f->mbs, "Micro-batch size")->capture_default_str();
    cmd->add_option("--seq", f->seq, "Sequence length (default: the model's maxT)");
    cmd->add_option("--steps", f->steps, "Measured steps")->capture_default_str();
    cmd->add_option("--warmup", f->warmup, "Warm-up steps (not measured)")->capture_default_str();
    cmd->add_option("--threads", f->threads, "BLAS threads (both engines)")->capture_default_str();
    cmd->add_option("--rounds", f->rounds,
                    "Rounds of warm-up + measured steps, the GEMMs timed between them: each round's steps are held "
                    "against the rates timed just before and after them; the median round is printed")
        ->capture_default_str();
    cmd->add_flag("--no-torch", f->no_torch, "Do not run the PyTorch comparison");
    cmd->add_flag("--profile", f->profile,
                  "Also split the measured steps' time by kernel (kernels/profile.h): ms per step, share, GFLOP/s");
    add_recompute_flag(*cmd, f->recompute);  // none or selective here (full is refused: see run_bench)
    cmd->add_option("--torch-script", f->torch_script, "The PyTorch twin")->capture_default_str();
    cmd->add_option("--json", f->json, "Write the results here");
    cmd->add_flag("--calibrate", f->calibrate,
                  "Instead: measure this machine for `plan --hw cpu-local` and write out/calibration.json "
                  "(as `bench calibrate` with its defaults)");
    limit_bench_flags(*cmd);
    add_bench_dp_command(*cmd);
    add_bench_trace_command(*cmd);
    add_bench_comm_command(*cmd);
    add_bench_layouts_command(*cmd);
    add_bench_calibrate_command(*cmd);
    add_bench_plan_command(*cmd);
    add_bench_validate_command(*cmd);
    add_bench_pipeline_command(*cmd);
    add_bench_overlap_command(*cmd);
    add_bench_kernels_command(*cmd);
    add_bench_gpu_command(*cmd);
    // A flag typed before a subcommand's name is the parent's (`bench --model tiny trace` sets plain
    // bench's --model, which trace never reads): refused as the subcommand starts to parse, before
    // its work. CLI11 runs a parent's callback after its subcommand's, so the check sits here.
    for (CLI::App* sub : cmd->get_subcommands([](CLI::App*) { return true; }))
        sub->preparse_callback([cmd, sub](std::size_t) { refuse_flags_before_subcommand(*cmd, *sub); });
    // After the subcommands: they would inherit a footer set before them.
    cmd->footer(
        "Without a subcommand: one rank of the model beside bench/torch_gpt2.py, and the ratio.\n"
        "Subcommands (their flags come after the name, e.g. `shardscope bench dp --model tiny`):\n"
        "  dp     DDP (naive, bucketed) and ZeRO-1/2/3 on 2 and 4 ranks against one rank, beside PyTorch DDP (gloo)\n"
        "  trace  the cost of --trace: step time with tracing off and on, alternated\n"
        "  comm   collectives of the threads backend, nccl-tests style, beside memcpy\n"
        "  layouts    8 ranks as DP 8, DP 4 x SP 2 (Ulysses, ring), DP 4 x TP 2 (+ Megatron-SP), ZeRO 0 and 3:\n"
        "             tokens/s and GBS side by side, beside the planner's prediction\n"
        "  calibrate  measure this machine for `plan --hw cpu-local`, write out/calibration.json (= bench --calibrate)\n"
        "  plan   the planner's 512-GPU search time; predicted vs measured step times of 8 layouts\n"
        "  validate   the planner beside throughput published for real clusters (LLM Foundry): predicted vs measured\n"
        "  pipeline   PP 1 beside PP 2 and 4, each schedule, the same batch: tokens/s, the bubble vs its formula\n"
        "  overlap    DDP, ZeRO-1/2/3 and PP on emulated links, overlap on and off: exposed comm vs the planner\n"
        "  kernels    the elementwise kernels at a step's sizes: GB/s beside memcpy's on the same bytes\n"
        "  gpu    training on the GPU (--device cuda): tokens/s and MFU of one rank, then N ranks sharing the GPU\n"
        "Results are medians after warm-up; compare the ratios, the machine is shared and noisy.\n"
        "docs/performance.md has the tables measured on the project's machine.");
    // A subcommand's own callback does its work; plain `bench` is the one-rank comparison.
    cmd->callback([f, cmd]() {
        if (!cmd->get_subcommands().empty()) return;
        if (f->calibrate) return void(run_bench_calibrate(CalibrateOptions{}));
        if (!f->no_torch)  // a script the user named and mistyped is refused before the rounds, not after them
            require_given_file(*cmd, "--torch-script", f->torch_script,
                               "give the PyTorch twin's path (bench/torch_gpt2.py in the source tree), or --no-torch");
        run_bench(*f);
    });
}

}  // namespace ss::app
