// test_plan.cpp — the planner against the papers' own examples, the GBS
// arithmetic of the 512-GPU question, the search, and bad input. Fast: no rank
// runs here (tests/test_plan_engine.cpp compares with the engine).
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <map>

#include "cli_run.h"
#include "comm/links.h"
#include "comm/trace/trace.h"
#include "core/check.h"
#include "plan/memory.h"
#include "plan/models.h"
#include "plan/overlap.h"
#include "plan/zeropp.h"
#include "plan/time.h"
#include "plan/plan.h"
#include "plan/report.h"
#include "plan/search.h"

using namespace ss;

namespace {

PlanInput gpu_question(const std::string& model, int gpus, int mbs) {
    PlanInput in;
    in.model = gpt3_model(model);
    in.gpus = gpus;
    in.hw = hardware_preset("h100");
    in.mbs = mbs;
    return in;
}

std::string error_of(const PlanInput& in) {
    try {
        plan(in);
    } catch (const Error& e) {
        return e.what();
    }
    return "no error";
}

// The bytes each rank really sends, as the ZeRO paper counts volume: nccl-tests
// bytes x bus factor, summed over the gradient and parameter traffic.
double moved(const PlanResult& r) {
    double v = 0;
    for (const CommCall& c : r.comm)
        if (c.payload == Payload::grad || c.payload == Payload::param) v += double(c.bytes) * busbw_factor(c.op, c.group);
    return v;
}

// The parameters a rank holds without model parallelism: the model's, with wte padded
// to Vp rows (model/config.h, padded_vocab), as the planner and the Ledger count them.
double allocated_params(const GPT2Config& m) {
    return double(num_params(m)) + double(padded_vocab(m.V, 1, m.vocab_divisible_by) - m.V) * m.C;
}

}  // namespace

TEST_CASE("ZeRO paper, figure 1: 7.5B parameters on 64 GPUs, K = 12", "[plan][paper]") {
    // Rajbhandari et al. 2020, figure 1: 120 GB, 31.4 GB, 16.6 GB, 1.9 GB per device.
    const double psi = 7.5e9;
    REQUIRE(zero_paper_bytes(psi, 0, 64, 12) / 1e9 == Approx(120.0));
    REQUIRE(zero_paper_bytes(psi, 1, 64, 12) / 1e9 == Approx(31.4).margin(0.05));
    REQUIRE(zero_paper_bytes(psi, 2, 64, 12) / 1e9 == Approx(16.6).margin(0.05));
    REQUIRE(zero_paper_bytes(psi, 3, 64, 12) / 1e9 == Approx(1.9).margin(0.05));
    // The planner's own accounting (per unit, padded) agrees with the formula
    // whenever the units divide by N: GPT-3 1.3B's do for N = 64.
    PlanInput in = gpu_question("gpt3-1.3b", 64, 1);
    const double P = allocated_params(in.model);
    for (int stage : {0, 1, 2, 3}) {
        in.layout.zero = stage;
        REQUIRE(double(plan(in).memory.states.total()) == zero_paper_bytes(P, stage, 64, 12));
    }
}

TEST_CASE("ZeRO paper, section 7: 2 Psi for DDP and ZeRO-1/2, 3 Psi for ZeRO-3", "[plan][paper]") {
    PlanInput in = gpu_question("gpt3-1.3b", 64, 1);  // units divide by 64: no padding
    const double P = allocated_params(in.model), N = 64, e = 2;
    for (int stage : {0, 1, 2, 3}) {
        in.layout.zero = stage;
        const double volume = stage == 3 ? 3 : 2;
        INFO("ZeRO-" << stage);
        REQUIRE(moved(plan(in)) == Approx(volume * P * (N - 1) / N * e).epsilon(1e-12));
    }
    // Replicas: the shard group moves 2 (or 3) Psi (S-1)/S over S ranks, and only the
    // shard S = Psi / 8 crosses the 8 replicas (an all_reduce: 2 (R-1)/R of it).
    in.layout.zero = 3;
    in.layout.dp_shard = 8;
    in.layout.dp_rep = 8;
    const double S = P / 8;
    REQUIRE(moved(plan(in)) == Approx(3 * P * 7 / 8 * e + 2 * S * 7 / 8 * e).epsilon(1e-12));
}

TEST_CASE("Korthikanti et al. 2022: activation bytes per layer (table 2)", "[plan][paper]") {
    // GPT-3 175B: s = 2048, h = 12288, a = 96; b = 1, t = 8.
    const double s = 2048, b = 1, h = 12288, a = 96;
    const int t = 8;
    const double sbh = s * b * h;
    REQUIRE(korthikanti_layer_bytes(s, b, h, a, 1, false, Recompute::none) == Approx(sbh * (34 + 5 * a * s / h)));
    REQUIRE(korthikanti_layer_bytes(s, b, h, a, t, false, Recompute::none) ==
            Approx(sbh * (10 + 24.0 / t + 5 * a * s / (h * t))));
    REQUIRE(korthikanti_layer_bytes(s, b, h, a, t, true, Recompute::none) == Approx(sbh / t * (34 + 5 * a * s / h)));
    REQUIRE(korthikanti_layer_bytes(s, b, h, a, t, true, Recompute::selective) == Approx(sbh / t * 34));
    REQUIRE(korthikanti_layer_bytes(s, b, h, a, t, true, Recompute::full) == Approx(2 * sbh / t));
    // Section 5: for GPT-3 the attention term 5as/h is 70% of the activations ...
    const double none = korthikanti_layer_bytes(s, b, h, a, 1, false, Recompute::none);
    const double sel = korthikanti_layer_bytes(s, b, h, a, 1, false, Recompute::selective);
    REQUIRE(1 - sel / none == Approx(0.70).margin(0.005));
    // ... and sequence parallelism with selective recompute needs ~5x less than TP alone.
    const double tp_only = korthikanti_layer_bytes(s, b, h, a, t, false, Recompute::none);
    const double sp_sel = korthikanti_layer_bytes(s, b, h, a, t, true, Recompute::selective);
    REQUIRE(tp_only / sp_sel > 5.0);
    REQUIRE(tp_only / sp_sel < 5.5);
}

TEST_CASE("micro-batches in flight: 1F1B p, GPipe m, interleaved L(1 + (p-1)/(pv))", "[plan][paper]") {
    PlanInput in = gpu_question("gpt3-6.7b", 64, 1);  // L = 32
    in.layout.pp = 4;
    in.layout.tp = 8;
    in.layout.sequence_parallel = true;
    in.ga = 8;
    const double L = 32;
    auto sets = [&](Schedule s, int v) {
        PlanInput x = in;
        x.layout.schedule = s;
        x.layout.pp_virtual = v;
        MeshShape mesh;
        GbsPlan g;
        x = resolve(x, &mesh, &g);
        return activation_bytes(x, mesh, g.ga, 0).layer_sets;
    };
    REQUIRE(sets(Schedule::one_f_one_b, 1) == L);  // p micro-batches of L/p layers
    REQUIRE(sets(Schedule::gpipe, 1) == 8 * L / 4);  // all m
    REQUIRE(sets(Schedule::interleaved, 2) == Approx(L * (1 + 3.0 / (4 * 2))));  // Korthikanti eq. 5
}

