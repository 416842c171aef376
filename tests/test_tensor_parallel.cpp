// test_tensor_parallel.cpp — tensor parallelism (alone and with DP, ZeRO and
// replicas) is the single-rank step; it moves activations, never parameters,
// in exactly Megatron's volumes.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>

#include "comm/trace.h"
#include "core/check.h"
#include "model/params.h"
#include "model/safetensors.h"
#include "train/train.h"
#include "equivalence.h"

using namespace ss;

namespace {

std::string out_path(const std::string& name) { return test_file("test_tp_" + name); }

struct Layout {
    int ranks, tp, dp_shard, dp_rep, zero;
    bool sequence_parallel = false;
    int ga = 1;
};

void check_equals_one_rank(const Layout& l) {
    const int gbs = 8;
    TrainOptions one;
    one.model = model_preset("tiny");
    one.steps = 10;
    one.quiet = true;
    one.mbs = gbs / l.ga;
    one.ga = l.ga;
    one.dump_grads = out_path("grads_one.safetensors");
    one.save = out_path("end_one.safetensors");
    TrainOptions par = one;
    par.ranks = l.ranks;
    par.tp = l.tp;
    par.dp_shard = l.dp_shard;
    par.dp_rep = l.dp_rep;
    par.zero = l.zero;
    par.sequence_parallel = l.sequence_parallel;
    const int dp = l.ranks / l.tp;
    par.mbs = gbs / dp / l.ga;  // the same global batch
    par.dump_grads = out_path("grads_par.safetensors");
    par.save = out_path("end_par.safetensors");
    INFO("ranks " << l.ranks << " tp " << l.tp << " dp_shard " << l.dp_shard << " dp_rep " << l.dp_rep << " ZeRO-"
                  << l.zero << (l.sequence_parallel ? " Megatron-SP" : "") << " GA " << l.ga);
    // The TP ranks add partial sums of the same products: tolerances in equivalence.h.
    require_same_training(par, one);
}

}  // namespace

TEST_CASE("TP slices are the HF tensors cut as Megatron cuts them", "[tp]") {
    GPT2Config c = model_preset("tiny");
    ParamLayout global = make_param_layout(c);
    std::vector<float> whole(size_t(global.total));
    for (size_t i = 0; i < whole.size(); ++i) whole[i] = float(i);
    std::vector<float> back(whole.size(), -1.0f);
    for (int r = 0; r < 4; ++r) {
        ParamLayout local = make_param_layout(c, 4, r);
        REQUIRE(local.get("h.0.attn.c_attn.weight").shape == Shape{64, 48});  // 3C/4 columns: 1 head of q, k, v
        REQUIRE(local.get("h.0.mlp.c_proj.weight").shape == Shape{64, 64});   // 4C/4 rows
        REQUIRE(local.get("wte.weight").shape == Shape{64, 64});              // V/4 rows
        REQUIRE(local.get("h.0.ln_1.weight").shape == Shape{64});             // replicated
        std::vector<float> mine(size_t(local.total));
        slice_for_rank(local, global, whole.data(), mine.data());
        // Rank r's q columns of c_attn are columns [16r, 16r+16) of the whole; its k
        // columns start at C + 16r.
        const ParamSpec& qkv = local.get("h.0.attn.c_attn.weight");
        const int64_t g0 = global.get("h.0.attn.c_attn.weight").offset;
        REQUIRE(mine[size_t(qkv.offset)] == whole[size_t(g0 + 16 * r)]);
        REQUIRE(mine[size_t(qkv.offset + 16)] == whole[size_t(g0 + 64 + 16 * r)]);
        REQUIRE(mine[size_t(qkv.offset + 48)] == whole[size_t(g0 + 192 + 16 * r)]);  // next row
        place_from_rank(local, global, mine.data(), back.data());
    }
    REQUIRE(back == whole);  // the four slices cover every element exactly once
}

TEST_CASE("TP 2 and 4 equal one rank", "[tp]") {
    check_equals_one_rank({2, 2, 0, 0, 0});
    check_equals_one_rank({4, 4, 0, 0, 0});
}

TEST_CASE("TP composes with DP, ZeRO 1-3 and replica groups", "[tp][zero]") {
    check_equals_one_rank({4, 2, 2, 1, 0});  // dp 2 x tp 2
    check_equals_one_rank({4, 2, 2, 1, 1});
    check_equals_one_rank({4, 2, 2, 1, 3});  // dp 2 x tp 2 x ZeRO-3
    check_equals_one_rank({8, 2, 2, 2, 2});  // dp_rep 2 x dp_shard 2 x tp 2
}

TEST_CASE("Megatron sequence parallelism equals one rank, alone and with DP, ZeRO and GA", "[tp][msp]") {
    check_equals_one_rank({2, 2, 0, 0, 0, true});
    check_equals_one_rank({4, 4, 0, 0, 0, true});
    check_equals_one_rank({4, 2, 2, 1, 3, true});     // dp 2 x tp 2 (SP) x ZeRO-3
    check_equals_one_rank({4, 2, 2, 1, 1, true, 2});  // ZeRO-1, GA 2: LayerNorm grads summed once per step
    check_equals_one_rank({4, 2, 2, 1, 2, true, 2});  // ZeRO-2, GA 2: summed per micro-batch, before the scatter
}

