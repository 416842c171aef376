// gpt2.cpp — the passes through GPT-2's units (gpt2_forward, gpt2_backward),
// the one-rank model-parallel operators, and the GPT2 class. The stages
// themselves (embedding, block, head) are in layers.cpp.
#include "model/gpt2.h"

#include <cstring>
#include <vector>

#include "core/check.h"
#include "kernels/cpu/attention_block.h"

namespace ss {

using namespace ss::cpu;

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

// ---- one rank's model-parallel operators ---------------------------------------------

void SequenceParallel::seq_to_heads(const float* src, float* dst, int B, int Tl, int C, int parts, int, bool) {
    std::memcpy(dst, src, sizeof(float) * size_t(B) * Tl * C * parts);
}

void SequenceParallel::heads_to_seq(const float* src, float* dst, int B, int Tl, int C, int parts, int, bool) {
    std::memcpy(dst, src, sizeof(float) * size_t(B) * Tl * C * parts);
}

void TensorParallel::gather_seq(const float* mine, float* all, int B, int Tl, int C, int, bool) {
    std::memcpy(all, mine, sizeof(float) * size_t(B) * Tl * C);
}

void TensorParallel::scatter_seq(const float* all, float* mine, int B, int Tl, int C, int, bool) {
    std::memcpy(mine, all, sizeof(float) * size_t(B) * Tl * C);
}

void SequenceParallel::ring_forward(float* out, float* lse, const float* qkv, int B, int Tl, int C, int NH, int) {
    std::vector<float> m(size_t(B) * NH * Tl), l(m.size());
    attention_block_init(m.data(), l.data(), out, B, Tl, C, NH);
    attention_block_forward(m.data(), l.data(), out, qkv, qkv + C, qkv + 2 * C, 3 * C, B, Tl, Tl, 0, 0, C, NH);
    attention_block_finish(out, lse, m.data(), l.data(), out, B, Tl, C, NH);
}

void SequenceParallel::ring_backward(float* dqkv, const float* dout, const float* qkv, const float* out,
                                     const float* lse, int B, int Tl, int C, int NH, int) {
    std::vector<float> D(size_t(B) * NH * Tl);
    attention_block_delta(D.data(), dout, out, B, Tl, C, NH);
    attention_block_backward(dqkv, dqkv + C, dqkv + 2 * C, dout, qkv, qkv + C, qkv + 2 * C, 3 * C, lse, D.data(), B,
                             Tl, Tl, 0, 0, C, NH);
}

ModelParallel ModelParallel::none() {
    static TensorParallel one_tp;  // stateless: safe to share between rank threads
    static SequenceParallel one_sp;
    return ModelParallel{one_tp, one_sp};
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
        f32_to_bf16(params_.bf16(), w(), size_t(layout_.total));
        load_compute_params();  // the math sees the bf16-rounded values, as it will after every step
    }
}

void GPT2::zero_grad() { std::memset(g(), 0, sizeof(float) * size_t(layout_.total)); }

void GPT2::store_grads() {
    if (storage_ == DType::bf16) f32_to_bf16(grads_.bf16(), grads_f32_.f32(), size_t(layout_.total));
}

void GPT2::load_compute_params() {
    if (storage_ == DType::bf16) bf16_to_f32(params_f32_.f32(), params_.bf16(), size_t(layout_.total));
}

std::vector<Unit> make_units(const ParamLayout& lay) {
    std::vector<Unit> units;
    const int L = int((lay.specs.size() - 4) / kBlockParams);
    units.push_back({0, lay.wpe().offset + lay.wpe().numel});
    for (int l = 0; l < L; ++l)
        units.push_back({lay.block(l, kLn1W).offset, lay.block(l, kFcProjB).offset + lay.block(l, kFcProjB).numel});
    units.push_back({lay.lnf_w().offset, lay.total});
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
}  // namespace

float gpt2_forward(const GPT2Config& cfg, const ParamLayout& lay, UnitHooks& hooks, const ModelParallel& mp,
                   const int* tokens, const int* targets, int B, int T, Activations& a, Ledger& ledger) {
    SS_CHECK(T * mp.sp.size() <= cfg.maxT, "sequence length T=" << T * mp.sp.size() << " is longer than the positional table (maxT=" << cfg.maxT
                                                 << "); use --seq " << cfg.maxT
                                                 << " or less, or a model with a larger --max-seq");
    const std::vector<Unit> units = make_units(lay);
    const int L = cfg.L, C = cfg.C;
    a.clear();
    a.B = B;
    a.T = T;
    // Megatron-SP: the residual stream holds T/t tokens of each sequence per TP rank.
    a.Tl = mp.tp.sequence_parallel() ? T / mp.tp.size() : T;
    const float* emb = hooks.params(0, false);  // kept until the tied head has used wte
    encoder_stage_forward(a, at(emb, units[0], lay.wte()), at(emb, units[0], lay.wpe()), tokens, C, cfg.V, mp, ledger);
    a.blocks.resize(L);
    const float* x = a.encoded.f32();
    for (int l = 0; l < L; ++l) {
        const float* p = hooks.params(1 + l, false);
        block_forward(a.blocks[l], unit_block(lay, p, units[1 + l], l), x, B, a.Tl, C, cfg.H, l, mp, ledger);
        hooks.release(1 + l, false);
        x = a.blocks[l].x_out.f32();
    }
    const float* head = hooks.params(L + 1, false);
    float loss = head_forward(a, x, at(head, units[L + 1], lay.lnf_w()), at(head, units[L + 1], lay.lnf_b()),
                              at(emb, units[0], lay.wte()), targets, C, cfg.V, mp, ledger);
    hooks.release(L + 1, false);
    hooks.release(0, false);
    return loss;
}

void gpt2_backward(const GPT2Config& cfg, const ParamLayout& lay, UnitHooks& hooks, const ModelParallel& mp,
                   const int* tokens, const int* targets, const Activations& a, float dloss, Ledger& ledger) {
    const std::vector<Unit> units = make_units(lay);
    const int L = cfg.L, C = cfg.C, B = a.B, T = a.T;
    auto x_in = [&](int l) { return l == 0 ? a.encoded.f32() : a.blocks[l - 1].x_out.f32(); };
    Tensor dx(ledger, Mem::workspace, {B, a.Tl, C});

    const float* emb = hooks.params(0, true);
    const float* head = hooks.params(L + 1, true);
    float* gemb = hooks.grads(0);
    float* ghead = hooks.grads(L + 1);
    head_backward(dx.f32(), at(ghead, units[L + 1], lay.lnf_w()), at(ghead, units[L + 1], lay.lnf_b()),
                  at(gemb, units[0], lay.wte()), a, x_in(L), at(head, units[L + 1], lay.lnf_w()),
                  at(emb, units[0], lay.wte()), targets, dloss, C, cfg.V, mp, ledger);
    hooks.release(L + 1, true);
    hooks.grads_ready(L + 1);
    for (int l = L - 1; l >= 0; --l) {
        const float* p = hooks.params(1 + l, true);
        BlockGrads g = unit_block(lay, hooks.grads(1 + l), units[1 + l], l);
        block_backward(dx.f32(), g, a.blocks[l], unit_block(lay, p, units[1 + l], l), x_in(l), B, a.Tl, C, cfg.H, l,
                       mp, ledger);
        hooks.release(1 + l, true);
        hooks.grads_ready(1 + l);
    }
    encoder_stage_backward(at(gemb, units[0], lay.wte()), at(gemb, units[0], lay.wpe()), dx.f32(), tokens, B, T, C,
                           cfg.V, mp);
    hooks.release(0, true);
    hooks.grads_ready(0);
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