TEST_CASE("pipeline bubble: (p-1)/m, and (p-1)/(v m) interleaved (Narayanan et al. 2021)", "[plan][paper]") {
    PlanInput in = gpu_question("gpt3-6.7b", 64, 1);
    in.layout.pp = 4;
    in.ga = 8;
    PlanResult r = plan(in);
    REQUIRE(r.time.bubble_fraction == Approx(3.0 / 8));
    // Sends posted early (overlap on) hide in the steady state; the fill and drain wait for them.
    REQUIRE(r.time.t_posted_mb > 0);
    REQUIRE(r.time.pipeline == Approx(8 * r.time.t_mb + 3 * (r.time.t_mb + r.time.t_posted_mb)));
    in.layout.schedule = Schedule::interleaved;
    in.layout.pp_virtual = 2;
    r = plan(in);
    REQUIRE(r.time.bubble_fraction == Approx(3.0 / 16));
    REQUIRE(r.time.pipeline == Approx(8 * r.time.t_mb + 1.5 * (r.time.t_mb + r.time.t_posted_mb)));
    // Overlap off: every micro-batch waits for its sends, (m + (p-1)/v) x t_mb.
    in.overlap = false;
    r = plan(in);
    REQUIRE(r.time.t_posted_mb == 0);
    REQUIRE(r.time.pipeline == Approx((8 + 1.5) * r.time.t_mb));
}

TEST_CASE("Narayanan et al. 2021: GPT-3 175B FLOPs and its 34 days on 1024 A100s", "[plan][paper]") {
    // Section 5.1: F = 96 B s l h^2 (1 + s/6h + V/16lh) with full recompute; V = 51,200 (padded).
    const double B = 1536, s = 2048, l = 96, h = 12288, V = 51200;
    const double F = narayanan_flops(B, s, l, h, V, Recompute::full);
    REQUIRE(F == Approx(96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h))));
    // The paper: 300B tokens at 140 TFLOP/s per GPU on 1024 GPUs take about 34 days.
    const double days = 300e9 / (B * s) * F / (1024 * 140e12) / 86400;
    REQUIRE(days == Approx(34).epsilon(0.03));
    // Without recompute it is 3/4 of that for the layers (fwd + 2x bwd instead of 2x fwd + 2x bwd).
    const double none = narayanan_flops(B, s, l, h, V, Recompute::none);
    REQUIRE(none == Approx(72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h))));
    // ~6 FLOPs per parameter per token (Kaplan et al. 2020) for the matmuls.
    REQUIRE(none / (B * s) / (12 * l * h * h) == Approx(6 * (1 + s / (6 * h) + V / (12 * l * h))));
}

TEST_CASE("the planner counts the padded vocabulary Vp in memory and FLOPs", "[plan][vocab]") {
    // Narayanan et al.'s V = 51,200 above is GPT-2's 50257 padded to 128 x TP 8 (Megatron-LM).
    REQUIRE(padded_vocab(50257, 8, 128) == 51200);
    PlanInput in = gpu_question("gpt3-175b", 1024, 1);
    in.layout.tp = 8;
    in.layout.pp = 8;
    const PlanResult r = plan(in);
    const double B = double(r.gbs.gbs), s = in.seq(), l = 96, h = 12288;
    REQUIRE(r.time.model_flops == Approx(narayanan_flops(B, s, l, h, 51200, Recompute::none)).epsilon(1e-12));
    // The first stage's wte unit: Vp / TP rows of C.
    const ModelSlice first = model_slice(in.model, 8, 8, 0);
    REQUIRE(first.units.front() == int64_t(51200 / 8) * 12288);
    GPT2Config g = model_preset("gpt2");
    REQUIRE(model_slice(g, 2, 1, 0).units.front() == int64_t(50432 / 2) * 768 + 1024 * 768);  // wte + wpe
    g.vocab_divisible_by = 1;
    REQUIRE(model_slice(g, 2, 1, 0).units.front() == int64_t(50258 / 2) * 768 + 1024 * 768);
}

TEST_CASE("the 512-GPU question: MBS 16, pure ZeRO gives GBS 8192; TP, SP, PP bring it down", "[plan][gbs]") {
    PlanInput in = gpu_question("gpt3-6.7b", 512, 16);
    in.layout.zero = 3;
    PlanResult pure = plan(in);
    REQUIRE(pure.gbs.gbs == 8192);
    REQUIRE(pure.gbs.line() == "GBS = MBS 16 x GA 1 x DP 512 = 8192   (DP = 512 / (TP 1 x PP 1 x SP 1))");
    // Replicas change memory and traffic, never the GBS.
    in.layout.dp_shard = 8;
    in.layout.dp_rep = 64;
    REQUIRE(plan(in).gbs.gbs == 8192);
    in.layout.dp_shard = in.layout.dp_rep = 0;
    in.layout.tp = 4;
    in.layout.sp = 4;
    PlanResult r = plan(in);
    REQUIRE(r.gbs.line() == "GBS = MBS 16 x GA 1 x DP 32 = 512   (DP = 512 / (TP 4 x PP 1 x SP 4))");
    in.layout.sp = 8;
    REQUIRE(plan(in).gbs.gbs == 256);
    // A target GBS sets GA.
    in.layout.sp = 2;
    in.gbs = 2048;
    REQUIRE(plan(in).gbs.ga == 2);
    // Activations: without recompute pure ZeRO-3 does not fit 80 GB; full recompute does.
    REQUIRE_FALSE(pure.memory.fits());
    PlanInput full = gpu_question("gpt3-6.7b", 512, 16);
    full.layout.zero = 3;
    full.layout.recompute = Recompute::full;
    REQUIRE(plan(full).memory.fits());
}

TEST_CASE("search: every result fits, keeps GBS under the cap, fastest first", "[plan][search]") {
    SearchInput s;
    s.base = gpu_question("gpt3-6.7b", 512, 16);
    s.max_gbs = 1024;
    s.top = 0;
    SearchStats st;
    std::vector<PlanResult> all = search(s, &st);
    REQUIRE(all.size() > 100);
    REQUIRE(st.evaluated >= int64_t(all.size()));
    std::map<int64_t, int> gbs_seen;
    for (size_t i = 0; i < all.size(); ++i) {
        REQUIRE(all[i].memory.fits());
        REQUIRE(all[i].gbs.gbs <= 1024);
        REQUIRE(all[i].gbs.gbs == int64_t(16) * all[i].gbs.ga * all[i].mesh.dp());
        if (i) REQUIRE(all[i - 1].time.tokens_per_s >= all[i].time.tokens_per_s);
        ++gbs_seen[all[i].gbs.gbs];
    }
    REQUIRE(gbs_seen.count(1024));  // GA: the most micro-batches under the cap (fewer only when they need recompute)
    // A held axis stays held; an exact GBS is met exactly.
    s.sp = 2;
    s.base.gbs = 256;
    s.top = 5;
    for (const PlanResult& r : search(s)) {
        REQUIRE(r.mesh.sp == 2);
        REQUIRE(r.gbs.gbs == 256);
    }
    // The engine's layouts are a search too (JSON has every field).
    nlohmann::json j = search_json(s, search(s), st);
    REQUIRE(j["results"].size() == 5);
    REQUIRE(j["results"][0]["gbs"]["gbs"] == 256);
}

