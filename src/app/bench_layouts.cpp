// bench_layouts.cpp — `shardscope bench layouts`: the seed question at this
// machine's scale. On the same ranks and the same MBS per rank, what does it
// cost in tokens/s to keep the global batch small with TP or SP instead of DP?
//
//   shardscope bench layouts                        small, 8 ranks, MBS 8, 3 rounds
//   shardscope bench layouts --model tiny --steps 2 --warmup 1 --rounds 1
//
// Fourteen layouts of one world of N ranks (N = 8 by default), each with ZeRO 0 and 3:
//
//   DP N                          every rank its own samples          GBS = MBS x N
//   DP N, MBS/2                   the same at half the MBS            GBS = MBS x N/2   (MBS even)
//   DP N/2 x SP 2 (Ulysses)       2 ranks share a sample: all-to-all  GBS = MBS x N/2
//   DP N/2 x SP 2 (ring)          2 ranks share a sample: K, V ring   GBS = MBS x N/2   (zig-zag split)
//   DP N/2 x SP 2 (ring, contig.) the same, contiguous split: uneven  GBS = MBS x N/2
//   DP N/2 x TP 2                 2 ranks share a sample: Megatron    GBS = MBS x N/2
//   DP N/2 x TP 2 + Megatron-SP   the same, all-reduce = RS + AG      GBS = MBS x N/2
//
// TP and SP ranks split one sample's work, so per step the world processes
// half the tokens of DP N: GBS halves (train.h: GBS = MBS x GA x DP, and DP =
// N / (TP x SP)). The figure is tokens/s relative to DP N at the same ZeRO
// stage, measured side by side: what the smaller batch costs in throughput.
// DP N at half the MBS is the other way to the same GBS, and the control: its
// ranks each process as many tokens a step as a TP 2 or SP 2 rank does, so
// what it loses against DP N is what any layout of that GBS pays for less work
// a step per rank (the step's optimizer, its all-reduce, the waits of ranks
// that share cores, spread over half the tokens), and a TP or SP row's gap to
// it is what the split itself costs.
//
// Rounds, as `bench dp`: each round runs every layout once, so a slow spell of
// the shared machine falls on all of them; a layout's figure is the median of
// all rounds' measured steps. Round 1 runs them as listed, every later round in
// its own shuffled order (seeded by the round: the same orders on every run),
// so that no layout always runs first, or always after the same one: what a
// run leaves in the process (its threads' freed heaps, the caches) falls on
// different layouts in different rounds. The JSON keeps each round's order;
// with more than one round the table's last column is the range of a row's
// rounds' own ratios to DP N (the JSON's round_vs_dp): how far the host moved
// them. Beside it, the planner's prediction for the same run (train/plan_for_run.h:
// --hw cpu-local, out/calibration.json when present, else the defaults, with
// the cores that calibration found available to this process); the header
// and the JSON say which.
//
// On a machine with fewer cores than ranks the ranks take turns, so absolute
// tokens/s say little; the ratios to DP N still compare the layouts' work and
// traffic, but not how they would overlap on N real devices.
//
// DDP (ZeRO 0) all-reduces its gradients in 25 MiB buckets, PyTorch's default,
// in every layout (--bucket-mb 0: one call per tensor, 52 calls a step at
// `small`). Each call is a synchronisation of its group; a layout that splits
// samples pays a step's calls over half the tokens, so the per-tensor form
// charges it twice DP N's per-token price for them (docs/performance.md).
//
// With --emulate PRESET (e.g. h100x4-ib400: 8 ranks are 2 nodes of 4) every
// collective takes the time the preset's links would, time-scaled by this
// CPU's matmul rate (src/comm/links.h), so the run has that cluster's ratio of
// compute to communication: the seed's benchmark at small scale. Only DP N,
// DP N/2 x SP 2 (Ulysses) and DP N/2 x TP 2 run then, and the planner predicts
// with the same links. A small model on such a cluster is latency-bound
// (each hop's alpha, scaled, is a large part of a CPU step), so steps take
// seconds: give few --steps.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <memory>
#include <numeric>
#include <random>
#include <string>

