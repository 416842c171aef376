// test_model.cpp — GPT-2 on one rank against PyTorch (tests/golden/), the
// parameter layout, the initialisation, the Ledger's byte counts and training.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/rng.h"
#include "model/checkpoint.h"
#include "model/finite.h"
#include "model/gpt2.h"
#include "model/model_parallel.h"
#include "model/safetensors.h"
#include "optim/adamw.h"
#include "train/train.h"

using namespace ss;

namespace {

std::string golden(const std::string& name) { return std::string(SS_SOURCE_DIR) + "/tests/golden/" + name; }

// ||a - b|| / ||b||: the error of a whole tensor relative to its size.
double rel_l2(const float* a, const std::vector<float>& b) {
    double num = 0, den = 0;
    for (size_t i = 0; i < b.size(); ++i) {
        num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
        den += double(b[i]) * b[i];
    }
    return std::sqrt(num / (den > 0 ? den : 1e-30));
}

// max |a - b| / max |b|: the worst element, relative to the tensor's scale.
double rel_max(const float* a, const std::vector<float>& b) {
    double err = 0, scale = 1e-30;
    for (size_t i = 0; i < b.size(); ++i) {
        err = std::max(err, std::fabs(double(a[i]) - b[i]));
        scale = std::max(scale, std::fabs(double(b[i])));
    }
    return err / scale;
}

int meta_int(const StFile& f, const char* key) { return std::stoi(f.meta(key)); }

void check_against_golden(const std::string& file) {
    StFile g = read_safetensors(golden(file));
    GPT2Config cfg;
    cfg.name = file;
    cfg.L = meta_int(g, "L");
    cfg.C = meta_int(g, "C");
    cfg.H = meta_int(g, "H");
    cfg.V = meta_int(g, "V");
    cfg.maxT = meta_int(g, "maxT");
    const int B = meta_int(g, "B"), T = meta_int(g, "T");

    Ledger ledger;
    GPT2 model(cfg, ledger);
    StFile params;
    for (const auto& [name, t] : g.tensors)
        if (model.layout().find(name)) params.put(t);
    safetensors_to_flat(params, model.layout(), model.w(), file);

    std::vector<int32_t> tok = st_to_i32(g.get("tokens"));  // [B, T+1]
    std::vector<int> in(B * T), tg(B * T);
    for (int b = 0; b < B; ++b)
        for (int t = 0; t < T; ++t) {
            in[b * T + t] = tok[b * (T + 1) + t];
            tg[b * T + t] = tok[b * (T + 1) + t + 1];
        }
    Activations acts;
    model.zero_grad();
    float loss = model.forward(in.data(), tg.data(), B, T, acts);
    model.backward(in.data(), tg.data(), acts, 1.0f / float(B * T));

    // fp32 against fp32: both sides sum the same terms in different orders
    // (BLAS blocking, PyTorch's kernels), so only rounding differs: a few ulp
    // per operation, far below 1e-5 relative for the loss.
    float want = st_to_f32(g.get("loss"))[0];
    INFO(file << ": loss " << loss << " vs PyTorch " << want);
    REQUIRE(std::fabs(loss - want) <= 1e-5f * std::fabs(want));

    for (const ParamSpec& s : model.layout().specs) {
        std::vector<float> gw = st_to_f32(g.get("grad." + s.name));
        // PyTorch's model has V rows of wte; ours pads to Vp (odd: 97 -> 128). The padding
        // rows are never predicted, so their gradient is exactly zero, and the V rows
        // (the first, padding comes last) must match PyTorch's as every other tensor does.
        REQUIRE(gw.size() == size_t(numel(s.global_shape)));
        for (int64_t i = int64_t(gw.size()); i < s.numel; ++i) REQUIRE(model.g()[s.offset + i] == 0.0f);
        double l2 = rel_l2(model.g() + s.offset, gw), mx = rel_max(model.g() + s.offset, gw);
        INFO(file << ": grad of " << s.name << " rel_l2=" << l2 << " rel_max=" << mx);
        // Gradients pass through every layer above them, so rounding piles up:
        // still, fp32 keeps the whole tensor within 1e-5 and its worst element
        // within 1e-4 of its largest value (issue: "well under 1e-4").
        CHECK(l2 < 1e-5);
        CHECK(mx < 1e-4);
    }
}

}  // namespace

TEST_CASE("loss and every gradient match PyTorch on the tiny model", "[model][golden]") {
    check_against_golden("tiny.safetensors");
}

TEST_CASE("loss and every gradient match PyTorch on an odd shape (C=48, H=3, T=17, V=97)", "[model][golden]") {
    check_against_golden("odd.safetensors");
}