TEST_CASE("bad layouts say what would work", "[plan][errors]") {
    PlanInput in = gpu_question("gpt3-6.7b", 512, 16);  // L = 32, H = 32, T = 2048
    PlanInput x = in;
    x.layout.tp = 3;
    REQUIRE_THAT(error_of(x), Catch::Matchers::Contains("TP=3 does not divide n_head=32") &&
                                  Catch::Matchers::Contains("choose TP in {1, 2, 4, 8, 16, 32}") &&
                                  Catch::Matchers::Contains("nearest valid layouts: --tp 4 --pp 1 --sp 1"));
    x = in;
    x.layout.sp = 3;
    x.layout.sp_mode = SpMode::ring;
    REQUIRE_THAT(error_of(x), Catch::Matchers::Contains("SP=3 does not divide the sequence T=2048"));
    x = in;
    x.layout.sp = 2;
    x.layout.sp_mode = SpMode::ring;  // zig-zag (the default) cuts T into 2 SP chunks
    x.T = 2046;                       // 2 | 2046, 4 does not
    REQUIRE_THAT(error_of(x), Catch::Matchers::Contains("--ring-split zigzag cuts the sequence into 2 x SP = 4"));
    x.layout.ring_split = RingSplit::contiguous;
    REQUIRE(error_of(x).find("ring-split") == std::string::npos);  // contiguous needs only SP | T
    x = in;
    x.layout.tp = 8;
    x.layout.sp = 8;  // Ulysses: 32 / 8 = 4 heads per TP rank
    REQUIRE_THAT(error_of(x), Catch::Matchers::Contains("Ulysses SP=8 does not divide the 4 heads") &&
                                  Catch::Matchers::Contains("choose SP in {1, 2, 4}") &&
                                  Catch::Matchers::Contains("--sp-mode ring"));
    x = in;
    x.layout.pp = 64;
    REQUIRE_THAT(error_of(x), Catch::Matchers::Contains("PP=64 stages but L=32 layers") &&
                                  Catch::Matchers::Contains("choose PP in {1, 2, 4, 8, 16, 32}"));
    // PP that does not divide L splits it as train does (the first L mod PP stages one block more),
    // or as --pp-split says; interleaving keeps its equal chunks.
    x = in;
    x.gpus = 96;
    x.layout.pp = 3;
    REQUIRE(error_of(x) == "no error");
    REQUIRE_THAT(plan(x).layout_str(), Catch::Matchers::Contains("PP 3 (1f1b) [blocks 11,11,10]"));
    x.layout.pp_split = {10, 12, 10};
    REQUIRE_THAT(plan(x).layout_str(), Catch::Matchers::Contains("[blocks 10,12,10]"));
    x.layout.pp_split = {10, 12, 11};
    REQUIRE_THAT(error_of(x), Catch::Matchers::Contains("--pp-split adds up to 33 blocks but the model has L=32"));
    x.layout.pp_split = {16, 16};
    REQUIRE_THAT(error_of(x), Catch::Matchers::Contains("--pp-split lists 2 stages but the pipeline has 3"));
    x = in;
    x.gpus = 96;
    x.layout.tp = 8;
    x.layout.pp = 8;
    REQUIRE_THAT(error_of(x), Catch::Matchers::Contains("TP 8 x PP 8 x SP 1 = 64 does not divide 96 GPUs") &&
                                  Catch::Matchers::Contains("--tp 8 --pp 4 --sp 1 (DP 3)"));
    x = in;
    x.gbs = 1000;
    x.layout.tp = 8;
    REQUIRE_THAT(error_of(x), Catch::Matchers::Contains("GBS 1000 cannot be made") &&
                                  Catch::Matchers::Contains("GBS 1024 (--ga 1)") &&
                                  Catch::Matchers::Contains("no MBS makes GBS 1000 with DP 64"));
    x = in;
    x.gbs = 1536;
    x.layout.tp = 8;  // DP 64: GBS 1536 = 24 per rank
    REQUIRE_THAT(error_of(x), Catch::Matchers::Contains("nearest: GBS 1024 (--ga 1) or GBS 2048 (--ga 2)") &&
                                  Catch::Matchers::Contains("--mbs in {1, 2, 3, 4, 6, 8, 12, 24}"));
    x = in;
    x.layout.dp_shard = 3;
    REQUIRE_THAT(error_of(x), Catch::Matchers::Contains("choose dp_shard in {1, 2, 4"));
    x = in;
    x.layout.schedule = Schedule::interleaved;
    x.layout.pp = 4;
    x.layout.pp_virtual = 3;
    REQUIRE_THAT(error_of(x), Catch::Matchers::Contains("does not divide L=32 layers into equal chunks"));
    x = in;
    x.layout.zero = 4;
    REQUIRE_THAT(error_of(x), Catch::Matchers::Contains("--zero 4 does not exist"));
    REQUIRE_THROWS_WITH(hardware_preset("tpu"), Catch::Matchers::Contains("choose one of h100, h200, a100, cpu-local"));
}

TEST_CASE("a model that fits nowhere names the closest layout and what it needs", "[plan][errors]") {
    SearchInput s;
    s.base = gpu_question("gpt3-175b", 8, 1);  // 175B x 16 bytes = 2.8 TB on 8 GPUs of 80 GB
    try {
        search(s);
        FAIL("no error");
    } catch (const Error& e) {
        REQUIRE_THAT(std::string(e.what()), Catch::Matchers::Contains("fits nowhere on 8 GPUs of 80 GB") &&
                                                Catch::Matchers::Contains("the smallest peak is 350 GB (TP 8") &&
                                                Catch::Matchers::Contains("model states alone need 35 GPUs"));
    }
    s.base = gpu_question("gpt3-6.7b", 512, 16);
    s.max_gbs = 16;  // even TP x PP x SP = 512 leaves GBS 16 x 1: allowed; 8 is not
    s.max_gbs = 8;
    REQUIRE_THROWS_WITH(search(s), Catch::Matchers::Contains("the smallest GBS any of them makes is 16"));
}

TEST_CASE("links: a group stays in a node only if the grid keeps it there", "[plan][comm]") {
    REQUIRE(axis_in_node(1, 8, 8));       // TP 8: ranks 0-7
    REQUIRE_FALSE(axis_in_node(1, 16, 8));
    REQUIRE(axis_in_node(4, 2, 8));       // SP 2 after TP 4
    REQUIRE_FALSE(axis_in_node(8, 64, 8));  // DP after TP 8: across nodes
    REQUIRE(axis_in_node(8, 1, 8));
    // Alpha-beta: hops x alpha + bytes x factor / busbw.
    Link link{100e9, 1e-6};
    REQUIRE(collective_seconds("all_reduce", 1000000000, 1, 8, link) == Approx(6e-6 + 1e9 * 2 * 7 / 8 / 100e9));
    REQUIRE(collective_seconds("all_gather", 0, 1, 1, link) == 0);
}

