// bench_pipeline.cpp — `shardscope bench pipeline`: what the pipeline bubble
// costs in tokens/s, measured beside one rank doing the same work.
//
//   shardscope bench pipeline                       small, MBS 4 x GA 8, PP 1 / 2 / 4, 3 rounds
//   shardscope bench pipeline --model tiny --layers 4 --ga 4 --steps 1 --warmup 1 --rounds 1
//
// Every layout trains the same global batch (MBS x GA sequences, DP 1): PP 1
// on one rank, then PP p on p rank threads with each schedule (gpipe, 1f1b,
// and interleaved with v = 2 chunks where the blocks and micro-batches allow).
// A pipeline of p stages each doing 1/p of the work would take
//
//     step(PP p) = step(PP 1) / p x (1 + bubble),   bubble = (p-1)/m, or (p-1)/(v m) interleaved
//
// (Narayanan et al. 2021, arXiv:2104.04473, sec. 2.2). That assumes one device
// per stage. This machine may have fewer cores than ranks: the OS then runs
// the p rank threads on c cores, and a rank idle in the bubble (asleep in a
// receive) gives its core to a rank that has work. So the bench compares
//
//     measured overhead  = step(PP p) / (step(PP 1) / min(p, c)) - 1
//     predicted overhead = the same ratio for the schedule's action lists run on
//                          c cores (simulate_on_cores below: forward 1, backward 2
//                          per stage, messages free, stages equal)
//
// With c >= p the prediction is the formula exactly; with fewer cores than
// ranks most of the bubble is filled by other ranks' work and the prediction
// says how much is left. What remains in "measured - predicted" is what the
// model leaves out: unequal stages (the first embeds, the last runs the LM head
// and the loss), the messages, the per-rank optimizer step, the OS.
//
// Rounds, as `bench layouts`: each round runs every layout once, so a slow
// spell of the shared machine falls on all of them; a layout's figure is the
// median of all rounds' measured steps (rank 0's clock: a step ends with the
// loss all-reduce, so it waits for the last stage).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <sys/resource.h>
#include <tuple>

#include "app/bench.h"
#include "app/model_flags.h"
#include "core/atomic_file.h"
#include "core/check.h"
#include "core/output_path.h"
#include "schedule/pipeline_schedule.h"
#include "train/train.h"

