// test_pipeline.cpp — pipeline parallelism (alone, with every schedule,
// uneven splits, recompute, and with the other axes) is the single-rank
// step; it moves activations between stages in exactly Narayanan's volumes,
// and each stage holds the activations of the micro-batches in flight.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>

#include "comm/trace/trace.h"
#include "core/check.h"
#include "model/gpt2.h"
#include "model/params.h"
#include "parallel/pipeline.h"
#include "train/train.h"
#include "equivalence.h"

using namespace ss;

namespace {

std::string out_path(const std::string& name) { return test_file("test_pp_" + name); }

GPT2Config model4() {  // tiny with 4 blocks: L=4 C=64 H=4 V=256 maxT=64
    GPT2Config m = model_preset("tiny");
    m.L = 4;
    return m;
}

struct Layout {
    int ranks = 1, pp = 1, ga = 1;
    std::string schedule = "1f1b";
    int v = 1;
    std::vector<int> split = {};
    std::string recompute = "none";
    int tp = 1, sp = 1, dp_shard = 0, dp_rep = 0, zero = 0;
    bool megatron_sp = false;
    std::string sp_mode = "ulysses";
    int L = 4;
};

std::string describe(const Layout& l) {
    std::string s = "ranks " + std::to_string(l.ranks) + " pp " + std::to_string(l.pp) + " " + l.schedule +
                    " v " + std::to_string(l.v) + " ga " + std::to_string(l.ga) + " recompute " + l.recompute +
                    " tp " + std::to_string(l.tp) + (l.megatron_sp ? "+SP" : "") + " sp " + std::to_string(l.sp) +
                    " " + l.sp_mode + " zero " + std::to_string(l.zero) + " dp_shard " + std::to_string(l.dp_shard) +
                    " dp_rep " + std::to_string(l.dp_rep) + " L " + std::to_string(l.L) + " split";
    for (int n : l.split) s += " " + std::to_string(n);
    return s;
}

// The layout against one rank on the same global batch of 8 sequences, in the
// same GA micro-batches: 10 steps of losses, the first step's gathered
// gradients and the final parameters (tolerances in equivalence.h).
void check_equals_one_rank(const Layout& l) {
    const int gbs = 8;
    TrainOptions one;
    one.model = model4();
    one.model.L = l.L;
    one.steps = 10;
    one.quiet = true;
    one.ga = l.ga;
    one.mbs = gbs / l.ga;
    one.dump_grads = out_path("grads_one.safetensors");
    one.save = out_path("end_one.safetensors");
    TrainOptions par = one;
    par.ranks = l.ranks;
    par.pp = l.pp;
    par.schedule = parse_schedule(l.schedule);
    par.pp_virtual = l.v;
    par.pp_split = l.split;
    par.recompute = parse_recompute(l.recompute);
    par.tp = l.tp;
    par.sequence_parallel = l.megatron_sp;
    par.sp = l.sp;
    par.sp_mode = parse_sp_mode(l.sp_mode);
    par.dp_shard = l.dp_shard;
    par.dp_rep = l.dp_rep;
    par.zero = l.zero;
    const int dp = l.ranks / (l.pp * l.tp * l.sp);
    par.mbs = gbs / dp / l.ga;
    par.dump_grads = out_path("grads_par.safetensors");
    par.save = out_path("end_par.safetensors");
    INFO(describe(l));
    require_same_training(par, one);
}

Layout pp(int ranks, int p, const std::string& schedule, int ga) {
    Layout l;
    l.ranks = ranks;
    l.pp = p;
    l.schedule = schedule;
    l.ga = ga;
    return l;
}

}  // namespace