TEST_CASE("links: a ring across nodes runs at its NICs in a node, up to NVLink's", "[plan][comm]") {
    Hardware hw = hardware_preset("h100");  // intra 360 GB/s; inter 40 GB/s, one NIC a GPU; 8 a node
    REQUIRE(group_link(hw, "all_gather", 1, 8, 8).busbw == hw.intra.busbw);                 // in a node
    REQUIRE(group_link(hw, "all_gather", 1, 64, 8).busbw == Approx(320e9));  // 8 NICs a node
    REQUIRE(group_link(hw, "all_gather", 1, 64, 8).alpha == hw.inter.alpha);
    REQUIRE(group_link(hw, "reduce_scatter", 2, 64, 8).busbw == Approx(160e9));  // after TP 2: 4 a node
    REQUIRE(group_link(hw, "all_reduce", 8, 64, 8).busbw == Approx(40e9));       // one a node (dp_rep)
    REQUIRE(group_link(hw, "all_to_all", 1, 64, 8).busbw == Approx(40e9));      // each GPU's own NIC
    REQUIRE(group_link(hw, "send", 1, 64, 8).busbw == Approx(40e9));
    hw.inter.busbw = 100e9;  // capped by the node's own link
    REQUIRE(group_link(hw, "all_reduce", 1, 64, 8).busbw == hw.intra.busbw);
    REQUIRE(nics_in_use("broadcast", 4) == 4);
    REQUIRE(nics_in_use("barrier", 4) == 1);
    REQUIRE(nics_in_use("all_gather", 0) == 1);
}

TEST_CASE("cpu-local reads the calibration file, and says what is wrong with a bad one", "[plan][hardware]") {
    const std::string path = std::string(SS_BINARY_DIR) + "/test_plan_calibration.json";
    {
        std::ofstream f(path);
        f << R"({"matmul_flops": 1.5e11, "efficiency": 0.4, "memory_bandwidth": 9e9, "comm_busbw": 3e9,
                 "comm_alpha": 1e-5, "cores": 4, "memory": 1.6e10})";
    }
    Hardware h = hardware_preset("cpu-local", path);
    REQUIRE(h.flops == 1.5e11);
    REQUIRE(h.efficiency == 0.4);
    REQUIRE(h.hbm_bw == 9e9);
    REQUIRE(h.intra.busbw == 3e9);
    REQUIRE(h.intra.alpha == 1e-5);
    REQUIRE(h.cores == 4);
    REQUIRE(h.memory == 1.6e10);
    // No file: the documented defaults.
    REQUIRE(hardware_preset("cpu-local", path + ".missing").flops == cpu_local_defaults().flops);
    REQUIRE_THROWS_WITH(cpu_local_from_json("{\"matmul_flops\": -1}", "cal.json"),
                        Catch::Matchers::Contains("cal.json: \"matmul_flops\" must be positive"));
    REQUIRE_THROWS_WITH(cpu_local_from_json("[1,", "cal.json"), Catch::Matchers::Contains("cal.json is not JSON"));
    // Issue 14, 4.7: a file of no known field was labelled "(calibrated)" over the defaults.
    REQUIRE_THROWS_WITH(cpu_local_from_json(R"({"matmul_flop": 1e11, "cpus": 4})", "cal.json"),
                        Catch::Matchers::Contains("cal.json holds none of a calibration's fields (matmul_flops, "));
    REQUIRE(cpu_local_from_json(R"({"cores": 4})", "cal.json").label == "this CPU, one thread per rank (calibrated)");
    // Found by fuzz_hardware: a core count past int's range was converted unchecked.
    REQUIRE_THROWS_WITH(cpu_local_from_json("{\"cores\": 1e300}", "cal.json"),
                        Catch::Matchers::Contains("\"cores\" must be a whole number"));
    REQUIRE_THROWS_WITH(cpu_local_from_json("{\"cores\": 2.5}", "cal.json"),
                        Catch::Matchers::Contains("\"cores\" must be a whole number"));
    REQUIRE_THROWS_WITH(cpu_local_from_json("{\"memory\": 1e999}", "cal.json"),
                        Catch::Matchers::Contains("cal.json is not JSON (") &&
                            Catch::Matchers::Contains("number overflow"));
}

TEST_CASE("the text report shows the arithmetic, every category and the verdict", "[plan][report]") {
    PlanInput in = gpu_question("gpt3-6.7b", 512, 16);
    in.layout.tp = 8;
    in.layout.sequence_parallel = true;
    in.layout.zero = 1;
    const std::string text = format_plan(plan(in));
    REQUIRE_THAT(text, Catch::Matchers::Contains("GBS = MBS 16 x GA 1 x DP 64 = 1024   (DP = 512 / (TP 8 x PP 1 x SP 1))") &&
                           Catch::Matchers::Contains("  params ") && Catch::Matchers::Contains("  acts ") &&
                           Catch::Matchers::Contains("of 80.00 GB: fits") &&
                           Catch::Matchers::Contains("dp_shard     reduce_scatter  grad") &&
                           Catch::Matchers::Contains("throughput: "));
}

TEST_CASE("bytes are decimal units in every planner output, the viewer's calculator included", "[plan][report]") {
    // One unit for the planner, its presets and the viewer's GBS calculator
    // (viz/app/panel_gbs_plan.cpp prints with decimal_bytes): 1 GB = 1e9 bytes,
    // as GPU memory is quoted. The presets say 80 GB for an H100: 80e9 bytes.
    REQUIRE(hardware_preset("h100").memory == 80e9);
    CHECK(decimal_bytes(hardware_preset("h100").memory) == "80.00 GB");
    CHECK(decimal_bytes(19.7e9) == "19.70 GB");  // 18.35 GiB: the unit matters at this size
    CHECK(decimal_bytes(60288) == "60.29 kB");
    CHECK(decimal_bytes(999) == "999 B");
    CHECK(decimal_bytes(1.5e12) == "1.50 TB");
    CHECK(decimal_bytes(1e6) == "1.00 MB");
}

TEST_CASE("shardscope plan: errors exit 1 with the message, --json writes every number", "[plan][cli]") {
    CliResult bad = run_shardscope("plan --gpus 512 --model gpt3-6.7b --mbs 16 --tp 3");
    REQUIRE(bad.code == 1);
    REQUIRE_THAT(bad.output, Catch::Matchers::Contains("shardscope: error: TP=3 does not divide n_head=32"));
    CliResult gbs = run_shardscope("plan --gpus 512 --model gpt3-6.7b --mbs 16 --tp 8 --gbs 1000");
    REQUIRE(gbs.code == 1);
    REQUIRE_THAT(gbs.output, Catch::Matchers::Contains("GBS 1000 cannot be made"));
    CliResult cap = run_shardscope("plan --gpus 512 --model gpt3-6.7b --max-gbs 1024");
    REQUIRE(cap.code == 1);
    REQUIRE_THAT(cap.output, Catch::Matchers::Contains("--max-gbs is a --search constraint"));

    const std::string path = std::string(SS_BINARY_DIR) + "/test_plan_search.json";
    CliResult ok = run_shardscope("plan --gpus 64 --model gpt3-1.3b --mbs 4 --search --max-gbs 256 --top 3 --json " + path);
    INFO(ok.output);
    REQUIRE(ok.code == 0);
    std::ifstream f(path);
    nlohmann::json j = nlohmann::json::parse(f);
    REQUIRE(j["results"].size() == 3);
    for (const auto& r : j["results"]) {
        REQUIRE(r["gbs"]["gbs"].get<int64_t>() <= 256);
        REQUIRE(r["memory"]["fits"] == true);
        REQUIRE(r["memory"]["total"].get<int64_t>() ==
                r["memory"]["params"].get<int64_t>() + r["memory"]["grads"].get<int64_t>() +
                    r["memory"]["optim"].get<int64_t>() + r["memory"]["acts"].get<int64_t>() +
                    r["memory"]["comm"].get<int64_t>());
        REQUIRE(r["comm"].size() > 0);
    }
}