TEST_CASE("Megatron-SP moves the same activation volume as TP, as all-gathers and reduce-scatters", "[tp][msp][trace]") {
    TrainOptions o;
    o.model = model_preset("tiny");
    o.steps = 2;
    o.quiet = true;
    o.ranks = 2;
    o.tp = 2;
    o.sequence_parallel = true;
    o.mbs = 2;
    o.T = 32;
    o.trace = out_path("trace_msp.json");
    train(o, nullptr);
    Trace t = read_chrome_trace(o.trace);
    const uint64_t B = 2, T = 32, C = 64, L = 2, N = B * T, f32 = 4;
    std::map<std::string, uint64_t> got;
    for (const TraceEvent& e : t.events)
        if (e.kind == TraceEvent::Kind::collective && e.rank == 0 && e.label.step == 2 && e.axis == "tp")
            got[std::string(payload_name(e.label.payload)) + "/" + phase_name(e.label.phase) + "/" + e.name] += e.bytes;
    // Per block, forward: 2 all-gathers (before the column-parallel layers) and 2
    // reduce-scatters (after the row-parallel ones) of B*T*C; backward the same,
    // swapped (Korthikanti et al. 2022, section 4.2.2). Outside the blocks: the
    // embedding's reduce-scatter and ln_f's all-gather in forward, their mirror
    // images in backward; the loss's max (all_gather) and two sums as with TP.
    // Then the gradients of what each rank holds whole (LayerNorms, row-parallel
    // biases, wpe), computed from T/t tokens each, summed over tp.
    const uint64_t ln_bias = L * (4 * C + 2 * C) + uint64_t(o.model.maxT) * C + 2 * C;  // ln_1, ln_2, 2 biases; wpe; ln_f
    std::map<std::string, uint64_t> want = {
        {"act/fwd/all_gather", (2 * L + 1) * N * C * f32 + 2 * N * f32},
        {"act/fwd/reduce_scatter", (2 * L + 1) * N * C * f32},
        {"act/fwd/all_reduce", 2 * N * f32},
        {"act_grad/bwd/all_gather", (2 * L + 1) * N * C * f32},
        {"act_grad/bwd/reduce_scatter", (2 * L + 1) * N * C * f32},
        {"grad/bwd/all_reduce", ln_bias * f32},
    };
    REQUIRE(got == want);
}

TEST_CASE("TP moves activations only, in Megatron's volumes", "[tp][trace]") {
    TrainOptions o;
    o.model = model_preset("tiny");
    o.steps = 2;
    o.quiet = true;
    o.ranks = 2;
    o.tp = 2;
    o.mbs = 2;
    o.T = 32;
    o.trace = out_path("trace.json");
    train(o, nullptr);
    Trace t = read_chrome_trace(o.trace);
    const uint64_t B = 2, T = 32, C = 64, L = 2, N = B * T, f32 = 4;
    std::map<std::string, uint64_t> got;
    for (const TraceEvent& e : t.events) {
        if (e.kind != TraceEvent::Kind::collective || e.rank != 0 || e.label.step != 2) continue;
        if (e.axis != "tp") continue;
        got[std::string(payload_name(e.label.payload)) + "/" + phase_name(e.label.phase) + "/" + e.name] += e.bytes;
    }
    // Per block: 2 all-reduces of B*T*C in forward (g after attention and MLP)
    // and 2 in backward (f before them): Shoeybi et al. 2019, section 3.
    // Plus the vocabulary-parallel embedding (1 forward all-reduce), the head's
    // input gradient (1 backward all-reduce) and the loss: a max (all_gather of
    // N values from each of the 2 ranks) and 2 sums of N values.
    std::map<std::string, uint64_t> want = {
        {"act/fwd/all_reduce", (2 * L + 1) * N * C * f32 + 2 * N * f32},
        {"act/fwd/all_gather", 2 * N * f32},
        {"act_grad/bwd/all_reduce", (2 * L + 1) * N * C * f32},
    };
    REQUIRE(got == want);
    for (const TraceEvent& e : t.events)
        if (e.kind == TraceEvent::Kind::collective && e.axis == "tp" && e.label.phase != Phase::none)
            REQUIRE((e.label.payload == Payload::act || e.label.payload == Payload::act_grad));
}

TEST_CASE("bad tensor-parallel layouts get clear errors", "[tp][errors]") {
    {
        TrainOptions o;
        o.model = model_preset("tiny");
        o.steps = 1;
        o.sequence_parallel = true;
        REQUIRE_THROWS_WITH(train(o, nullptr), Catch::Contains("--sequence-parallel splits the sequence over the tp"));
        o.ranks = 4;
        o.tp = 2;
        o.sp = 2;
        REQUIRE_THROWS_WITH(train(o, nullptr), Catch::Contains("cannot be combined"));
    }
    TrainOptions o;
    o.model = model_preset("tiny");  // H = 4
    o.steps = 1;
    o.ranks = 3;
    o.tp = 3;
    REQUIRE_THROWS_WITH(train(o, nullptr), Catch::Contains("TP=3 does not divide n_head=4; choose TP in {1, 2, 4}"));
    o.ranks = 4;
    o.tp = 8;
    REQUIRE_THROWS_WITH(train(o, nullptr), Catch::Contains("TP=8"));
    o.tp = 2;
    o.ranks = 6;
    o.dp_shard = 2;
    o.dp_rep = 2;
    REQUIRE_THROWS_WITH(train(o, nullptr), Catch::Contains("world size 6"));
}