TEST_CASE("parameter counts match GPT-2's published sizes", "[model]") {
    // HF's gpt2 has 124,439,808 parameters (tied head counted once).
    REQUIRE(num_params(model_preset("gpt2")) == 124439808);
    REQUIRE(num_params(model_preset("gpt2-medium")) == 354823168);
    REQUIRE(num_params(model_preset("gpt2-large")) == 774030080);
    REQUIRE(num_params(model_preset("gpt2-xl")) == 1557611200);
    for (const std::string& n : model_preset_names()) {
        GPT2Config c = model_preset(n);
        // In memory wte holds Vp rows (GPT-2: 50304), the padding counted where it is allocated.
        const int64_t padding = int64_t(padded_vocab(c.V, 1, c.vocab_divisible_by) - c.V) * c.C;
        REQUIRE(make_param_layout(c).total == num_params(c) + padding);
    }
}

TEST_CASE("the vocabulary is padded as Megatron-LM pads it: a multiple of D x TP", "[model][vocab]") {
    REQUIRE(padded_vocab(50257, 1, 128) == 50304);  // llm.c's Vp for GPT-2
    REQUIRE(padded_vocab(50257, 2, 128) == 50432);
    REQUIRE(padded_vocab(50257, 8, 128) == 50176 + 1024);
    REQUIRE(padded_vocab(256, 1, 128) == 256);  // tiny: a multiple already
    REQUIRE(padded_vocab(256, 4, 128) == 512);
    REQUIRE(padded_vocab(101, 4, 1) == 104);    // --vocab-divisible-by 1: the least padding
    REQUIRE(padded_vocab(100, 4, 1) == 100);
    REQUIRE_THROWS_WITH(padded_vocab(101, 2, 0), Catch::Contains("--vocab-divisible-by 0 must be at least 1"));
    GPT2Config c = model_preset("tiny");
    c.vocab_divisible_by = -3;
    REQUIRE_THROWS_WITH(validate(c), Catch::Contains("--vocab-divisible-by -3"));

    const ParamLayout gpt2 = make_param_layout(model_preset("gpt2"));
    REQUIRE(gpt2.wte().shape == Shape{50304, 768});         // in memory
    REQUIRE(gpt2.wte().global_shape == Shape{50257, 768});  // in files
    REQUIRE(make_param_layout(model_preset("gpt2"), 2, 1).wte().shape == Shape{25216, 768});
}

TEST_CASE("padding rows of wte start at zero, get no gradient, and stay out of files", "[model][vocab]") {
    GPT2Config cfg = model_preset("tiny");
    cfg.V = 101;  // Vp = 128: rows 101..127 are padding
    Ledger ledger;
    GPT2 model(cfg, ledger);
    model.init(7);
    const ParamSpec& wte = model.layout().wte();
    REQUIRE(wte.shape == Shape{128, 64});
    const int64_t words = 101 * 64;
    // Every token and target, including the last word (100), so every word row gets a gradient.
    const int B = 2, T = 51;
    std::vector<int> in(B * T), tg(B * T);
    for (int i = 0; i < B * T; ++i) in[i] = i % 101, tg[i] = (i + 1) % 101;
    Activations acts;
    model.zero_grad();
    const float loss = model.forward(in.data(), tg.data(), B, T, acts);
    model.backward(in.data(), tg.data(), acts, 1.0f / float(B * T));
    // The initial model predicts ~uniformly over the V words, not the Vp rows.
    REQUIRE(std::fabs(loss - std::log(101.0f)) < 0.1f);
    for (int64_t i = words; i < wte.numel; ++i) {
        REQUIRE(model.w()[wte.offset + i] == 0.0f);
        REQUIRE(model.g()[wte.offset + i] == 0.0f);
    }
    for (int v : {0, 100}) {  // a word row has a gradient (not zero like the padding)
        double norm = 0;
        for (int c = 0; c < 64; ++c) norm += std::fabs(model.g()[wte.offset + v * 64 + c]);
        REQUIRE(norm > 0);
    }
    const std::string path = std::string(SS_BINARY_DIR) + "/test_model_padded.safetensors";
    save_model(model, path);
    const StFile f = read_safetensors(path);
    REQUIRE(f.get("wte.weight").shape == Shape{101, 64});
    REQUIRE(f.meta("vocab_size") == "101");
    // Read back: the V rows as saved, the padding rows zero (even where memory held other values).
    GPT2 again(cfg, ledger);
    std::fill(again.w(), again.w() + again.layout().total, 5.0f);
    load_model(again, path);
    for (int64_t i = 0; i < wte.numel; ++i)
        REQUIRE(again.w()[wte.offset + i] == (i < words ? model.w()[wte.offset + i] : 0.0f));
}