TEST_CASE("links: emulated links count latency over a ring, as comm/links.h does", "[plan][comm]") {
    REQUIRE(collective_hops("all_reduce", 8, true) == 14);
    REQUIRE(collective_hops("all_gather", 8, true) == 7);
    REQUIRE(collective_hops("reduce_scatter", 4, true) == 3);
    REQUIRE(collective_hops("send", 2, true) == 1);
    REQUIRE(collective_hops("all_reduce", 8) == 6);  // a tree: 2 log2 8
    Link ring{1e9, 6e-6, true};
    REQUIRE(collective_seconds("all_reduce", 1000000, 1, 4, ring) == Approx(6 * 6e-6 + 1e6 * 1.5 / 1e9));
}

// The replay of one data-parallel step (plan/overlap.h), worked by hand.
TEST_CASE("overlap replay: DDP buckets start in backward; only the tail waits", "[plan][overlap]") {
    DpStep s;
    s.zero = 0;
    s.units = {{0, 0, 0, 0, {0.5}}, {1, 2, 0, 0, {1.0}}, {1, 2, 0, 0, {1.0}}};
    // Forward 2; backward: unit 2 (0..2 after forward) ends at 4, its bucket runs 4-5; unit 1
    // ends at 6, its bucket 6-7; unit 0 (no compute) at 6, its bucket 7-7.5: exposed 1.5.
    DpStepTime t = replay_dp_step(s);
    CHECK(t.compute == Approx(6));
    CHECK(t.comm == Approx(2.5));
    CHECK(t.exposed == Approx(1.5));
    CHECK(t.total == Approx(7.5));
    CHECK(t.exposed_each_mb == 0);  // once per step
    s.overlap = false;
    t = replay_dp_step(s);
    CHECK(t.exposed == Approx(2.5));
    CHECK(t.total == Approx(8.5));
    // With GA only the last micro-batch all-reduces.
    s.overlap = true;
    s.ga = 3;
    t = replay_dp_step(s);
    CHECK(t.comm == Approx(2.5));
    CHECK(t.total == Approx(2 * 6 + 7.5));
}

TEST_CASE("overlap replay: ZeRO-3 prefetch hides a gather behind each unit's compute", "[plan][overlap]") {
    DpStep s;
    s.zero = 3;
    s.prefetch = 1;
    // emb, two blocks, ln_f + head; every gather and reduce-scatter 1 s.
    s.units = {{0, 0, 1, 1, {}}, {10, 20, 1, 1, {}}, {10, 20, 1, 1, {}}, {1, 2, 1, 1, {}}};
    // By hand: forward waits for unit 0's gather and then unit 1's (prefetched at 1, done at 2):
    // 2 s exposed; backward waits for unit 0's gather (pass start) and unit 3's: 2 s more; the
    // last two reduce-scatters (67-68, 68-69) after the last compute (67): 2 s. 63 s of compute.
    DpStepTime t = replay_dp_step(s);
    CHECK(t.compute == Approx(63));
    CHECK(t.comm == Approx(12));  // 4 + 4 gathers, 4 reduce-scatters
    CHECK(t.exposed == Approx(6));
    CHECK(t.total == Approx(69));
    CHECK(t.exposed_each_mb == Approx(6));
    s.prefetch = 0;  // every gather waited for where it is needed
    const DpStepTime none = replay_dp_step(s);
    CHECK(none.exposed > t.exposed);
    // 8 gathers, and each backward gather queues behind the reduce-scatter in flight on the
    // same wire (one queue per group, as the progress thread runs it): 3 of them, and unit 0's
    // reduce-scatter behind unit 1's at the end, 1 s.
    CHECK(none.exposed == Approx(8 + 3 + 1));
    s.overlap = false;
    const DpStepTime off = replay_dp_step(s);
    CHECK(off.exposed == Approx(off.comm));
    CHECK(off.total == Approx(63 + 12));
}

TEST_CASE("overlap replay: ZeRO-1/2 gather the step's parameters under the next forward", "[plan][overlap]") {
    DpStep s;
    s.zero = 2;
    s.units = {{0, 0, 1, 1, {}}, {10, 20, 1, 1, {}}, {1, 2, 1, 1, {}}};
    // The three gathers run 0-1, 1-2, 2-3: forward waits for unit 0's and unit 1's (2 s), then computes.
    DpStepTime t = replay_dp_step(s);
    CHECK(t.exposed - t.exposed_each_mb == Approx(2));
    s.overlap = false;
    const DpStepTime off = replay_dp_step(s);
    CHECK(off.total == Approx(off.compute + 6));
}

TEST_CASE("hpZ: the backward's gathers stay inside a node, and each GPU keeps 1/K more", "[plan][hpz]") {
    PlanInput in = gpu_question("gpt3-6.7b", 64, 1);  // 8 nodes of 8
    in.layout.zero = 3;
    const PlanResult plain = plan(in);
    in.layout.hpz = 8;
    const PlanResult r = plan(in);
    bool fwd_across = false, bwd_inside = false;
    for (const CommCall& c : r.comm) {
        if (c.op == "all_gather" && c.phase == Phase::fwd) fwd_across = c.group == 64 && !c.intra_node;
        if (c.op == "all_gather" && c.phase == Phase::bwd) bwd_inside = c.axis == "hpz" && c.group == 8 && c.intra_node;
    }
    CHECK(fwd_across);
    CHECK(bwd_inside);
    // The secondary partition: 1/K of the (padded) parameters, 2 bytes each in bf16.
    CHECK(r.memory.hpz == 64 * r.memory.slice.shard(64) / 8 * 2);
    CHECK(r.memory.total == plain.memory.total + r.memory.hpz);
    CHECK(r.time.step < plain.time.step);  // one of the three passes off the network
    in.layout.hpz = 3;
    REQUIRE_THROWS_WITH(plan(in), Catch::Matchers::Contains("--hpz 3 must divide the ZeRO shard group of 64"));
    in.layout.hpz = 16;  // groups of 16 on nodes of 8: the backward's gathers would cross nodes
    REQUIRE_THROWS_WITH(plan(in), Catch::Matchers::Contains("do not lie inside one node of 8"));
}