namespace ss::app {

namespace {

struct BenchPipelineFlags {
    ModelFlags model{"small"};
    int mbs = 4, ga = 8, seq = 0, steps = 4, warmup = 2, rounds = 3;
    std::vector<int> pp = {2, 4};
    int virtual_chunks = 2;  // v of the interleaved rows
    std::string json;
};

// One layout: PP p with a schedule (p = 1: no pipeline).
struct PipeRow {
    int pp = 1;
    std::string schedule = "-";  // gpipe, 1f1b, interleaved; "-" for PP 1
    Schedule kind = Schedule::one_f_one_b;  // the schedule run (PP > 1)
    int v = 1;
    double formula = 0;          // (p-1)/m or (p-1)/(v m)
    double predicted = 0;        // overhead of the lists on min(p, cores) ... see simulate_on_cores
    std::vector<double> step_ms;   // measured steps of every round
    std::vector<double> round_ms;  // each round's median
    double cpu_s = 0, wall_s = 0;  // CPU seconds of the process (every rank thread) and wall seconds, all runs
};

// CPU seconds this process has used so far, every thread (user + system).
double process_cpu_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// The length of one step of @p s when its p ranks share @p cores cores, in
// units of one stage's forward of one micro-batch (a chunk's forward takes 1/v,
// a backward twice its forward; messages are free, as in check_pipe_schedule).
// Each rank walks its list in order; a receive waits for its send; at most
// @p cores ranks compute at once, and a free core goes to the rank that has
// waited longest for one (ties: the lower rank). The OS time-slices instead of
// running each action to the end, so this is an estimate of the schedule, not
// of the scheduler.
double simulate_on_cores(const PipeSchedule& s, int cores) {
    const int p = s.spec.p, v = s.spec.v;
    // A message is keyed by payload, micro-batch and the virtual stage it enters.
    std::map<std::tuple<bool, int, int>, double> sent;  // -> when it was sent
    struct RankState {
        size_t next = 0;          // index of the next action
        bool computing = false;
        double done_at = 0;       // when the running forward/backward ends
        double waiting_since = -1;  // when it reached the compute it waits to start (-1: not waiting)
    };
    std::vector<RankState> st(static_cast<size_t>(p));
    int free_cores = cores;
    double now = 0;
    auto is_compute = [](PipeOp op) { return op == PipeOp::forward || op == PipeOp::backward; };
    for (;;) {
        // 1. Every rank not computing runs its sends and the receives whose sends have run.
        for (bool moved = true; moved;) {
            moved = false;
            for (int r = 0; r < p; ++r) {
                RankState& rs = st[size_t(r)];
                const auto& list = s.ranks[size_t(r)];
                while (!rs.computing && rs.next < list.size() && !is_compute(list[rs.next].op)) {
                    const PipeAction& a = list[rs.next];
                    const int vs = a.chunk * p + r;  // this action's virtual stage
                    if (a.op == PipeOp::send_act) sent[{true, a.micro, vs + 1}] = now;
                    else if (a.op == PipeOp::send_grad) sent[{false, a.micro, vs - 1}] = now;
                    else if (!sent.count({a.op == PipeOp::recv_act, a.micro, vs})) break;  // its send has not run
                    ++rs.next;
                    moved = true;
                }
                if (!rs.computing && rs.next < list.size() && is_compute(list[rs.next].op) && rs.waiting_since < 0)
                    rs.waiting_since = now;
            }
        }
        // 2. Free cores go to the ranks that have waited longest.
        std::vector<int> ready;
        for (int r = 0; r < p; ++r)
            if (!st[size_t(r)].computing && st[size_t(r)].next < s.ranks[size_t(r)].size()) ready.push_back(r);
        std::stable_sort(ready.begin(), ready.end(),
                         [&](int a, int b) { return st[size_t(a)].waiting_since < st[size_t(b)].waiting_since; });
        for (int r : ready) {
            if (free_cores == 0) break;
            RankState& rs = st[size_t(r)];
            const PipeAction& a = s.ranks[size_t(r)][rs.next];
            if (!is_compute(a.op)) continue;  // blocked in a receive
            rs.computing = true;
            rs.done_at = now + (a.op == PipeOp::forward ? 1.0 : 2.0) / v;
            rs.waiting_since = -1;
            --free_cores;
        }
        // 3. Time moves to the next end of a compute.
        double next = -1;
        for (const RankState& rs : st)
            if (rs.computing && (next < 0 || rs.done_at < next)) next = rs.done_at;
        if (next < 0) break;  // nothing runs: finished (check_pipe_schedule has ruled out deadlock)
        now = next;
        for (RankState& rs : st)
            if (rs.computing && rs.done_at <= now) {
                rs.computing = false;
                ++rs.next;
                ++free_cores;
            }
    }
    return now;
}

// The overhead the lists predict on @p cores cores: step / (the work / min(p, cores)) - 1,
// where the work is p ranks x 3 m units (m forwards of 1 and m backwards of 2 per stage).
double predicted_overhead(const PipeSpec& spec, int cores) {
    PipeSchedule s = make_pipe_schedule(spec);
    check_pipe_schedule(s);
    const double work = 3.0 * spec.m * spec.p;
    return simulate_on_cores(s, cores) / (work / std::min(spec.p, cores)) - 1;
}

std::string fraction(const PipeRow& r, int m) {
    if (r.pp == 1) return "-";
    char buf[48];
    if (r.v > 1) std::snprintf(buf, sizeof buf, "%d/(%dx%d) = %.3f", r.pp - 1, r.v, m, r.formula);
    else std::snprintf(buf, sizeof buf, "%d/%d = %.3f", r.pp - 1, m, r.formula);
    return buf;
}

void run_bench_pipeline(const BenchPipelineFlags& f) {
    if (!f.json.empty()) check_writable_file("--json", f.json);  // found now, not after the runs
    SS_CHECK(f.steps >= 1, "--steps must be at least 1 (got " << f.steps << ")");
    SS_CHECK(f.rounds >= 1, "--rounds must be at least 1 (got " << f.rounds << ")");
    SS_CHECK(f.ga >= 1 && f.mbs >= 1, "--mbs and --ga must be at least 1");
    SS_CHECK(f.virtual_chunks >= 2, "--pp-virtual " << f.virtual_chunks << ": interleaving needs v >= 2");
    TrainOptions base;
    base.model = f.model.resolve();
    base.T = f.seq;
    base.mbs = f.mbs;
    base.ga = f.ga;
    base.steps = f.warmup + f.steps;
    base.blas_threads = 1;
    base.quiet = true;
    const GPT2Config& m = base.model;
    const int T = base.T > 0 ? base.T : m.maxT, cores = machine_cores(), micro = f.ga;
    for (int p : f.pp)
        SS_CHECK(p >= 2 && p <= m.L, "--pp " << p << ": a pipeline needs 2 to L=" << m.L << " stages");

    std::vector<PipeRow> rows(1);  // PP 1 first: the reference
    std::vector<std::string> skipped;
    for (int p : f.pp) {
        for (Schedule kind : {Schedule::gpipe, Schedule::one_f_one_b, Schedule::interleaved}) {
            PipeRow r;
            r.pp = p;
            r.kind = kind;
            r.schedule = schedule_name(kind);
            r.v = kind == Schedule::interleaved ? f.virtual_chunks : 1;
            if (r.v > 1 && (m.L < p * r.v || micro % p != 0)) {  // train would refuse it (pipeline.h)
                char why[160];
                if (m.L < p * r.v)
                    std::snprintf(why, sizeof why, "PP %d interleaved v=%d: needs p x v = %d blocks, the model has "
                                  "L=%d", p, r.v, p * r.v, m.L);
                else
                    std::snprintf(why, sizeof why, "PP %d interleaved v=%d: needs GA a multiple of p (GA %d)", p,
                                  r.v, micro);
                skipped.push_back(why);
                continue;
            }
            PipeSpec spec{kind, p, micro, r.v};
            r.formula = pipe_bubble_formula(spec);
            r.predicted = predicted_overhead(spec, cores);
            rows.push_back(r);
        }
    }
    auto options = [&](const PipeRow& r) {
        TrainOptions o = base;
        o.ranks = r.pp;
        o.pp = r.pp;
        if (r.pp > 1) o.schedule = r.kind;
        o.pp_virtual = r.v;
        return o;
    };

    std::printf("bench pipeline: %s (L=%d C=%d H=%d V=%d), T %d, fp32, threads backend, 1 BLAS thread per rank\n",
                m.name.c_str(), m.L, m.C, m.H, m.V, T);
    std::printf("  every layout trains the same batch: MBS %d x GA %d = %d sequences (%d tokens) per step, DP 1; "
                "PP p runs it on p ranks as m = %d micro-batches\n", f.mbs, f.ga, f.mbs * f.ga, f.mbs * f.ga * T,
                micro);
    std::printf("  %s, each running every layout once (%d warm-up + %s); median over all rounds' steps\n",
                count_of(f.rounds, "round").c_str(), f.warmup, count_of(f.steps, "measured step").c_str());
    std::printf("  overhead = step ms / (PP 1's step ms / min(p, cores)) - 1: what a pipeline of p stages costs "
                "beyond a perfect split over the cores it can use\n");
    std::printf("  predicted: the schedule's action lists run on min(p, %d) cores (forward 1, backward 2, messages "
                "free); with a core per rank it is the bubble formula\n", cores);
    for (int p : f.pp)
        if (p > cores)
            std::printf("  this machine has %d cores: PP %d's %d rank threads share them; a rank waiting in the "
                        "bubble sleeps and lends its core, so most of the bubble is filled and tokens/s cannot "
                        "rise above PP 1 x %d\n", cores, p, p, cores);
    for (const std::string& s : skipped) std::printf("  skipped: %s\n", s.c_str());
    std::printf("  load before: %s\n", load_average().c_str());
    std::fflush(stdout);

    for (int round = 1; round <= f.rounds; ++round) {
        for (PipeRow& r : rows) {
            const double cpu0 = process_cpu_seconds();
            const auto t0 = std::chrono::steady_clock::now();
            TrainReport rep = train(options(r), nullptr);
            r.wall_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            r.cpu_s += process_cpu_seconds() - cpu0;
            std::vector<double> ms = measured_steps_ms(rep, f.warmup);
            r.step_ms.insert(r.step_ms.end(), ms.begin(), ms.end());
            r.round_ms.push_back(median(ms));
        }
        std::printf("  round %d/%d measured\n", round, f.rounds);
        std::fflush(stdout);
    }

    std::printf("%-6s %-15s %5s %9s %9s %8s %20s %9s %9s %8s\n", "layout", "schedule", "ranks", "step ms", "tokens/s",
                "vs PP 1", "bubble (formula)", "predicted", "measured", "cpu/wall");
    const double tokens = double(f.mbs) * f.ga * T, pp1_ms = median(rows[0].step_ms);
    nlohmann::json out = {{"model", m.name}, {"T", T}, {"mbs", f.mbs}, {"ga", f.ga}, {"cores", cores},
                          {"rounds", f.rounds}, {"rows", nlohmann::json::array()}};
    for (const PipeRow& r : rows) {
        const double ms = median(r.step_ms), measured = ms / (pp1_ms / std::min(r.pp, cores)) - 1;
        char pred[16] = "-", meas[16] = "-";
        if (r.pp > 1) {
            std::snprintf(pred, sizeof pred, "%.3f", r.predicted);
            std::snprintf(meas, sizeof meas, "%.3f", measured);
        }
        const std::string sched = r.v > 1 ? r.schedule + " v=" + std::to_string(r.v) : r.schedule;
        const double busy = r.cpu_s / r.wall_s;
        std::printf("PP %-3d %-15s %5d %9.1f %9.0f %7.2fx %20s %9s %9s %8.2f\n", r.pp, sched.c_str(), r.pp, ms,
                    tokens / (ms / 1000.0), pp1_ms / ms, fraction(r, micro).c_str(), pred, meas, busy);
        out["rows"].push_back({{"pp", r.pp}, {"schedule", r.schedule}, {"v", r.v}, {"median_ms", ms},
                               {"tokens_per_s", tokens / (ms / 1000.0)}, {"vs_pp1", pp1_ms / ms},
                               {"bubble_formula", r.formula}, {"predicted_overhead", r.pp > 1 ? r.predicted : 0.0},
                               {"measured_overhead", r.pp > 1 ? measured : 0.0}, {"cpu_per_wall", busy},
                               {"round_median_ms", r.round_ms}});
    }
    std::printf("  load after: %s\n", load_average().c_str());
    std::printf("vs PP 1: PP 1's step ms / this one's (same batch, so the tokens/s ratio); predicted and measured: "
                "the overhead defined above;\ncpu/wall: CPU seconds of all rank threads per wall second while the "
                "layout ran, the cores it kept busy (at most min(p, %d); less when the bubble idles ranks or other "
                "processes take the cores)\n", cores);
    std::fflush(stdout);
    if (!f.json.empty()) write_json_file(f.json, out);
}

}  // namespace

void add_bench_pipeline_command(CLI::App& bench) {
    auto* cmd = bench.add_subcommand(
        "pipeline", "PP 1 beside PP 2 and 4 with each schedule (gpipe, 1f1b, interleaved) on the same batch: "
                    "tokens/s and the bubble, measured against the formula");
    auto f = std::make_shared<BenchPipelineFlags>();
    add_bench_run_flags(*cmd, f->model, f->mbs, f->seq, f->steps, f->warmup, f->rounds, "layout and round",
                        "Micro-batch size (the same in every layout)", "Rounds; each runs every layout once");
    cmd->add_option("--ga", f->ga, "Micro-batches per step m (= gradient accumulation)")->capture_default_str();
    cmd->add_option("--pp", f->pp, "Pipeline degrees to run beside PP 1")->delimiter(',')->capture_default_str();
    cmd->add_option("--pp-virtual", f->virtual_chunks, "Model chunks per rank of the interleaved rows")
        ->capture_default_str();
    cmd->add_option("--json", f->json, "Write the results here");
    limit_bench_flags(*cmd);
    cmd->callback([f]() { run_bench_pipeline(*f); });
}

}  // namespace ss::app