TEST_CASE("parameters carry HF GPT-2 names and shapes", "[model]") {
    ParamLayout lay = make_param_layout(model_preset("tiny"));
    REQUIRE(lay.specs.front().name == "wte.weight");
    REQUIRE(lay.get("h.1.attn.c_attn.weight").shape == Shape{64, 192});
    REQUIRE(lay.get("h.0.mlp.c_proj.weight").shape == Shape{256, 64});
    REQUIRE(lay.specs.back().name == "ln_f.bias");
    REQUIRE(lay.block(1, kFcB).name == "h.1.mlp.c_fc.bias");
    REQUIRE_FALSE(lay.get("h.0.ln_1.bias").decay);
    REQUIRE(lay.get("h.0.attn.c_proj.weight").init == Init::normal_resproj);
}

TEST_CASE("counter-based init: any slice equals the same part of the whole", "[model]") {
    GPT2Config c = model_preset("tiny");
    ParamLayout lay = make_param_layout(c);
    std::vector<float> whole(lay.total);
    init_params(lay, c, 7, 0, lay.total, whole.data());
    for (int64_t begin : {int64_t(0), int64_t(1000), lay.total / 3}) {
        int64_t end = std::min(lay.total, begin + 12345);
        std::vector<float> part(end - begin);
        init_params(lay, c, 7, begin, end, part.data());
        for (int64_t i = begin; i < end; ++i) REQUIRE(part[i - begin] == whole[i]);
    }
    // std 0.02 for wte (measured over its 16384 values: within 5%).
    const ParamSpec& wte = lay.wte();
    double ss = 0;
    for (int64_t i = 0; i < wte.numel; ++i) ss += double(whole[wte.offset + i]) * whole[wte.offset + i];
    REQUIRE(std::sqrt(ss / wte.numel) == Approx(0.02).epsilon(0.05));
    REQUIRE(whole[lay.get("h.0.ln_1.weight").offset] == 1.0f);
    // A different seed gives different values.
    std::vector<float> other(100);
    init_params(lay, c, 8, 0, 100, other.data());
    REQUIRE(other[5] != whole[5]);
}

TEST_CASE("model states cost 4+4+8 bytes per parameter in fp32 and 2+2+12 in bf16", "[model][memory]") {
    GPT2Config c = model_preset("tiny");
    const size_t P = size_t(num_params(c));
    for (DType dt : {DType::f32, DType::bf16}) {
        Ledger ledger;
        GPT2 model(c, ledger, dt);
        AdamW opt(model.layout(), 0, model.layout().total, dt, ledger, {});
        INFO(dtype_name(dt));
        if (dt == DType::f32) {
            REQUIRE(ledger.live(Mem::params) == 4 * P);
            REQUIRE(ledger.live(Mem::grads) == 4 * P);
            REQUIRE(ledger.live(Mem::optim) == 8 * P);  // Adam m, v (params are the master copy)
        } else {
            REQUIRE(ledger.live(Mem::params) == 2 * P);  // the ZeRO paper's 2 + 2 + 12 (section 3.1)
            REQUIRE(ledger.live(Mem::grads) == 2 * P);
            REQUIRE(ledger.live(Mem::optim) == 12 * P);  // fp32 master, m, v
        }
    }
}

TEST_CASE("forward saves activations in the acts category and backward frees nothing it did not make",
          "[model][memory]") {
    GPT2Config c = model_preset("tiny");
    Ledger ledger;
    GPT2 model(c, ledger);
    model.init(1);
    const int B = 2, T = 16;
    std::vector<int> in(B * T, 3), tg(B * T, 4);
    Activations acts;
    size_t ws_before = ledger.live(Mem::workspace);
    model.forward(in.data(), tg.data(), B, T, acts);
    // Per block: 11 tensors of B*T*C or smaller plus att [B,H,T,T] and two of 4C.
    REQUIRE(ledger.live(Mem::acts) > size_t(c.L) * B * T * c.C * 4 * 10);
    model.backward(in.data(), tg.data(), acts, 1.0f / (B * T));
    REQUIRE(ledger.live(Mem::workspace) == ws_before);  // scratch of backward is gone
    acts.clear();
    REQUIRE(ledger.live(Mem::acts) == 0);
}

TEST_CASE("bf16 storage trains like fp32 (loss within bf16 rounding)", "[model][train]") {
    TrainOptions o;
    o.model = model_preset("tiny");
    o.steps = 5;
    o.mbs = 2;
    o.quiet = true;
    TrainReport a = train(o, nullptr);
    o.dtype = DType::bf16;
    TrainReport b = train(o, nullptr);
    // bf16 keeps 8 bits of mantissa: parameters move by ~0.4% of their size at
    // most from rounding, which changes a loss of ~5.5 by far less than 0.05.
    for (int i = 0; i < 5; ++i) REQUIRE(std::fabs(a.steps[i].loss - b.steps[i].loss) < 0.05f);
    REQUIRE(b.steps[0].loss == Approx(a.steps[0].loss).epsilon(0.01));
}