#include "app/bench.h"
#include "app/flag_range.h"
#include "app/model_flags.h"
#include "core/atomic_file.h"
#include "core/check.h"
#include "core/output_path.h"
#include "train/plan_for_run.h"
#include "plan/plan.h"
#include "train/train.h"

namespace ss::app {

namespace {

struct BenchLayoutsFlags {
    ModelFlags model{"small"};
    int mbs = 8, seq = 0, steps = 5, warmup = 2, rounds = 3, ranks = 8;
    std::vector<int> zero = {0, 3};
    std::string calibration = "out/calibration.json";
    std::string json;
    std::string emulate, link;  // emulated links (comm/links.h)
    double bucket_mb = 25;      // DDP's buckets (PyTorch's default); 0: one all-reduce per tensor
};

// One layout of the world.
struct LayoutRow {
    std::string name;             // as printed
    int tp = 1, sp = 1, zero = 0;
    SpMode sp_mode = SpMode::ulysses;
    bool sequence_parallel = false;
    int64_t gbs = 0;
    int dp = 0;
    std::vector<double> step_ms;   // measured steps of every round
    std::vector<double> round_ms;  // each round's median
    double planned_tps = 0;        // planner's tokens/s (0: no prediction)
    RingSplit ring_split = RingSplit::zigzag;  // ring rows: which tokens each sp rank holds
    int mbs = 0;                   // the row's MBS per rank; 0: the bench's (--mbs)
};

void run_bench_layouts(const BenchLayoutsFlags& f) {
    if (!f.json.empty()) check_writable_file("--json", f.json);  // found now, not after the runs
    SS_CHECK(f.ranks >= 2 && f.ranks % 2 == 0,
             "--ranks " << f.ranks << ": bench layouts splits the world into DP x 2; choose an even N >= 2");
    SS_CHECK(f.steps >= 1, "--steps must be at least 1 (got " << f.steps << ")");
    SS_CHECK(f.rounds >= 1, "--rounds must be at least 1 (got " << f.rounds << ")");
    for (int z : f.zero) SS_CHECK(z >= 0 && z <= 3, "--zero " << z << ": ZeRO stages are 0, 1, 2, 3");
    SS_CHECK(f.emulate.empty() || f.link.empty(), "--emulate " << f.emulate << " brings its own links: leave out "
                                                              "--link " << f.link);
    TrainOptions base;
    base.model = f.model.resolve();
    base.T = f.seq;
    base.mbs = f.mbs;
    base.steps = f.warmup + f.steps;
    base.blas_threads = 1;
    base.quiet = true;
    base.ranks = f.ranks;
    base.emulate = f.emulate;
    base.link = f.link;
    const bool emulated = !f.emulate.empty() || !f.link.empty();
    base.bucket_mb = f.bucket_mb;
    const GPT2Config& m = base.model;
    const int T = base.T > 0 ? base.T : m.maxT;
    const int cores = machine_cores(), n = f.ranks, half = f.ranks / 2;

    std::vector<LayoutRow> rows;
    for (int z : f.zero) {
        const std::string dp = "DP " + std::to_string(half) + " x ";
        rows.push_back({"DP " + std::to_string(n), 1, 1, z, SpMode::ulysses, false, 0, 0, {}, {}, 0});
        if (f.mbs % 2 == 0)  // the same GBS as the rows below, by a smaller micro-batch
            rows.push_back({"DP " + std::to_string(n) + ", MBS " + std::to_string(f.mbs / 2), 1, 1, z,
                            SpMode::ulysses, false, 0, 0, {}, {}, 0, RingSplit::zigzag, f.mbs / 2});
        rows.push_back({dp + "SP 2 (Ulysses)", 1, 2, z, SpMode::ulysses, false, 0, 0, {}, {}, 0});
        if (!emulated) {  // both token splits side by side (model/sequence_split.h)
            rows.push_back({dp + "SP 2 (ring)", 1, 2, z, SpMode::ring, false, 0, 0, {}, {}, 0});
            rows.push_back({dp + "SP 2 (ring, contig.)", 1, 2, z, SpMode::ring, false, 0, 0, {}, {}, 0,
                            RingSplit::contiguous});
        }
        rows.push_back({dp + "TP 2", 2, 1, z, SpMode::ulysses, false, 0, 0, {}, {}, 0});
        if (!emulated) rows.push_back({dp + "TP 2 + Megatron-SP", 2, 1, z, SpMode::ulysses, true, 0, 0, {}, {}, 0});
    }
    auto options = [&](const LayoutRow& r) {
        TrainOptions o = base;
        o.tp = r.tp;
        o.sp = r.sp;
        o.sp_mode = r.sp_mode;
        o.ring_split = r.ring_split;
        o.sequence_parallel = r.sequence_parallel;
        o.zero = r.zero;
        if (r.mbs > 0) o.mbs = r.mbs;
        return o;
    };
    // Every row's flags, checked before the first line (a bad --emulate or --link would otherwise
    // stop the first run, after the header): the same checks train() makes.
    for (const LayoutRow& r : rows) check_train_options(options(r));
    // The planner gives each rank a core while ranks <= cores; with a calibration that found
    // fewer available to this process (bench calibrate), predict with those (bench_plan.cpp).
    const int avail = calibrated_cores_available(f.calibration);
    // With the links the run emulated (those of its first run: --emulate measures this CPU).
    auto predict = [&](LayoutRow& r, const EmulatedLinks& links) {
        try {
            PlanInput in = plan_input_for(options(r), f.calibration, links);
            if (avail > 0) in.hw.cores = avail;
            r.planned_tps = plan(in).time.tokens_per_s;
        } catch (const Error&) {
            r.planned_tps = 0;  // the planner cannot model it: the column shows "-"
        }
    };

    std::printf("bench layouts: %d ranks (threads backend), %s (L=%d C=%d H=%d V=%d), T %d, fp32, MBS %d per rank, "
                "1 BLAS thread per rank\n", n, m.name.c_str(), m.L, m.C, m.H, m.V, T, f.mbs);
    std::printf("  TP and SP ranks share samples, so GBS = MBS x DP is half of DP %d's: the table shows what that "
                "costs in tokens/s\n", n);
    if (f.mbs % 2 == 0)
        std::printf("  DP %d, MBS %d: the same GBS by a smaller micro-batch, as many tokens a rank as a TP/SP rank: "
                    "what less work a step costs any layout\n", n, f.mbs / 2);
    std::printf("  %s, each running every layout once (%d warm-up + %s); median over all rounds' steps\n",
                count_of(f.rounds, "round").c_str(), f.warmup, count_of(f.steps, "measured step").c_str());
    if (f.rounds > 1)
        std::printf("  round 1 runs the layouts as listed, each later round in a shuffled order (the same on every "
                    "run): none always runs first or after the same one\n");
    std::printf("  vs DP %d = tokens/s / DP %d's at the same ZeRO stage, measured side by side; planned: "
                "`plan --hw cpu-local` for the same run\n", n, n);
    std::printf("  calibration: %s", hardware_preset("cpu-local", f.calibration).source.c_str());
    if (avail > 0) std::printf("; cores = %d, as many as were available while calibrating", avail);
    std::printf("\n");
    if (n > cores)
        std::printf("  this machine has %d cores: %d ranks oversubscribe them (ranks take turns), so absolute "
                    "tokens/s mean little; the ratios to DP %d are the figure\n", cores, n, n);
    if (f.bucket_mb > 0)
        std::printf("  DDP (ZeRO 0) all-reduces in %g MiB buckets (PyTorch's default is 25; --bucket-mb 0: one call "
                    "per tensor)\n", f.bucket_mb);
    else
        std::printf("  DDP (ZeRO 0) all-reduces one tensor per call (--bucket-mb 0)\n");
    if (emulated)
        std::printf("  EMULATED links (not measured): %s %s; the planner predicts with the same links; only the seed's "
                    "layouts run (DP, Ulysses, TP: no ring or Megatron-SP rows)\n",
                    f.emulate.empty() ? "--link" : "--emulate", f.emulate.empty() ? f.link.c_str() : f.emulate.c_str());
    std::printf("  load before: %s\n", load_average().c_str());
    std::fflush(stdout);

    std::string emulated_note;  // what the links were, as the runs describe them
    std::vector<size_t> order(rows.size());
    std::iota(order.begin(), order.end(), size_t(0));
    nlohmann::json round_order = nlohmann::json::array();  // the rows' indices, in the order each round ran them
    for (int round = 1; round <= f.rounds; ++round) {
        if (round > 1) {
            std::mt19937 rng(static_cast<unsigned>(round));
            std::shuffle(order.begin(), order.end(), rng);
        }
        round_order.push_back(order);
        for (size_t i : order) {
            LayoutRow& r = rows[i];
            TrainReport rep = train(options(r), nullptr);
            if (round == 1) predict(r, rep.links);
            if (round == 1 && rep.links.on && &r == &rows.front()) {
                emulated_note = rep.links.describe();
                std::printf("  %s\n", emulated_note.c_str());
            }
            std::vector<double> ms = measured_steps_ms(rep, f.warmup);
            r.gbs = rep.gbs;
            r.dp = rep.dp;
            r.step_ms.insert(r.step_ms.end(), ms.begin(), ms.end());
            r.round_ms.push_back(median(ms));
        }
        std::printf("  round %d/%d measured\n", round, f.rounds);
        std::fflush(stdout);
    }

    // With more than one round, each row also shows the range of its rounds' own ratios to DP N
    // (each round's median step against DP N's in the same round): how far the host moved them.
    const bool ranges = f.rounds > 1;
    std::printf("%-28s %4s %3s %4s %10s %10s %8s %11s %9s%s\n", "layout", "zero", "DP", "GBS", "median ms", "tokens/s",
                "vs DP", "planned t/s", "plan/meas", ranges ? "  rounds' vs DP" : "");
    nlohmann::json out = {{"model", m.name}, {"T", T}, {"mbs_per_rank", f.mbs}, {"ranks", n}, {"cores", cores},
                          {"rounds", f.rounds}, {"calibration", calibration_used(f.calibration)},
                          {"planner_cores", avail > 0 ? nlohmann::json(avail) : nlohmann::json(nullptr)},
                          {"bucket_mb", f.bucket_mb},
                          {"rows", nlohmann::json::array()}, {"emulated_links", emulated_note},
                          {"round_order", round_order}};
    auto tokens_per_s = [&](const LayoutRow& r) { return double(r.gbs) * T / (median(r.step_ms) / 1000.0); };
    const LayoutRow* dp_row = nullptr;
    for (const LayoutRow& r : rows) {
        if (r.tp == 1 && r.sp == 1 && r.mbs == 0) dp_row = &r;  // rows of a ZeRO stage start with DP N
        const double tps = tokens_per_s(r), vs = tps / tokens_per_s(*dp_row);
        char planned[32] = "-", ratio[32] = "-";
        if (r.planned_tps > 0) {
            std::snprintf(planned, sizeof planned, "%.0f", r.planned_tps);
            std::snprintf(ratio, sizeof ratio, "%.2f", r.planned_tps / tps);
        }
        std::vector<double> round_vs;
        for (size_t i = 0; i < r.round_ms.size(); ++i)
            round_vs.push_back(double(r.gbs) / r.round_ms[i] / (double(dp_row->gbs) / dp_row->round_ms[i]));
        char range[48] = "";
        if (ranges && !round_vs.empty())
            std::snprintf(range, sizeof range, "  %.2f-%.2f", *std::min_element(round_vs.begin(), round_vs.end()),
                          *std::max_element(round_vs.begin(), round_vs.end()));
        std::printf("%-28s %4d %3d %4lld %10.1f %10.0f %7.2fx %11s %9s%s\n", r.name.c_str(), r.zero, r.dp,
                    static_cast<long long>(r.gbs), median(r.step_ms), tps, vs, planned, ratio, range);
        out["rows"].push_back({{"layout", r.name}, {"tp", r.tp}, {"sp", r.sp}, {"sp_mode", sp_mode_name(r.sp_mode)},
                                  {"ring_split", ring_split_name(r.ring_split)},
                               {"sequence_parallel", r.sequence_parallel}, {"zero", r.zero}, {"dp", r.dp},
                               {"mbs", r.mbs > 0 ? r.mbs : f.mbs},
                               {"gbs", r.gbs}, {"median_ms", median(r.step_ms)}, {"tokens_per_s", tps},
                               {"vs_dp", vs}, {"round_vs_dp", round_vs}, {"round_median_ms", r.round_ms},
                               {"planned_tokens_per_s", r.planned_tps}});
    }
    std::printf("  load after: %s\n", load_average().c_str());
    std::printf("vs DP: tokens/s over DP %d's at the same ZeRO stage (the GBS column shows what TP/SP buy for it); "
                "plan/meas: planned / measured tokens/s%s\n", n, emulated ? "; EMULATED links" : "");
    std::fflush(stdout);
    if (!f.json.empty()) write_json_file(f.json, out);
}

}  // namespace

void add_bench_layouts_command(CLI::App& bench) {
    auto* cmd = bench.add_subcommand(
        "layouts", "The same ranks as DP, DP x SP (Ulysses, ring), DP x TP (+ Megatron-SP), ZeRO 0 and 3: "
                   "tokens/s and GBS side by side, beside the planner's prediction");
    auto f = std::make_shared<BenchLayoutsFlags>();
    add_bench_run_flags(*cmd, f->model, f->mbs, f->seq, f->steps, f->warmup, f->rounds, "layout and round",
                        "Micro-batch size per rank (the same in every layout)", "Rounds; each runs every layout once");
    cmd->add_option("--ranks", f->ranks, "World size N (even): DP N against DP N/2 x (TP or SP) 2")
        ->capture_default_str();
    cmd->add_option("--zero", f->zero, "ZeRO stages to run every layout with")->delimiter(',')->capture_default_str();
    cmd->add_option("--calibration", f->calibration,
                    "The planner's cpu-local calibration (bench calibrate); none: the defaults")
        ->capture_default_str();
    cmd->add_option("--emulate", f->emulate, "Emulate a cluster's links, time-scaled to this CPU (h100x4-ib400: "
                                             "8 ranks as 2 nodes of 4; see `train --emulate`); runs DP, Ulysses and "
                                             "TP only (no ring, no Megatron-SP rows)");
    cmd->add_option("--link", f->link, "Emulate one link for every group, GBPS[,US]; DP, Ulysses and TP rows only");
    cmd->add_option("--bucket-mb", f->bucket_mb, "DDP (ZeRO 0): all-reduce gradients in buckets of this many MiB "
                                                 "(PyTorch's default); 0: one all-reduce per tensor")
        ->capture_default_str();  // its range: limit_bench_flags (bench.cpp)
    cmd->add_option("--json", f->json, "Write the results here");
    limit_bench_flags(*cmd);
    cmd->callback([f, cmd]() {
        require_given_calibration(*cmd, f->calibration);
        run_bench_layouts(*f);
    });
}

}  // namespace ss::app