TEST_CASE("hpZ and qgZ nodes with TP: a node of G GPUs holds G / tp members of a shard group",
          "[plan][zeropp]") {
    // The shard group's members lie tp ranks apart (process_mesh.h), so with TP 2 on nodes
    // of 8 a node holds 4 of them: qgZ's in-node hop is over 4, not 8 (8 would span 2 nodes).
    CHECK(shard_members_per_node(8, 2) == 4);
    CHECK(shard_members_per_node(2, 4) == 1);  // a TP group wider than a node
    CHECK(qgz_node_size(0, 8, 2, 16) == 4);
    CHECK(qgz_node_size(0, 8, 1, 16) == 8);
    CHECK(qgz_node_size(0, 8, 2, 4) == 4);     // the whole group in one node: one all-to-all
    CHECK(qgz_node_size(0, 0, 2, 16) == 16);   // no node given
    CHECK(qgz_node_size(2, 8, 2, 16) == 2);    // hpZ's K
    CHECK(groups_inside_nodes(4, 2, 64, 8));
    CHECK_FALSE(groups_inside_nodes(8, 2, 64, 8));
    CHECK(groups_inside_nodes(8, 2, 8, 8));    // one node
    CHECK(groups_inside_nodes(8, 2, 64, 0));   // no node given

    PlanInput in = gpu_question("gpt3-1.3b", 64, 1);
    in.layout.tp = 2;
    in.layout.zero = 3;
    in.layout.dp_shard = 32;
    in.layout.qgz = true;
    const PlanResult r = plan(in);  // nodes of 8 (h100): qgZ's node is 8 / tp = 4 members
    CHECK(r.input.layout.qgz_node == 4);
    in.layout.qgz = false;
    in.layout.hpz = 8;  // 8 members x tp 2 = 16 ranks: two nodes
    CHECK_THAT(error_of(in), Catch::Matchers::Contains("8 x tp 2 = 16 ranks, which do not lie inside one node of 8"));
    in.layout.hpz = 4;
    CHECK(error_of(in) == "no error");
}


TEST_CASE("ZeRO++ by hand: qwZ's int8 gathers and qgZ's two hops, per link tier", "[plan][zeropp]") {
    // tiny (L 2, C 64, V 256, maxT 64) on 16 H100s, 2 nodes of 8, ZeRO-3 over all 16 with
    // hpZ 8, qwZ and qgZ (int4, blocks of 256; qgZ's node is hpZ's K = 8, M = 2 nodes).
    PlanInput in;
    in.model = model_preset("tiny");
    in.gpus = 16;
    in.hw = hardware_preset("h100");
    in.layout.zero = 3;
    in.layout.hpz = 8;
    in.layout.qwz = true;
    in.layout.qgz = true;
    const PlanResult r = plan(in);
    REQUIRE(r.input.layout.qgz_node == 8);
    // Units: wte + wpe = 256 x 64 + 64 x 64 = 20,480; a block 12 C^2 + 13 C = 49,984; ln_f 128.
    // Chunks c = ceil(P_u / 16): 1,280, 3,124, 8. q(n, b) = 4 ceil(n / 256) + ceil(n b / 8).
    //   qwZ forward   16 x (q(1280, 8) + 2 q(3124, 8) + q(8, 8)) = 16 x (1300 + 2 x 3176 + 12) = 122,624
    //   hpZ backward  16 x 2 bytes x (1280 + 2 x 3124 + 8)                              = 241,152 (bf16, unchanged)
    //   qgZ 1 (node)   8 x (q(2560, 4) + 2 q(6248, 4) + q(16, 4)) =  8 x (1320 + 2 x 3224 + 12) =  62,240
    //   qgZ 2 (cross)  2 x (q(1280, 4) + 2 q(3124, 4) + q(8, 4))  =  2 x (660 + 2 x 1614 + 8)   =   7,792
    std::map<std::string, const CommCall*> by;
    for (const CommCall& c : r.comm) by[c.axis + "/" + c.op + "/" + phase_name(c.phase)] = &c;
    const CommCall* fwd = by["dp_shard/all_gather/fwd"];
    const CommCall* bwd = by["hpz/all_gather/bwd"];
    const CommCall* node = by["qgz_node/all_to_all/bwd"];
    const CommCall* cross = by["qgz_cross/all_to_all/bwd"];
    REQUIRE((fwd && bwd && node && cross));
    CHECK(fwd->bytes == 122624);
    CHECK(bwd->bytes == 241152);
    CHECK(node->bytes == 62240);
    CHECK(cross->bytes == 7792);
    CHECK(!by.count("dp_shard/reduce_scatter/bwd"));  // qgZ replaces it
    for (const CommCall* c : {fwd, bwd, node, cross}) CHECK(c->calls == 4);  // one per unit
    // Tiers: the forward gather and qgZ's second hop cross nodes; hpZ and qgZ's first hop stay in one.
    CHECK(!fwd->intra_node);
    CHECK(bwd->intra_node);
    CHECK(node->intra_node);
    CHECK(!cross->intra_node);
    // Time: alpha-beta of those bytes on that link, 4 calls of n - 1 = 1 hop: 4 a + 7792 (1/2) / B.
    CHECK(cross->seconds == Approx(4 * in.hw.inter.alpha + 7792 * 0.5 / in.hw.inter.busbw));
    // qgZ is blocking in the engine, even with overlap on: nothing hides it.
    CHECK(node->overlap == Overlap::none);
    CHECK(cross->overlap == Overlap::none);
    CHECK(r.time.t_dp_mb * r.gbs.ga + r.time.dp_exposed >= node->seconds + cross->seconds);
    // The report says the results change.
    CHECK_THAT(format_plan(r), Catch::Matchers::Contains("quantized: qwZ/qgZ change results"));
    CHECK_THAT(r.layout_str(), Catch::Matchers::EndsWith("ZeRO-3 + ZeRO++ hpZ 8, qwZ, qgZ int4"));
}

TEST_CASE("ZeRO++: what crosses nodes per rank, 3M for ZeRO-3 down to the paper's 0.75M", "[plan][zeropp][paper]") {
    // Wang et al. 2023 (arXiv:2306.10209; the abstract's 4x): ZeRO-3 moves 3M across nodes per step (M the
    // model's fp16 bytes), ZeRO++ 0.75M: forward int8 0.5M, backward (hpZ) 0, gradients int4 0.25M.
    // The planner counts per rank, as nccl-tests counts bytes (plus 4 bytes of fp32 scale per
    // block of 256: within 2%). One GPU per node: no hpZ (K >= 2) and no sum inside a node, so
    // the backward gathers int8 across too: 0.5 + 0.5 + 0.25 = 1.25M.
    auto across = [](const PlanResult& r) {
        int64_t b = 0;
        for (const CommCall& c : r.comm)
            if (!c.intra_node && (c.payload == Payload::param || c.payload == Payload::grad)) b += c.bytes;
        return double(b);
    };
    PlanInput in = gpu_question("gpt3-1.3b", 64, 1);
    in.gpus_per_node = 1;
    in.layout.zero = 3;
    const PlanResult z3 = plan(in);
    const double M = 64.0 * double(z3.memory.slice.shard(64)) * 2;  // one gather's bytes: the padded slice in bf16
    CHECK(across(z3) / M == Approx(3.0));
    in.layout.qwz = in.layout.qgz = true;
    const PlanResult zpp = plan(in);  // hpZ needs K >= 2: with one GPU a node, qwZ and qgZ alone (the backward gathers int8)
    CHECK(across(zpp) / M == Approx(0.5 + 0.5 + 0.25).epsilon(0.02));
    // Nodes of 8 with hpZ 8: the backward gather stays inside, and qgZ sums inside the node
    // first, so per rank only M/(4K) of the gradients cross: 0.5M + 0 + 0.25M / 8. (The
    // paper's 0.25M is what a node's K ranks send across together: K x M/(4K).)
    in.gpus_per_node = 8;
    in.layout.hpz = 8;
    in.layout.qgz_node = 0;
    const PlanResult full = plan(in);
    CHECK(across(full) / M == Approx(0.5 + 0.25 / 8).epsilon(0.02));
    CHECK(full.memory.hpz == 64 * full.memory.slice.shard(64) / 8 * 2);  // hpZ's price: 1/K of the parameters
}

