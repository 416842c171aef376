// gpt2.cpp — the passes through GPT-2's units (gpt2_forward, gpt2_backward)
// and the GPT2 class. The stages themselves (embedding, block, head) are in
// layers.cpp; the one-rank model-parallel operators in model_parallel.cpp.
#include "model/gpt2.h"

#include <algorithm>

#include <vector>

#include "core/check.h"
#include "core/device.h"
#include "kernels/dispatch.h"
#include "model/attention.h"
#include "model/model_parallel.h"

namespace ss {

template <typename F>
static BlockPtrs<F> block_ptrs(const ParamLayout& lay, F* flat, int l) {
    auto p = [&](BlockParam which) { return flat + lay.block(l, which).offset; };
    return BlockPtrs<F>{p(kLn1W), p(kLn1B), p(kAttnW), p(kAttnB), p(kAttnProjW), p(kAttnProjB),
                        p(kLn2W), p(kLn2B), p(kFcW),   p(kFcB),   p(kFcProjW),   p(kFcProjB)};
}

BlockWeights block_weights(const ParamLayout& lay, const float* flat, int l) { return block_ptrs(lay, flat, l); }
BlockGrads block_grads(const ParamLayout& lay, float* flat, int l) { return block_ptrs(lay, flat, l); }

void Activations::clear() {
    encoded.reset();
    blocks.clear();
    lnf.reset();
    lnf_mean.reset();
    lnf_rstd.reset();
    probs.reset();
    losses.reset();
}

// ---- the whole model --------------------------------------------------------------

GPT2::GPT2(const GPT2Config& cfg, Ledger& ledger, DType storage)
    : cfg_(cfg), layout_(make_param_layout(cfg)), storage_(storage), ledger_(&ledger) {
    validate(cfg_);
    SS_CHECK(storage == DType::f32 || storage == DType::bf16, "--dtype must be fp32 or bf16");
    params_ = Tensor(ledger, Mem::params, {layout_.total}, storage);
    grads_ = Tensor(ledger, Mem::grads, {layout_.total}, storage);
    if (storage == DType::bf16) {
        params_f32_ = Tensor(ledger, Mem::workspace, {layout_.total});
        grads_f32_ = Tensor(ledger, Mem::workspace, {layout_.total});
    }
}

void GPT2::init(uint64_t seed) {
    init_params(layout_, cfg_, seed, 0, layout_.total, w());
    if (storage_ == DType::bf16) {
        kern::f32_to_bf16(params_.bf16(), w(), size_t(layout_.total));
        load_compute_params();  // the math sees the bf16-rounded values, as it will after every step
    }
}

void GPT2::zero_grad() { device_zero(params_.device(), g(), sizeof(float) * size_t(layout_.total)); }

void GPT2::store_grads() {
    if (storage_ == DType::bf16) kern::f32_to_bf16(grads_.bf16(), grads_f32_.f32(), size_t(layout_.total));
}

void GPT2::load_compute_params() {
    if (storage_ == DType::bf16) kern::bf16_to_f32(params_f32_.f32(), params_.bf16(), size_t(layout_.total));
}

std::vector<Unit> make_units(const ParamLayout& lay) {
    std::vector<Unit> units;
    const ModelPart& part = lay.part;
    const bool whole = part.embedding && part.head && part.first == 0 &&
                       lay.specs.size() == size_t(part.count) * kBlockParams + 4;  // every block
    auto spec_end = [](const ParamSpec& s) { return s.offset + s.numel; };
    if (whole) {
        units.push_back({0, spec_end(lay.wpe()), -1});  // wte + wpe: one unit, as FSDP wraps the root
    } else {
        if (lay.has_wte()) units.push_back({lay.wte().offset, spec_end(lay.wte()), -1});
        if (part.embedding) units.push_back({lay.wpe().offset, spec_end(lay.wpe()), -1});
    }
    for (int l = part.first; l < part.first + part.count; ++l)
        units.push_back({lay.block(l, kLn1W).offset, spec_end(lay.block(l, kFcProjB)), l});
    if (part.head) units.push_back({lay.lnf_w().offset, lay.total, part.first + part.count});
    return units;
}

namespace {
// Pointers into a unit-local buffer @p base of unit @p u.
const float* at(const float* base, const Unit& u, const ParamSpec& s) { return base + (s.offset - u.begin); }
float* at(float* base, const Unit& u, const ParamSpec& s) { return base + (s.offset - u.begin); }

template <typename F>
BlockPtrs<F> unit_block(const ParamLayout& lay, F* base, const Unit& u, int l) {
    auto p = [&](BlockParam which) { return at(base, u, lay.block(l, which)); };
    return BlockPtrs<F>{p(kLn1W), p(kLn1B), p(kAttnW), p(kAttnB), p(kAttnProjW), p(kAttnProjB),
                        p(kLn2W), p(kLn2B), p(kFcW),   p(kFcB),   p(kFcProjW),   p(kFcProjB)};
}

// Which unit holds what, for one layout (-1: not held).
struct UnitMap {
    std::vector<Unit> units;
    int wte = -1, wpe = -1, lnf = -1;
    int first_block = 0;  // unit of block part.first
    explicit UnitMap(const ParamLayout& lay) : units(make_units(lay)) {
        auto holding = [&](const ParamSpec& s) {
            for (size_t u = 0; u < units.size(); ++u)
                if (units[u].begin <= s.offset && s.offset < units[u].end) return int(u);
            return -1;
        };
        if (lay.has_wte()) wte = holding(lay.wte());
        if (lay.part.embedding) wpe = holding(lay.wpe());
        if (lay.part.head) lnf = holding(lay.lnf_w());
        first_block = lay.part.embedding ? wpe + 1 : lay.has_wte() ? wte + 1 : 0;
    }
    int block(const ParamLayout& lay, int l) const { return first_block + (l - lay.part.first); }
};

}  // namespace

std::vector<int> unit_order(const ParamLayout& lay, bool backward) {
    // As the passes below take them (their params() calls, in order).
    const UnitMap um(lay);
    std::vector<int> order;
    auto add = [&](int u) {
        if (u >= 0 && std::find(order.begin(), order.end(), u) == order.end()) order.push_back(u);
    };
    if (!backward) {
        if (lay.part.embedding) add(um.wte), add(um.wpe);
        for (int i = 0; i < lay.part.count; ++i) add(um.block(lay, lay.part.first + i));
        if (lay.part.head) add(um.wte), add(um.lnf);
    } else {
        if (lay.part.head) add(um.wte), add(um.lnf);
        for (int i = lay.part.count - 1; i >= 0; --i) add(um.block(lay, lay.part.first + i));
    }
    return order;
}

namespace {

// Full recompute: of a block's saved activations keep only its output (the next block's input).
void keep_only_output(BlockActs& ba) {
    Tensor out = std::move(ba.x_out);
    ba = BlockActs{};
    ba.x_out = std::move(out);
}
}  // namespace

const float* part_output(const Activations& a) {
    return a.blocks.empty() ? a.encoded.f32() : a.blocks.back().x_out.f32();
}

float part_forward(const PartPass& p, const int* tokens, const int* targets, const float* x_in, int B, int T,
                   Activations& a) {
    const GPT2Config& cfg = p.cfg;
    const ParamLayout& lay = p.lay;
    UnitHooks& hooks = p.hooks;
    SS_CHECK(T * p.mp.sp.size() <= cfg.maxT, "sequence length T=" << T * p.mp.sp.size() << " is longer than the positional table (maxT=" << cfg.maxT
                                                 << "); use --seq " << cfg.maxT
                                                 << " or less, or a model with a larger --max-seq");
    const UnitMap um(lay);
    const std::vector<Unit>& units = um.units;
    const int C = cfg.C;
    a.clear();
    a.B = B;
    a.T = T;
    a.recompute = p.recompute;
    // Megatron-SP: the residual stream holds T/t tokens of each sequence per TP rank.
    a.Tl = p.mp.tp.sequence_parallel() ? T / p.mp.tp.size() : T;
    const float* emb = nullptr;  // wte's unit, kept until the tied head has used it
    if (lay.part.embedding) {
        emb = hooks.params(um.wte, false);
        const float* pos = um.wpe == um.wte ? emb : hooks.params(um.wpe, false);
        encoder_stage_forward(a, at(emb, units[um.wte], lay.wte()), at(pos, units[um.wpe], lay.wpe()), tokens, C,
                              int(lay.wte().shape[0]), p.mp, p.ledger);
        if (um.wpe != um.wte) hooks.release(um.wpe, false);
    } else {  // a later pipeline stage: the previous stage's output is my input, saved for backward
        a.encoded = Tensor(p.ledger, Mem::acts, {B, a.Tl, C}, DType::f32, false);
        device_copy(a.encoded.f32(), x_in, sizeof(float) * size_t(a.encoded.numel()));
    }
    a.blocks.resize(size_t(lay.part.count));
    const float* x = a.encoded.f32();
    for (int i = 0; i < lay.part.count; ++i) {
        const int l = lay.part.first + i, u = um.block(lay, l);
        const float* w = hooks.params(u, false);
        block_forward(a.blocks[i], unit_block(lay, w, units[u], l), x, B, a.Tl, C, cfg.H, l, p.mp, p.recompute,
                      p.ledger);
        hooks.release(u, false);
        // Selective: the as^2 term goes. Kernels that saved the probabilities (Ulysses) drop them
        // here; ring and blockwise attention never made them (ba.att is the log-sum-exp).
        if (p.recompute == Recompute::selective && !blockwise_attention(p.mp.sp, p.recompute))
            a.blocks[i].att.reset();
        if (p.recompute == Recompute::full) keep_only_output(a.blocks[i]);
        x = a.blocks[i].x_out.f32();
    }
    float loss = 0.0f;
    if (lay.part.head) {
        if (!emb) emb = hooks.params(um.wte, false);
        const float* head = hooks.params(um.lnf, false);
        loss = head_forward(a, x, at(head, units[um.lnf], lay.lnf_w()), at(head, units[um.lnf], lay.lnf_b()),
                            at(emb, units[um.wte], lay.wte()), targets, C, cfg.V, int(lay.wte().shape[0]), p.mp,
                            p.ledger);
        hooks.release(um.lnf, false);
    }
    if (emb) hooks.release(um.wte, false);
    return loss;
}

void part_backward(const PartPass& p, const int* tokens, const int* targets, const Activations& a, float dloss,
                   const float* dy, float* dx_in) {
    const GPT2Config& cfg = p.cfg;
    const ParamLayout& lay = p.lay;
    UnitHooks& hooks = p.hooks;
    const UnitMap um(lay);
    const std::vector<Unit>& units = um.units;
    const int C = cfg.C, B = a.B, T = a.T, n = lay.part.count;
    auto x_in = [&](int i) { return i == 0 ? a.encoded.f32() : a.blocks[size_t(i - 1)].x_out.f32(); };
    Tensor dx(p.ledger, Mem::workspace, {B, a.Tl, C});

    const float* emb = nullptr;
    float* gemb = nullptr;
    if (lay.part.head) {
        emb = hooks.params(um.wte, true);
        const float* head = hooks.params(um.lnf, true);
        gemb = hooks.grads(um.wte);
        float* ghead = hooks.grads(um.lnf);
        head_backward(dx.f32(), at(ghead, units[um.lnf], lay.lnf_w()), at(ghead, units[um.lnf], lay.lnf_b()),
                      at(gemb, units[um.wte], lay.wte()), a, x_in(n), at(head, units[um.lnf], lay.lnf_w()),
                      at(emb, units[um.wte], lay.wte()), targets, dloss, C, cfg.V, int(lay.wte().shape[0]), p.mp,
                      p.ledger);
        hooks.release(um.lnf, true);
        hooks.grads_ready(um.lnf);
    } else {
        device_copy(dx.f32(), dy, sizeof(float) * size_t(dx.numel()));
    }
    for (int i = n - 1; i >= 0; --i) {
        const int l = lay.part.first + i, u = um.block(lay, l);
        const float* w = hooks.params(u, true);
        const BlockWeights bw = unit_block(lay, w, units[u], l);
        BlockGrads g = unit_block(lay, hooks.grads(u), units[u], l);
        BlockActs redone;  // full recompute: the block's forward again, from its saved input
        if (a.recompute == Recompute::full)
            block_forward(redone, bw, x_in(i), B, a.Tl, C, cfg.H, l, p.mp, a.recompute, p.ledger);
        const BlockActs& ba = a.recompute == Recompute::full ? redone : a.blocks[size_t(i)];
        block_backward(dx.f32(), g, ba, bw, x_in(i), B, a.Tl, C, cfg.H, l, p.mp, a.recompute, p.ledger);
        hooks.release(u, true);
        hooks.grads_ready(u);
    }
    if (lay.part.embedding) {
        if (!gemb) gemb = hooks.grads(um.wte);
        float* gpos = um.wpe == um.wte ? gemb : hooks.grads(um.wpe);
        encoder_stage_backward(at(gemb, units[um.wte], lay.wte()), at(gpos, units[um.wpe], lay.wpe()), dx.f32(),
                               tokens, B, T, C, int(lay.wte().shape[0]), p.mp, p.ledger);
        if (um.wpe != um.wte) hooks.grads_ready(um.wpe);
    } else {
        device_copy(dx_in, dx.f32(), sizeof(float) * size_t(dx.numel()));
    }
    if (emb) hooks.release(um.wte, true);
    if (gemb) hooks.grads_ready(um.wte);
}

float gpt2_forward(const GPT2Config& cfg, const ParamLayout& lay, UnitHooks& hooks, const ModelParallel& mp,
                   const int* tokens, const int* targets, int B, int T, Activations& a, Ledger& ledger) {
    return part_forward(PartPass{cfg, lay, hooks, mp, ledger}, tokens, targets, nullptr, B, T, a);
}

void gpt2_backward(const GPT2Config& cfg, const ParamLayout& lay, UnitHooks& hooks, const ModelParallel& mp,
                   const int* tokens, const int* targets, const Activations& acts, float dloss, Ledger& ledger) {
    part_backward(PartPass{cfg, lay, hooks, mp, ledger}, tokens, targets, acts, dloss, nullptr, nullptr);
}

// The plain model's hooks: slices of its own full buffers, nothing to do on release.
namespace {
struct FullHooks final : UnitHooks {
    std::vector<Unit> units;
    float* w;
    float* g;
    const float* params(int u, bool) override { return w + units[u].begin; }
    void release(int, bool) override {}
    float* grads(int u) override { return g + units[u].begin; }
    void grads_ready(int) override {}
};
}  // namespace

float GPT2::forward(const int* tokens, const int* targets, int B, int T, Activations& a) {
    FullHooks h;
    h.units = make_units(layout_);
    h.w = w();
    h.g = g();
    return gpt2_forward(cfg_, layout_, h, ModelParallel::none(), tokens, targets, B, T, a, *ledger_);
}

void GPT2::backward(const int* tokens, const int* targets, const Activations& a, float dloss) {
    FullHooks h;
    h.units = make_units(layout_);
    h.w = w();
    h.g = g();
    gpt2_backward(cfg_, layout_, h, ModelParallel::none(), tokens, targets, a, dloss, *ledger_);
}

}  // namespace ss