TEST_CASE("a pipeline stage's layout holds its blocks, and the ends hold the embedding and the tied head", "[pp]") {
    const GPT2Config c = model4();
    const ParamLayout whole = make_param_layout(c);
    const std::vector<int> split = pipeline_split(c.L, 3, {1, 2, 1});

    const ParamLayout first = make_param_layout(c, 1, 0, pipeline_part(split, 0));
    REQUIRE(first.specs.front().name == "wte.weight");
    REQUIRE(first.wpe().name == "wpe.weight");
    REQUIRE(first.block(0, kLn1W).name == "h.0.ln_1.weight");
    REQUIRE(first.specs.back().name == "h.0.mlp.c_proj.bias");
    REQUIRE(first.find("ln_f.weight") == nullptr);

    const ParamLayout middle = make_param_layout(c, 1, 0, pipeline_part(split, 1));
    REQUIRE(!middle.has_wte());
    REQUIRE(middle.block(1, kLn1W).name == "h.1.ln_1.weight");
    REQUIRE(middle.block(2, kFcProjB).name == "h.2.mlp.c_proj.bias");
    REQUIRE(middle.specs.size() == 2 * kBlockParams);

    const ParamLayout last = make_param_layout(c, 1, 0, pipeline_part(split, 2));
    REQUIRE(last.wte().name == "wte.weight");  // the tied head's own copy
    REQUIRE(last.find("wpe.weight") == nullptr);
    REQUIRE(last.block(3, kAttnW).name == "h.3.attn.c_attn.weight");
    REQUIRE(last.lnf_b().name == "ln_f.bias");
    // Every tensor of the model is on exactly one stage, but wte, which is on both ends.
    REQUIRE(first.total + middle.total + last.total == whole.total + whole.wte().numel);

    // Units: wte a unit of its own on a stage (the first and last shard it alike).
    const std::vector<Unit> uf = make_units(first), ul = make_units(last), uw = make_units(whole);
    REQUIRE(uw.size() == size_t(c.L + 2));  // the whole model: wte + wpe one unit, as before
    REQUIRE(uf.size() == 3);                // wte, wpe, h.0
    REQUIRE(uf[0].size() == first.wte().numel);
    REQUIRE(ul.size() == 3);                // wte, h.3, ln_f
    REQUIRE(ul[0].size() == uf[0].size());
    REQUIRE(ul[1].layer == 3);
    REQUIRE(ul[2].layer == c.L);

    // A stage takes its slice of whole HF tensors by name.
    std::vector<float> flat(size_t(whole.total));
    for (size_t i = 0; i < flat.size(); ++i) flat[i] = float(i);
    std::vector<float> mine(size_t(last.total));
    slice_for_rank(last, whole, flat.data(), mine.data());
    REQUIRE(mine[size_t(last.block(3, kLn1W).offset)] == float(whole.block(3, kLn1W).offset));
    REQUIRE(mine[size_t(last.lnf_w().offset)] == float(whole.lnf_w().offset));
}

TEST_CASE("pipeline_split: even by default, as given, or a clear error", "[pp]") {
    REQUIRE(pipeline_split(12, 4, {}) == std::vector<int>{3, 3, 3, 3});
    REQUIRE(pipeline_split(7, 3, {}) == std::vector<int>{3, 2, 2});
    REQUIRE(pipeline_split(4, 2, {3, 1}) == std::vector<int>{3, 1});
    REQUIRE_THROWS_WITH(pipeline_split(2, 4, {}), Catch::Contains("only L=2 blocks") && Catch::Contains("--pp x --pp-virtual <= 2"));
    REQUIRE_THROWS_WITH(pipeline_split(4, 2, {2, 1}), Catch::Contains("adds up to 3") && Catch::Contains("sum to 4"));
    REQUIRE_THROWS_WITH(pipeline_split(4, 2, {1, 1, 2}), Catch::Contains("lists 3 stages"));
    REQUIRE_THROWS_WITH(pipeline_split(4, 2, {4, 0}), Catch::Contains("at least one block"));
}

TEST_CASE("GPipe and 1F1B with PP 2 and 4 and several micro-batch counts equal one rank", "[pp]") {
    for (const std::string schedule : {"gpipe", "1f1b"}) {
        for (int ga : {1, 2, 4}) check_equals_one_rank(pp(2, 2, schedule, ga));
        for (int ga : {2, 4, 8}) check_equals_one_rank(pp(4, 4, schedule, ga));
    }
}

TEST_CASE("interleaved 1F1B equals one rank", "[pp]") {
    Layout l = pp(2, 2, "interleaved", 2);
    l.v = 2;
    check_equals_one_rank(l);
    l.ga = 4;
    check_equals_one_rank(l);
    Layout four = pp(4, 4, "interleaved", 4);  // 8 virtual stages of one block
    four.v = 2;
    four.L = 8;
    check_equals_one_rank(four);
}