TEST_CASE("overlap replay: qgZ's all-to-alls are blocking, so backward waits for each", "[plan][overlap][zeropp]") {
    DpStep s;
    s.zero = 2;
    // Three units, 1 s forward, 2 s backward, 0.5 s for each unit's gradients (no step gathers).
    s.units = {{1, 2, 0, 0.5, {}}, {1, 2, 0, 0.5, {}}, {1, 2, 0, 0.5, {}}};
    // By hand, the reduce-scatter started: forward 0-3; backward takes units 2, 1, 0 (3-5,
    // 5-7, 7-9), each reduce-scatter runs under the next unit's backward, the last 9-9.5.
    DpStepTime t = replay_dp_step(s);
    CHECK(t.exposed == Approx(0.5));
    CHECK(t.total == Approx(9.5));
    // qgZ: each unit's all-to-alls block (5-5.5, 7.5-8, 10-10.5): all 1.5 s exposed.
    s.blocking_reduce = true;
    t = replay_dp_step(s);
    CHECK(t.exposed == Approx(1.5));
    CHECK(t.exposed_each_mb == Approx(1.5));
    CHECK(t.total == Approx(10.5));
}

TEST_CASE("ZeRO++ flags: the engine's rules, with what to do", "[plan][zeropp]") {
    PlanInput in = gpu_question("gpt3-1.3b", 16, 1);
    in.layout.zero = 1;
    in.layout.qwz = true;
    CHECK_THAT(error_of(in), Catch::Matchers::Contains("--qwz quantizes ZeRO-3's parameter all-gathers"));
    in.layout.qwz = false;
    in.layout.qgz = true;
    CHECK_THAT(error_of(in), Catch::Matchers::Contains("ZeRO-1 reduce-scatters its whole gradients in the step"));
    CHECK_THAT(error_of(in), Catch::Matchers::Contains("give --zero 2 or --zero 3"));
    in.layout.zero = 2;
    in.gpus_per_node = 3;  // 16 ranks are not nodes of 3
    CHECK_THAT(error_of(in), Catch::Matchers::Contains("--qgz's node of 3 ranks"));
    in.gpus_per_node = 8;
    in.qgz_bits = 2;
    CHECK_THAT(error_of(in), Catch::Matchers::Contains("--qgz-bits 2 is not a choice"));
    in.qgz_bits = 8;
    CHECK(error_of(in) == "no error");
}

TEST_CASE("search: hpZ for ZeRO-3 across nodes; qwZ and qgZ only when allowed, and marked", "[plan][search][zeropp]") {
    SearchInput s;
    s.base = gpu_question("gpt3-6.7b", 64, 1);
    s.tp = s.pp = s.sp = s.dp_rep = 1;
    s.zero = 3;
    s.top = 0;
    const std::vector<PlanResult> exact = search(s);
    bool hpz = false, lossy = false;
    for (const PlanResult& r : exact) {
        hpz |= r.input.layout.hpz == 8;
        lossy |= r.input.layout.qwz || r.input.layout.qgz;
    }
    CHECK(hpz);
    CHECK(!lossy);
    CHECK(exact.size() == 2);  // hpZ off and on
    s.allow_quantized = true;
    SearchStats stats;
    const std::vector<PlanResult> all = search(s, &stats);
    CHECK(all.size() == 8);  // hpZ x qwZ x qgZ
    const std::string table = format_search(s, all, stats);
    CHECK_THAT(table, Catch::Matchers::Contains("hpZ8+qwZ+qgZ4*"));
    CHECK_THAT(table, Catch::Matchers::Contains("* qwZ/qgZ change results"));
}

TEST_CASE("ZeRO-3's communication buffers grow with the prefetch depth: (2 + K) units", "[plan][memory]") {
    // The unit in use, the K gathered ahead (with overlap on) and a unit's gradient: the
    // engine's Ledger peak grows by about a unit per K too (docs/formulas.md, Communication buffers).
    PlanInput in = gpu_question("gpt3-1.3b", 16, 1);
    in.layout.zero = 3;
    int64_t last = 0;
    for (int k : {0, 1, 2, 3}) {
        in.prefetch = k;
        const PlanResult r = plan(in);
        const int64_t unit = r.memory.comm / (2 + k);
        CHECK(r.memory.comm == (2 + k) * unit);
        CHECK(r.memory.comm > last);
        last = r.memory.comm;
    }
    in.overlap = false;  // blocking gathers: nothing ahead, whatever K says
    CHECK(plan(in).memory.comm == last / 5 * 2);
}

TEST_CASE("local SGD and DiLoCo: no gradient all-reduce across replicas, a sync every H steps", "[plan][replicas]") {
    // gpt3-6.7b on 64 GPUs, ZeRO-3 over shard groups of 8 (a node), 8 replicas across nodes.
    PlanInput in = gpu_question("gpt3-6.7b", 64, 1);
    in.layout.zero = 3;
    in.layout.dp_shard = 8;
    const PlanResult sync = plan(in);
    in.layout.replica_sync_every = 4;
    const PlanResult local = plan(in);
    const int64_t S = local.memory.slice.shard(8);  // my shard: what the optimizer updates
    int rep_grad = 0, rep_sync = 0;
    for (const CommCall& c : sync.comm) rep_grad += c.axis == "dp_rep" && c.payload == Payload::grad;
    for (const CommCall& c : local.comm) {
        CHECK_FALSE((c.axis == "dp_rep" && c.payload == Payload::grad));
        if (c.axis == "dp_rep" && c.op == "all_reduce") {
            ++rep_sync;
            CHECK(c.payload == Payload::optim);  // bf16: the fp32 master shard
            CHECK(c.bytes == 4 * S);
            CHECK(c.every == 4);
            CHECK_FALSE(c.intra_node);
        }
    }
    CHECK(rep_grad == 1);
    CHECK(rep_sync == 1);
    CHECK(local.memory.outer == 0);
    CHECK(local.layout_str().find("local SGD every 4 steps") != std::string::npos);
    // DiLoCo: the same bytes, plus theta and the momentum, 8 bytes per element of my shard.
    in.layout.replica_outer = ReplicaOuter::nesterov;
    const PlanResult diloco = plan(in);
    CHECK(diloco.memory.outer == 8 * S);
    CHECK(diloco.memory.total == local.memory.total + 8 * S);
    CHECK(diloco.comm_bytes() == local.comm_bytes());
    // The step's share of a sync is 1/H of it: a longer H costs less a step.
    in.layout.replica_sync_every = 16;
    CHECK(plan(in).time.step < diloco.time.step);
    // DDP: the gradients are reduced inside the shard group only (Replicas::ddp_group).
    in.layout = PlanLayout{};
    in.layout.dp_shard = 8;
    in.layout.replica_sync_every = 2;
    bool ddp_in_shard = false;
    for (const CommCall& c : plan(in).comm)
        if (c.payload == Payload::grad) ddp_in_shard = c.axis == "dp_shard" && c.group == 8 && c.intra_node;
    CHECK(ddp_in_shard);
    // train's words for what cannot be.
    in.layout.dp_shard = 64;  // one replica
    REQUIRE_THROWS_WITH(plan(in), Catch::Matchers::Contains("this layout has one replica: nothing to average"));
    in.layout.dp_shard = 8;
    in.layout.replica_sync_every = 1;
    in.layout.replica_outer = ReplicaOuter::nesterov;
    REQUIRE_THROWS_WITH(plan(in), Catch::Matchers::Contains("give --replica-sync-every H with H > 1"));
}

