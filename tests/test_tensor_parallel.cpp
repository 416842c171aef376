// test_tensor_parallel.cpp — tensor parallelism (alone and with DP, ZeRO and
// replicas) is the single-rank step; it moves activations, never parameters,
// in exactly Megatron's volumes.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>

#include "comm/trace/trace.h"
#include "core/check.h"
#include "model/params.h"
#include "model/safetensors.h"
#include "train/train.h"
#include "equivalence.h"
#include "odd_vocab.h"

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
        // Vp/4 rows: V = 256 is padded to Vp = 512, a multiple of 128 x TP 4 (padded_vocab)
        REQUIRE(local.get("wte.weight").shape == Shape{128, 64});
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
    REQUIRE(back == whole);  // the four slices cover every element exactly once (and padding goes nowhere)
}

TEST_CASE("a padded wte is cut in whole rows; padding rows are zeros that map to no HF element", "[tp][vocab]") {
    GPT2Config c = model_preset("tiny");
    c.V = 101;
    c.vocab_divisible_by = 1;  // Vp = 104 at TP 4: ranks of 26 rows, the last with 23 words and 3 padding rows
    ParamLayout global = make_param_layout(c);
    REQUIRE(global.wte().shape == Shape{101, 64});  // 101 is a multiple of 1 x TP 1: no padding
    std::vector<float> whole(size_t(global.total));
    for (size_t i = 0; i < whole.size(); ++i) whole[i] = float(i + 1);
    std::vector<float> back(whole.size(), -1.0f);
    for (int r = 0; r < 4; ++r) {
        ParamLayout local = make_param_layout(c, 4, r);
        const ParamSpec& wte = local.wte();
        REQUIRE(wte.shape == Shape{26, 64});
        REQUIRE(wte.global_shape == Shape{101, 64});
        REQUIRE(wte.unpadded_numel() == (r < 3 ? 26 : 23) * 64);
        std::vector<float> mine(size_t(local.total), -1.0f);
        slice_for_rank(local, global, whole.data(), mine.data());
        for (int64_t i = 0; i < wte.numel; ++i) {
            INFO("rank " << r << " element " << i);
            REQUIRE(wte.global_index(i) == (i < wte.unpadded_numel() ? int64_t(r) * 26 * 64 + i : -1));
            REQUIRE(mine[size_t(wte.offset + i)] == (i < wte.unpadded_numel() ? whole[size_t(wte.global_index(i))] : 0.0f));
        }
        std::vector<float> init(size_t(local.total), -1.0f);
        init_params(local, c, 7, 0, local.total, init.data());
        for (int64_t i = wte.unpadded_numel(); i < wte.numel; ++i) REQUIRE(init[size_t(wte.offset + i)] == 0.0f);
        place_from_rank(local, global, mine.data(), back.data());
    }
    REQUIRE(back == whole);  // the words' rows exactly once; the padding rows wrote nothing
}

TEST_CASE("TP 2 and 4 equal one rank", "[tp]") {
    check_equals_one_rank({2, 2, 0, 0, 0});
    check_equals_one_rank({4, 4, 0, 0, 0});
}

TEST_CASE("TP 2 and 4 on an odd vocabulary equal one rank: wte padded to Vp as Megatron pads it", "[tp][vocab]") {
    // Without padding TP 2 refused V = 101 ("does not divide the vocabulary"). The one-rank run
    // pads too (to a multiple of D x 1), so the two runs hold different Vp: what they must share
    // is the loss of every step, the V rows of the gradients and the final V rows of wte.
    struct Case {
        int V, ranks, tp, D, dp_shard = 0, zero = 0;
        bool sequence_parallel = false;
    };
    const Case cases[] = {
        {101, 2, 2, 128},  // Vp 256: rank 0 holds 101 words and 27 padding rows, rank 1 only padding
        {101, 4, 4, 128},  // Vp 512: ranks 1-3 only padding
        {211, 2, 2, 128},  // Vp 256: rank 1 holds 83 words and 45 padding rows
        {211, 4, 4, 128},
        {101, 4, 4, 1},    // Vp 104: the last rank holds 23 words and 3 padding rows
        {211, 2, 2, 1},    // Vp 212
        {101, 4, 2, 1, 2, 3},           // dp 2 x tp 2 x ZeRO-3: the padding is sharded with the rest
        {211, 4, 4, 128, 0, 0, true},   // Megatron-SP: the head gathers the sequence, then the padded vocabulary
    };
    for (const Case& c : cases) {
        TrainOptions one;
        one.model = model_preset("tiny");
        one.model.V = c.V;
        one.model.vocab_divisible_by = c.D;
        one.data = odd_vocab_tokens(c.V);
        one.steps = 10;
        one.quiet = true;
        one.mbs = 8;
        one.dump_grads = out_path("vocab_grads_one.safetensors");
        one.save = out_path("vocab_end_one.safetensors");
        TrainOptions par = one;
        par.ranks = c.ranks;
        par.tp = c.tp;
        par.dp_shard = c.dp_shard;
        par.zero = c.zero;
        par.sequence_parallel = c.sequence_parallel;
        par.mbs = 8 * c.tp / c.ranks;  // the same global batch
        par.dump_grads = out_path("vocab_grads_par.safetensors");
        par.save = out_path("vocab_end_par.safetensors");
        INFO("V " << c.V << " ranks " << c.ranks << " tp " << c.tp << " --vocab-divisible-by " << c.D << " ZeRO-"
                  << c.zero << (c.sequence_parallel ? " Megatron-SP" : ""));
        require_same_training(par, one);
        // On disk: HF's [V, C], whatever Vp the run held.
        REQUIRE(read_safetensors(par.save).get("wte.weight").shape == Shape{c.V, 64});
        REQUIRE(read_safetensors(par.dump_grads).get("wte.weight").shape == Shape{c.V, 64});
    }
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