TEST_CASE("uneven splits equal one rank", "[pp]") {
    Layout a = pp(2, 2, "1f1b", 4);
    a.split = {3, 1};
    check_equals_one_rank(a);
    Layout b = pp(3, 3, "gpipe", 2);
    b.split = {1, 2, 1};
    check_equals_one_rank(b);
}

TEST_CASE("recompute selective and full give the same training, with and without a pipeline", "[pp][recompute]") {
    for (const std::string r : {"selective", "full"}) {
        Layout one_rank = pp(1, 1, "1f1b", 2);
        one_rank.recompute = r;
        check_equals_one_rank(one_rank);
        Layout l = pp(2, 2, "1f1b", 4);
        l.recompute = r;
        check_equals_one_rank(l);
    }
}

TEST_CASE("pipeline with the other axes at once equals one rank", "[pp][4d]") {
    Layout a = pp(8, 2, "1f1b", 2);  // pp 2 x tp 2 x dp 2, ZeRO-1
    a.tp = 2;
    a.zero = 1;
    check_equals_one_rank(a);
    Layout b = pp(8, 2, "1f1b", 2);  // pp 2 x Ulysses sp 2 x dp 2
    b.sp = 2;
    check_equals_one_rank(b);
    Layout c = pp(8, 2, "gpipe", 2);  // pp 2 x dp_rep 2 x dp_shard 2, ZeRO-2
    c.dp_shard = 2;
    c.dp_rep = 2;
    c.zero = 2;
    check_equals_one_rank(c);
    Layout d = pp(4, 2, "1f1b", 4);  // pp 2 x ZeRO-3 2: parameters gathered per stage and micro-batch
    d.zero = 3;
    check_equals_one_rank(d);
    Layout e = pp(8, 2, "1f1b", 2);  // pp 2 x tp 2 + Megatron-SP x ZeRO-3 2, full recompute
    e.tp = 2;
    e.megatron_sp = true;
    e.zero = 3;
    e.recompute = "full";
    check_equals_one_rank(e);
    Layout f = pp(8, 2, "interleaved", 2);  // interleaved pp 2 x tp 2 x dp 2, ZeRO-2
    f.v = 2;
    f.tp = 2;
    f.zero = 2;
    check_equals_one_rank(f);
    Layout g = pp(8, 2, "1f1b", 2);  // pp 2 x ring sp 2 x dp 2, ZeRO-1, selective recompute
    g.sp = 2;
    g.sp_mode = "ring";
    g.zero = 1;
    g.recompute = "selective";
    check_equals_one_rank(g);
}

TEST_CASE("--init, --save and --dump-grads are whole HF files under a pipeline", "[pp][files]") {
    // Start both runs from a file that is not the counter-based init.
    TrainOptions seed;
    seed.model = model4();
    seed.steps = 3;
    seed.quiet = true;
    seed.save = out_path("start.safetensors");
    train(seed, nullptr);
    TrainOptions one = seed;
    one.steps = 4;
    one.ga = 2;
    one.init = seed.save;
    one.save = out_path("from_file_one.safetensors");
    one.dump_grads = out_path("from_file_grads_one.safetensors");
    TrainOptions par = one;
    par.ranks = 4;
    par.pp = 4;
    par.save = out_path("from_file_par.safetensors");
    par.dump_grads = out_path("from_file_grads_par.safetensors");
    require_same_training(par, one);
    // The file is whole: every tensor of the model, wte once.
    StFile f = read_safetensors(par.save);
    REQUIRE(f.tensors.size() == make_param_layout(model4()).specs.size());
}