TEST_CASE("search: no ZeRO row over one rank beside DDP's, GA capped, local SGD kept", "[plan][search]") {
    SearchInput s;
    s.base = gpu_question("gpt3-125m", 8, 1);
    s.top = 1000;
    for (const PlanResult& r : search(s))  // ZeRO over a shard group of one rank is DDP: not listed again
        CHECK((r.input.layout.zero == 0 || r.mesh.dp_shard * r.mesh.sp > 1));
    // A batch past kSearchMaxGa micro-batches is not tried, and the search says so.
    s.base = gpu_question("gpt3-125m", 1, 1);
    s.base.model.L = 2;  // small enough that a GA of 4,096 at MBS 1 replays quickly
    s.max_gbs = 1 << 20;
    SearchStats st;
    const std::vector<PlanResult> capped = search(s, &st);
    CHECK(st.ga_capped);
    for (const PlanResult& r : capped) CHECK(r.gbs.ga <= kSearchMaxGa);
    // The question's local SGD reaches every layout with replicas.
    s = SearchInput{};
    s.base = gpu_question("gpt3-125m", 16, 1);
    s.base.layout.replica_sync_every = 4;
    s.top = 1000;
    int apart = 0;
    for (const PlanResult& r : search(s)) {
        CHECK(r.input.layout.replica_sync_every == 4);
        apart += r.mesh.dp_rep > 1;
    }
    CHECK(apart > 0);
}

TEST_CASE("--flash-attention: no scores kept, a log-sum-exp instead, QK^T again in backward", "[plan][paper]") {
    PlanInput in = gpu_question("gpt3-6.7b", 8, 2);  // s = 2048, h = 4096, a = 32, L = 32
    in.layout.zero = 3;
    const PlanResult kept = plan(in);
    in.flash_attention = true;
    const PlanResult flash = plan(in);
    const double s = 2048, b = 2, h = 4096, a = 32, L = 32;
    // Memory: Korthikanti's layer without its 5as/h term (as selective recompute), plus 4 bytes a query and head.
    REQUIRE(flash.memory.acts.per_layer ==
            Approx(korthikanti_layer_bytes(s, b, h, a, 1, false, Recompute::selective) + 4 * s * b * a));
    REQUIRE(kept.memory.acts.per_layer == Approx(korthikanti_layer_bytes(s, b, h, a, 1, false, Recompute::none)));
    REQUIRE_THAT(flash.memory.acts.formula, Catch::Matchers::Contains("lse"));
    // Time: backward's compute grows by QK^T once per layer, 2 b s^2 h FLOPs at the achieved rate.
    const double rate = in.hw.flops * in.hw.efficiency;
    REQUIRE(flash.time.t_compute_mb - kept.time.t_compute_mb == Approx(L * 2 * b * s * s * h / rate).epsilon(1e-9));
    REQUIRE(flash.time.hw_flops - kept.time.hw_flops == Approx(double(flash.gbs.gbs) * L * 2 * s * s * h));
    // The model's FLOPs (MFU's numerator) do not count the recompute: MFU falls with the time.
    REQUIRE(flash.time.mfu < kept.time.mfu);
    REQUIRE_THAT(format_plan(flash), Catch::Matchers::Contains("FlashAttention (no scores kept)"));
    // Ring attention already keeps no scores and recomputes its blocks: the flag changes nothing there.
    in.layout.sp = 2;
    in.layout.sp_mode = SpMode::ring;
    const PlanResult ring_flash = plan(in);
    in.flash_attention = false;
    const PlanResult ring = plan(in);
    REQUIRE(ring_flash.memory.total == ring.memory.total);
    REQUIRE(ring_flash.time.step == Approx(ring.time.step));
    // The engine's own layout: refused, with where the engine keeps no scores.
    in.flash_attention = true;
    in.act_model = ActModel::engine;
    REQUIRE_THAT(error_of(in), Catch::Matchers::Contains("--recompute selective on one SP rank"));
}

TEST_CASE("--grad-reduce-fp32: bf16 gradients kept and reduced in fp32, as Megatron-LM does under --bf16",
          "[plan][paper]") {
    PlanInput in = gpu_question("gpt3-6.7b", 64, 1);
    in.layout.tp = 8;
    in.layout.zero = 1;  // Megatron's distributed optimizer: 2 + 4 + 12/N bytes a parameter
    in.ga = 8;
    const PlanResult bf16 = plan(in);
    in.grad_reduce_fp32 = true;
    const PlanResult fp32 = plan(in);
    const int64_t P = fp32.memory.slice.elems;
    REQUIRE(fp32.memory.states.params == 2 * P);
    REQUIRE(fp32.memory.states.grads == 4 * P);
    REQUIRE(fp32.memory.states.optim == bf16.memory.states.optim);
    REQUIRE(bf16.memory.states.grads == 2 * P);
    // Every gradient collective moves twice the bytes; nothing else changes.
    auto bytes = [](const PlanResult& r, Payload what) {
        int64_t b = 0;
        for (const CommCall& c : r.comm)
            if (c.payload == what) b += c.bytes;
        return b;
    };
    REQUIRE(bytes(bf16, Payload::grad) > 0);
    REQUIRE(bytes(fp32, Payload::grad) == 2 * bytes(bf16, Payload::grad));
    REQUIRE(bytes(fp32, Payload::param) == bytes(bf16, Payload::param));
    REQUIRE(bytes(fp32, Payload::act) == bytes(bf16, Payload::act));
    REQUIRE_THAT(format_plan(fp32), Catch::Matchers::Contains("bf16 (gradients in fp32)") &&
                                        Catch::Matchers::Contains("4 Psi"));
    // DDP, ZeRO-3 and replicas alike.
    for (int zero : {0, 3}) {
        in.layout.zero = zero;
        in.layout.dp_rep = zero == 3 ? 2 : 0;
        in.grad_reduce_fp32 = false;
        const PlanResult a = plan(in);
        in.grad_reduce_fp32 = true;
        const PlanResult b = plan(in);
        REQUIRE(bytes(b, Payload::grad) == 2 * bytes(a, Payload::grad));
    }
    // fp32 runs, and this engine's own layout: refused, saying why.
    in.dtype = DType::f32;
    REQUIRE_THAT(error_of(in), Catch::Matchers::Contains("--grad-reduce-fp32") &&
                                   Catch::Matchers::Contains("needs --dtype bf16 and --acts paper"));
    in.dtype = DType::bf16;
    in.act_model = ActModel::engine;
    REQUIRE_THAT(error_of(in), Catch::Matchers::Contains("needs --dtype bf16 and --acts paper"));
}