namespace {

// UnitHooks over plain buffers that records the order the passes take units in.
struct RecordingHooks final : UnitHooks {
    const std::vector<Unit>& units;
    std::vector<float>& param_buf;
    std::vector<float>& grad_buf;
    std::vector<int> taken;  // params(u) calls, in order
    RecordingHooks(const std::vector<Unit>& u, std::vector<float>& p, std::vector<float>& g)
        : units(u), param_buf(p), grad_buf(g) {}
    const float* params(int u, bool) override {
        taken.push_back(u);
        return param_buf.data() + units[size_t(u)].begin;
    }
    void release(int, bool) override {}
    float* grads(int u) override { return grad_buf.data() + units[size_t(u)].begin; }
    void grads_ready(int) override {}
};

// Each unit once, in first-taken order.
std::vector<int> first_taken(const std::vector<int>& taken) {
    std::vector<int> out;
    for (int u : taken)
        if (std::find(out.begin(), out.end(), u) == out.end()) out.push_back(u);
    return out;
}

}  // namespace

TEST_CASE("unit_order is the order the passes take units in: the whole model and every pipeline part",
          "[model][zero3]") {
    // ZeRO-3's prefetch (parallel/zero3.cpp) gathers the units unit_order says come next.
    GPT2Config cfg = model_preset("tiny");
    cfg.L = 4;
    const int B = 1, T = 8;
    std::vector<int> tokens(size_t(B * T)), targets(size_t(B * T));
    for (int i = 0; i < B * T; ++i) tokens[size_t(i)] = i % cfg.V, targets[size_t(i)] = (i + 1) % cfg.V;
    ModelPart first{0, 2, true, false}, middle{1, 2, false, false}, last{2, 2, false, true};
    for (const ModelPart& part : {ModelPart::whole(), first, middle, last}) {
        const ParamLayout lay = make_param_layout(cfg, 1, 0, part);
        const std::vector<Unit> units = make_units(lay);
        std::vector<float> p(size_t(lay.total)), g(size_t(lay.total), 0.0f);
        init_params(lay, cfg, 1, 0, lay.total, p.data());
        RecordingHooks hooks(units, p, g);
        Ledger ledger;
        const ModelParallel mp = ModelParallel::none();
        const PartPass pass{cfg, lay, hooks, mp, ledger};
        Activations acts;
        std::vector<float> x(size_t(B * T * cfg.C), 0.1f), dy(x.size(), 0.01f), dx(x.size());
        part_forward(pass, tokens.data(), targets.data(), part.embedding ? nullptr : x.data(), B, T, acts);
        INFO("part first " << part.first << " count " << part.count << " embedding " << part.embedding << " head "
                           << part.head);
        REQUIRE(first_taken(hooks.taken) == unit_order(lay, false));
        hooks.taken.clear();
        part_backward(pass, tokens.data(), targets.data(), acts, 1.0f / (B * T), part.head ? nullptr : dy.data(),
                      part.embedding ? nullptr : dx.data());
        REQUIRE(first_taken(hooks.taken) == unit_order(lay, true));
    }
}

TEST_CASE("first_nonfinite finds the first nan or inf at every position, in and past whole blocks", "[model][nan]") {
    // It tests 16 floats at a time (x * 0 == 0 for all of them): a non-finite value at
    // any index of a block, in the tail, or two in one block, each found where it is.
    const float bad[] = {NAN, INFINITY, -INFINITY};
    for (int n : {0, 1, 15, 16, 17, 40, 100}) {
        // finite extremes: the largest float, a denormal, -0: all stay finite
        std::vector<float> v(size_t(n), 1.0f);
        for (int i = 0; i < n; ++i) v[size_t(i)] = i % 3 == 0 ? 3.4e38f : i % 3 == 1 ? 1e-40f : -0.0f;
        REQUIRE(ss::first_nonfinite(v.data(), n) == -1);
        for (int i = 0; i < n; ++i)
            for (float b : bad) {
                std::vector<float> w = v;
                w[size_t(i)] = b;
                if (i + 1 < n) w[size_t(i + 1)] = NAN;  // a second one after it is not the first
                INFO("n=" << n << " i=" << i << " value=" << b);
                REQUIRE(ss::first_nonfinite(w.data(), n) == i);
            }
    }
}