TEST_CASE("p2p bytes per step are 2 x MBS x T x C x 4 per micro-batch per boundary", "[pp][trace]") {
    for (int p : {2, 4}) {
        TrainOptions o;
        o.model = model4();
        o.ranks = p;
        o.pp = p;
        o.ga = 4;
        o.mbs = 2;
        o.steps = 2;
        o.quiet = true;
        o.trace = out_path("trace.json");
        train(o, nullptr);
        const Trace t = read_chrome_trace(o.trace);
        const int64_t x = int64_t(o.mbs) * o.model.maxT * o.model.C * 4;  // one micro-batch at a boundary, fp32
        for (int rank = 0; rank < p; ++rank) {
            std::map<std::string, int64_t> bytes;
            for (const TraceEvent& e : t.events)
                if (e.kind == TraceEvent::Kind::collective && e.rank == rank && e.label.step == 2 && e.axis == "pp")
                    bytes[std::string(payload_name(e.label.payload)) + "/" + e.name] += int64_t(e.bytes);
            INFO("pp " << p << " rank " << rank);
            const int64_t m = o.ga;
            CHECK(bytes["act/send"] == (rank < p - 1 ? m * x : 0));
            CHECK(bytes["act/recv"] == (rank > 0 ? m * x : 0));
            CHECK(bytes["act_grad/send"] == (rank > 0 ? m * x : 0));
            CHECK(bytes["act_grad/recv"] == (rank < p - 1 ? m * x : 0));
            // The tied embedding: first and last stage sum wte's gradient (V x C fp32), on axis pp.
            CHECK(bytes["grad/all_reduce"] == (rank == 0 || rank == p - 1 ? int64_t(o.model.V) * o.model.C * 4 : 0));
        }
    }
}

TEST_CASE("a stage holds the activations of the micro-batches in flight: GPipe m, 1F1B p", "[pp][memory]") {
    auto acts_peak = [](const std::string& schedule, const std::string& recompute, int rank) {
        TrainOptions o;
        o.model = model4();
        o.ranks = 2;
        o.pp = 2;
        o.ga = 8;
        o.mbs = 1;
        o.steps = 1;
        o.quiet = true;
        o.schedule = parse_schedule(schedule);
        o.recompute = parse_recompute(recompute);
        return double(train(o, nullptr).rank_peak[size_t(rank)][int(Mem::acts)]);
    };
    // Stage 0 of 2 with m = 8: GPipe keeps 8 micro-batches' activations, 1F1B 2.
    const double gpipe = acts_peak("gpipe", "none", 0), one_f_one_b = acts_peak("1f1b", "none", 0);
    INFO("stage 0 acts peak: GPipe " << gpipe << ", 1F1B " << one_f_one_b);
    CHECK(gpipe / one_f_one_b == Approx(8.0 / 2.0).epsilon(0.15));
    // Recompute keeps less; full keeps the least (each block's input only).
    const double selective = acts_peak("1f1b", "selective", 0), full = acts_peak("1f1b", "full", 0);
    INFO("1F1B stage 0: none " << one_f_one_b << ", selective " << selective << ", full " << full);
    CHECK(selective < one_f_one_b);
    CHECK(full < selective);
}

TEST_CASE("bad pipeline input gets a clear error", "[pp][errors]") {
    TrainOptions o;
    o.model = model4();
    o.steps = 1;
    o.quiet = true;
    auto fails_with = [&](TrainOptions bad, const std::string& what) {
        INFO("expected: " << what);
        REQUIRE_THROWS_WITH(train(bad, nullptr), Catch::Contains(what));
    };
    TrainOptions a = o;
    a.ranks = 8;
    a.pp = 8;
    fails_with(a, "only L=4 blocks");
    TrainOptions b = o;
    b.ranks = 2;
    b.pp = 2;
    b.pp_split = {3, 2};
    fails_with(b, "--pp-split adds up to 5");
    TrainOptions c = o;
    c.ranks = 2;
    c.pp = 2;
    c.schedule = Schedule::interleaved;
    c.pp_virtual = 3;
    c.ga = 2;
    fails_with(c, "pipeline of 6 stages (--pp x --pp-virtual) but the model has only L=4 blocks");
    fails_with(c, "(interleaving: choose --pp-virtual in {2})");
    TrainOptions d = o;
    d.ranks = 4;
    d.pp = 4;
    d.schedule = Schedule::interleaved;
    d.pp_virtual = 2;
    d.ga = 2;
    d.model.L = 8;
    fails_with(d, "multiple of --pp 4");
    TrainOptions e = o;
    e.ranks = 2;
    e.pp = 2;
    e.pp_virtual = 2;
    fails_with(e, "--schedule interleaved");
    // A name that is no choice is refused where it is read, as the command line reads it.
    REQUIRE_THROWS_WITH(parse_schedule("zb-h1"), Catch::Contains("zb-h1"));
    REQUIRE_THROWS_WITH(parse_recompute("some"), Catch::Contains("--recompute some"));
    TrainOptions h = o;
    h.ranks = 3;
    h.pp = 2;
    fails_with(h, "does not divide the world size 3");
}
