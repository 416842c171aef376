// layers.cpp — GPT-2's stages, forward and backward: the embedding, a
// transformer block, the head. They wire the kernels together and call the
// model-parallel operators (model/model_parallel.h) exactly where tensor and
// sequence parallelism need their ranks to meet. The block reads as llm.c's
// (ln_1, c_attn, attention, c_proj, residual, ln_2, c_fc, gelu, c_proj,
// residual); Megatron's f and g are one call each at their places (TpStage
// below), and attention is whichever attention() picks (model/attention.h).
// The passes that walk the stages, and the model class, are in gpt2.cpp.
//
// kern::f runs f on the rank's device (kernels/dispatch.h: the CPU kernel or
// its CUDA twin); cpu::f has no GPU twin yet and runs on the host, over
// managed memory when the rank is on a GPU.
#include <algorithm>
#include <vector>

#include "core/device.h"
#include "kernels/cpu/vocab_parallel.h"
#include "kernels/dispatch.h"
#include "model/attention.h"
#include "model/gpt2.h"
#include "model/model_parallel.h"
#include "model/sequence_split.h"

namespace ss {

// Saved activations need no zero-fill: forward writes every element first.
static Tensor act(Ledger& ledger, Shape shape) { return Tensor(ledger, Mem::acts, std::move(shape), DType::f32, false); }
static Tensor scratch(Ledger& ledger, Shape shape) { return Tensor(ledger, Mem::workspace, std::move(shape)); }
// Scratch its one writer overwrites (kern::Grad::overwrite): no zero-fill pass first.
static Tensor scratch_unfilled(Ledger& ledger, Shape shape) {
    return Tensor(ledger, Mem::workspace, std::move(shape), DType::f32, false);
}

// ---- Megatron's f and g, at one stage's sizes ------------------------------------
//
// Under tensor parallelism (t = tp.size() > 1) each rank holds H/t heads and
// 4C/t MLP columns (model/params.h, Split), so a block works on
//   Cl = C/t (attention width of my heads), Hl = H/t, Fl = 4C/t, and Vl = Vp/t
// rows of wte (Vp: the padded vocabulary, model/config.h; the head scores only
// the rows below V, see `words`). Each column-parallel layer (c_attn, c_fc) has
// f in front of it, each row-parallel one (the two c_proj) g behind it
// (Shoeybi et al. 2019, section 3, figure 3). Megatron sequence parallelism
// (Korthikanti et al. 2022, section 4.2.2) keeps the residual stream, the
// LayerNorms and the additions on T/t tokens of each sequence and swaps in
// the sequence forms of f and g:
//
//              forward                          backward
//     f        identity   | SP: all-gather       all-reduce | SP: reduce-scatter
//     g        all-reduce | SP: reduce-scatter   identity   | SP: all-gather
//
// Without SP they work in place; with it they move between my tokens and all
// of them, through a buffer of their own. With t = 1 every tp.* call does nothing.

namespace {
// d(bias) of a layer whose bias was added to @p N rows of dout: column sums.
void bias_backward(float* dbias, const float* dout, int N, int C) {
    for (int n = 0; n < N; ++n)
        for (int c = 0; c < C; ++c) dbias[c] += dout[long(n) * C + c];
}

// What a row-parallel layer's backward reads once g's backward is done.
struct RowGrad {
    Tensor all;          // Megatron-SP: the gradient of every token (else empty)
    const float* dout;   // d/d(the layer's output), [B, Tf, C]
    float* dbias;        // the bias gradient the matmul's backward takes (null: already taken)
};

// One stage's tensor-parallel view: its sizes on this rank, and f and g at those sizes.
struct TpStage {
    TensorParallel& tp;
    Ledger& ledger;
    int layer;        // trace label (-1: the head)
    int B, T, Tf, C;  // T: my tokens of each sequence (T/t under SP); Tf: the tokens between f and g
    int Cl = 0, Hl = 0, Fl = 0;  // a block's: my heads' attention channels, my heads, my MLP columns

    bool sp() const { return tp.sequence_parallel(); }

    // LayerNorm of my tokens, then f: @p out [B, Tf, C] is the column-parallel layer's input.
    void layernorm_f(Tensor& out, Tensor& mean, Tensor& rstd, const float* x, const float* w, const float* b) const {
        if (!sp()) {
            kern::layernorm_forward(out.f32(), mean.f32(), rstd.f32(), x, w, b, B * T, C);
            return;
        }
        Tensor mine = scratch(ledger, {B, T, C});
        kern::layernorm_forward(mine.f32(), mean.f32(), rstd.f32(), x, w, b, B * T, C);
        tp.gather_seq(mine.f32(), out.f32(), B, T, C, layer, false);
    }
    // The row-parallel layer, then g: @p out [B, T, C] = the sum over the TP ranks of
    // in [B, Tf, IC] @ w (my rows of w). Its bias is the caller's, added once after the sum.
    void matmul_g(float* out, const float* in, const float* w, int IC) const {
        if (!sp()) {
            kern::matmul_forward(out, in, w, nullptr, B * Tf, IC, C);  // a partial sum
            tp.g_forward(out, long(B) * T * C, layer);
            return;
        }
        Tensor partial = scratch(ledger, {B, Tf, C});
        kern::matmul_forward(partial.f32(), in, w, nullptr, B * Tf, IC, C);
        tp.scatter_seq(partial.f32(), out, B, T, C, layer, false);
    }
    // g's backward: the row-parallel layer's output gradient from my tokens' @p dx.
    // Under SP its bias saw only my tokens, so its gradient is taken here, from them.
    RowGrad g_backward(const float* dx, float* dbias) const {
        if (!sp()) return RowGrad{Tensor(), dx, dbias};  // the identity
        bias_backward(dbias, dx, B * T, C);
        RowGrad r{scratch(ledger, {B, Tf, C}), nullptr, nullptr};
        tp.gather_seq(dx, r.all.f32(), B, T, C, layer, true);
        r.dout = r.all.f32();
        return r;
    }
    // f's backward, then the LayerNorm's: @p dln [B, Tf, C] is this rank's part of the
    // column-parallel layer's input gradient; their sum over the TP ranks (my tokens'
    // part of it under SP) goes through the LayerNorm, adding into dx [B, T, C].
    void layernorm_f_backward(float* dx, float* dw, float* db, Tensor& dln, const float* x, const float* w,
                              const Tensor& mean, const Tensor& rstd) const {
        if (!sp()) {
            tp.f_backward(dln.f32(), long(B) * T * C, layer);
            kern::layernorm_backward(dx, dw, db, dln.f32(), x, w, mean.f32(), rstd.f32(), B * T, C);
            return;
        }
        Tensor mine = scratch(ledger, {B, T, C});
        tp.scatter_seq(dln.f32(), mine.f32(), B, T, C, layer, true);
        kern::layernorm_backward(dx, dw, db, mine.f32(), x, w, mean.f32(), rstd.f32(), B * T, C);
    }
};

// A block's sizes on this rank: Megatron-SP's residual stream holds T of the Tf = T*t tokens.
TpStage block_tp(TensorParallel& tp, int B, int T, int C, int H, int layer, Ledger& ledger) {
    const int t = tp.size();
    return TpStage{tp, ledger, layer, B, T, tp.sequence_parallel() ? T * t : T, C, C / t, H / t, 4 * C / t};
}

// What block_forward saves for block_backward (BlockActs; attention decides the shapes of qkv and att).
void alloc_block_acts(BlockActs& ba, const TpStage& d, const Attention& attn, Ledger& ledger) {
    const int B = d.B, T = d.T, Tf = d.Tf, C = d.C;
    ba.ln1 = act(ledger, {B, Tf, C});  // under Megatron-SP: the gathered input of c_attn
    ba.ln1_mean = act(ledger, {B, T});
    ba.ln1_rstd = act(ledger, {B, T});
    ba.qkv = act(ledger, attn.qkv_shape());
    ba.att = act(ledger, attn.att_shape());
    ba.atty = act(ledger, {B, Tf, d.Cl});
    ba.x_mid = act(ledger, {B, T, C});
    ba.ln2 = act(ledger, {B, Tf, C});
    ba.ln2_mean = act(ledger, {B, T});
    ba.ln2_rstd = act(ledger, {B, T});
    ba.fch = act(ledger, {B, Tf, d.Fl});
    ba.fch_gelu = act(ledger, {B, Tf, d.Fl});
    ba.x_out = act(ledger, {B, T, C});
}
}  // namespace

// ---- forward ------------------------------------------------------------------

void encoder_stage_forward(Activations& a, const float* wte, const float* wpe, const int* tokens, int C, int Vl,
                           const ModelParallel& mp, Ledger& ledger) {
    TensorParallel& tp = mp.tp;
    const int N = a.B * a.T;
    a.encoded = act(ledger, {a.B, a.Tl, C});
    // My tokens' rows of wpe: positions rank*T .. rank*T + T-1, or zig-zag's two chunks gathered
    // into one table (model/sequence_split.h). A workspace tensor, so that a device kernel can
    // read it; the host copies it as ring attention's kernels read qkv (managed memory, core/device.h).
    Tensor zigzag_wpe;
    if (!mp.sp.zigzag()) {
        wpe += long(mp.sp.rank()) * a.T * C;
    } else {
        zigzag_wpe = scratch(ledger, {a.T, C});
        for (const SeqPiece& p : sequence_pieces(true, mp.sp.rank(), mp.sp.size(), a.T * mp.sp.size()))
            std::copy(wpe + long(p.pos) * C, wpe + long(p.pos + p.len) * C, zigzag_wpe.f32() + long(p.row) * C);
        wpe = zigzag_wpe.f32();
    }
    if (tp.size() == 1) {
        kern::encoder_forward(a.encoded.f32(), tokens, wte, wpe, a.B, a.T, C);
        return;
    }
    // Vocabulary-parallel embedding: my rows only, summed over the TP group
    // (g; reduce-scattered to my tokens under Megatron-SP), then positions.
    if (!tp.sequence_parallel()) {
        cpu::vocab_embedding_forward(a.encoded.f32(), tokens, wte, tp.rank() * Vl, Vl, N, C);
        tp.g_forward(a.encoded.f32(), long(N) * C, -1);
    } else {
        Tensor partial = scratch(ledger, {a.B, a.T, C});
        cpu::vocab_embedding_forward(partial.f32(), tokens, wte, tp.rank() * Vl, Vl, N, C);
        tp.scatter_seq(partial.f32(), a.encoded.f32(), a.B, a.Tl, C, -1, false);
        wpe += long(tp.rank()) * a.Tl * C;
    }
    cpu::add_positions(a.encoded.f32(), wpe, a.B, a.Tl, C);
}

void block_forward(BlockActs& ba, const BlockWeights& w, const float* x_in, int B, int T, int C, int H, int l,
                   const ModelParallel& mp, Recompute recompute, Ledger& ledger) {
    const TpStage tp = block_tp(mp.tp, B, T, C, H, l, ledger);
    const Attention attn = attention(mp.sp, B, tp.Tf, tp.Cl, tp.Hl, recompute);  // plain, Ulysses, ring, blockwise
    const int N = B * tp.Tf, Nl = B * T;  // rows through the TP layers; rows of my residual stream
    alloc_block_acts(ba, tp, attn, ledger);

    // Attention: x_mid = x_in + g(c_proj(attention(c_attn(f(ln_1(x_in))))))
    tp.layernorm_f(ba.ln1, ba.ln1_mean, ba.ln1_rstd, x_in, w.ln1_w, w.ln1_b);
    if (attn.planar)  // q, then k|v (model/attention.h): the same products, written as two planes
        kern::matmul_forward_planar(ba.qkv.f32(), ba.ln1.f32(), w.attn_w, w.attn_b, N, C, tp.Cl);
    else
        kern::matmul_forward(ba.qkv.f32(), ba.ln1.f32(), w.attn_w, w.attn_b, N, C, 3 * tp.Cl);  // column-parallel: my heads
    attn.forward(attn, ba, mp.sp, l, ledger);
    tp.matmul_g(ba.x_mid.f32(), ba.atty.f32(), w.attnproj_w, tp.Cl);  // row-parallel
    kern::add_bias_residual(ba.x_mid.f32(), w.attnproj_b, x_in, Nl, C);  // the bias once, after the sum; + x_in

    // MLP: x_out = x_mid + g(c_proj(gelu(c_fc(f(ln_2(x_mid))))))
    tp.layernorm_f(ba.ln2, ba.ln2_mean, ba.ln2_rstd, ba.x_mid.f32(), w.ln2_w, w.ln2_b);
    kern::matmul_forward(ba.fch.f32(), ba.ln2.f32(), w.fc_w, w.fc_b, N, C, tp.Fl);
    kern::gelu_forward(ba.fch_gelu.f32(), ba.fch.f32(), long(N) * tp.Fl);
    tp.matmul_g(ba.x_out.f32(), ba.fch_gelu.f32(), w.fcproj_w, tp.Fl);
    kern::add_bias_residual(ba.x_out.f32(), w.fcproj_b, ba.x_mid.f32(), Nl, C);
}

// The words among my Vl rows of wte: rows at or past V are padding (model/config.h, padded_vocab).
static int words_of_rank(int V, int Vl, int tp_rank) { return std::clamp(V - tp_rank * Vl, 0, Vl); }

float head_forward(Activations& a, const float* x_last, const float* lnf_w, const float* lnf_b, const float* wte,
                   const int* targets, int C, int V, int Vl, const ModelParallel& mp, Ledger& ledger) {
    TensorParallel& tp = mp.tp;
    const TpStage fg{tp, ledger, -1, a.B, a.Tl, a.T, C};
    const int N = a.B * a.T;
    a.lnf = act(ledger, {a.B, a.T, C});
    a.lnf_mean = act(ledger, {a.B, a.Tl});
    a.lnf_rstd = act(ledger, {a.B, a.Tl});
    a.probs = act(ledger, {a.B, a.T, Vl});
    a.losses = act(ledger, {a.B, a.T});
    fg.layernorm_f(a.lnf, a.lnf_mean, a.lnf_rstd, x_last, lnf_w, lnf_b);  // the head reads every token
    // Tied head: logits = lnf @ wte^T (kernels/cpu/lm_head.h); under TP my Vp/t rows only.
    // The matmul runs over the padding rows too (the aligned shape padding is for);
    // the softmax then leaves their logits out.
    Tensor logits(ledger, Mem::workspace, {a.B, a.T, Vl}, DType::f32, false);
    kern::lm_head_forward(logits.f32(), a.lnf.f32(), wte, N, C, Vl);
    if (tp.size() == 1) {
        a.loss = kern::crossentropy_forward(a.losses.f32(), a.probs.f32(), logits.f32(), targets, N, V, Vl);
        return a.loss;
    }
    // Vocabulary-parallel cross-entropy (kernels/cpu/vocab_parallel.h): the logits
    // are never gathered, only three numbers per token cross the TP group.
    Tensor m = scratch(ledger, {N}), sums = scratch(ledger, {N}), z = scratch(ledger, {N});
    const int words = words_of_rank(V, Vl, tp.rank());
    cpu::row_max(m.f32(), logits.f32(), N, Vl, words);
    tp.max_over_ranks(m.f32(), N);
    cpu::exp_shifted(a.probs.f32(), sums.f32(), logits.f32(), m.f32(), N, Vl, words);
    tp.sum_over_ranks(sums.f32(), N);
    cpu::target_logit(z.f32(), logits.f32(), targets, tp.rank() * Vl, N, Vl);
    tp.sum_over_ranks(z.f32(), N);
    a.loss = cpu::vocab_ce_finish(a.losses.f32(), a.probs.f32(), sums.f32(), z.f32(), m.f32(), N, Vl);
    return a.loss;
}

// ---- backward -----------------------------------------------------------------

void head_backward(float* dx, float* dlnf_w, float* dlnf_b, float* dwte, const Activations& a, const float* x_last,
                   const float* lnf_w, const float* wte, const int* targets, float dloss, int C, int V, int Vl,
                   const ModelParallel& mp, Ledger& ledger) {
    TensorParallel& tp = mp.tp;
    const TpStage fg{tp, ledger, -1, a.B, a.Tl, a.T, C};
    const int N = a.B * a.T, Nl = a.B * a.Tl;
    // Written whole by the backward (overwrite): the padding columns 0, so wte's padding rows get no gradient.
    Tensor dlogits = scratch_unfilled(ledger, {a.B, a.T, Vl});
    if (tp.size() == 1)
        kern::crossentropy_backward(dlogits.f32(), a.probs.f32(), targets, dloss, N, V, Vl, kern::Grad::overwrite);
    else  // probs are 0 in my padding columns, so they get 0
        cpu::vocab_ce_backward(dlogits.f32(), a.probs.f32(), targets, tp.rank() * Vl, dloss, N, Vl, true);
    Tensor dlnf = scratch(ledger, {a.B, a.T, C});
    kern::lm_head_backward(dlnf.f32(), dwte, dlogits.f32(), a.lnf.f32(), wte, N, C, Vl);
    // Each rank scored its Vp/t rows: f's backward sums their input gradients (under SP: to my tokens).
    device_zero(current_device(), dx, sizeof(float) * size_t(Nl) * C);
    fg.layernorm_f_backward(dx, dlnf_w, dlnf_b, dlnf, x_last, lnf_w, a.lnf_mean, a.lnf_rstd);
}

void block_backward(float* dx, BlockGrads& g, const BlockActs& ba, const BlockWeights& w, const float* x_in, int B,
                    int T, int C, int H, int l, const ModelParallel& mp, Recompute recompute, Ledger& ledger) {
    const TpStage tp = block_tp(mp.tp, B, T, C, H, l, ledger);
    const Attention attn = attention(mp.sp, B, tp.Tf, tp.Cl, tp.Hl, recompute);
    const int N = B * tp.Tf, Tf = tp.Tf;

    // dx = d/d(x_out). The residual passes it to x_mid unchanged (dx_mid starts as dx)
    // and the MLP branch adds its part.
    {
        const RowGrad dy = tp.g_backward(dx, g.fcproj_b);  // (Megatron-SP: all-gather)
        Tensor dfch_gelu = scratch_unfilled(ledger, {B, Tf, tp.Fl});
        Tensor dfch = scratch_unfilled(ledger, {B, Tf, tp.Fl});
        Tensor dln2 = scratch_unfilled(ledger, {B, Tf, C});
        kern::matmul_backward(dfch_gelu.f32(), g.fcproj_w, dy.dbias, dy.dout, ba.fch_gelu.f32(), w.fcproj_w, N, tp.Fl,
                              C, kern::Grad::overwrite);
        kern::gelu_backward(dfch.f32(), ba.fch.f32(), dfch_gelu.f32(), long(N) * tp.Fl, kern::Grad::overwrite);
        kern::matmul_backward(dln2.f32(), g.fc_w, g.fc_b, dfch.f32(), ba.ln2.f32(), w.fc_w, N, C, tp.Fl,
                              kern::Grad::overwrite);
        tp.layernorm_f_backward(dx, g.ln2_w, g.ln2_b, dln2, ba.x_mid.f32(), w.ln2_w, ba.ln2_mean, ba.ln2_rstd);
    }

    // dx = d/d(x_mid) now. The same again for the attention branch.
    const RowGrad dy = tp.g_backward(dx, g.attnproj_b);
    Tensor datty = scratch_unfilled(ledger, {B, Tf, tp.Cl});
    // Not zeroed: every attention backward writes all of it (plain, Ulysses, ring: its first block writes).
    Tensor dqkv = scratch_unfilled(ledger, {B, Tf, 3 * tp.Cl});
    Tensor datt = attn.probs ? Tensor(ledger, Mem::workspace, attn.att_shape(), DType::f32, false) : Tensor();
    Tensor dln1 = scratch_unfilled(ledger, {B, Tf, C});
    kern::matmul_backward(datty.f32(), g.attnproj_w, dy.dbias, dy.dout, ba.atty.f32(), w.attnproj_w, N, tp.Cl, C,
                          kern::Grad::overwrite);
    attn.backward(attn, dqkv.f32(), datt.f32(), datty.f32(), ba, mp.sp, l, ledger);
    kern::matmul_backward(dln1.f32(), g.attn_w, g.attn_b, dqkv.f32(), ba.ln1.f32(), w.attn_w, N, C, 3 * tp.Cl,
                          kern::Grad::overwrite);
    tp.layernorm_f_backward(dx, g.ln1_w, g.ln1_b, dln1, x_in, w.ln1_w, ba.ln1_mean, ba.ln1_rstd);
}

// encoder_stage_backward once dwpe points at the rows of my T positions, in my rows' order.
static void encoder_grads(float* dwte, float* dwpe, const float* dx, const int* tokens, int B, int T, int C, int Vl,
                          const ModelParallel& mp, Ledger& ledger) {
    TensorParallel& tp = mp.tp;
    if (tp.size() == 1) {
        kern::encoder_backward(dwte, dwpe, dx, tokens, B, T, C);
        return;
    }
    if (!tp.sequence_parallel()) {
        cpu::vocab_embedding_backward(dwte, dx, tokens, tp.rank() * Vl, Vl, B * T, C);
        cpu::add_positions_backward(dwpe, dx, B, T, C);
        return;
    }
    // Megatron-SP: dx holds my tokens; positions are mine, the embedding needs every token.
    const int Tl = T / tp.size();
    cpu::add_positions_backward(dwpe + long(tp.rank()) * Tl * C, dx, B, Tl, C);
    Tensor full = scratch_unfilled(ledger, {B, T, C});  // written whole by the gather
    tp.gather_seq(dx, full.f32(), B, Tl, C, -1, true);
    cpu::vocab_embedding_backward(dwte, full.f32(), tokens, tp.rank() * Vl, Vl, B * T, C);
}

void encoder_stage_backward(float* dwte, float* dwpe, const float* dx, const int* tokens, int B, int T, int C,
                            int Vl, const ModelParallel& mp, Ledger& ledger) {
    if (!mp.sp.zigzag()) {
        encoder_grads(dwte, dwpe + long(mp.sp.rank()) * T * C, dx, tokens, B, T, C, Vl, mp, ledger);
        return;
    }
    // Zig-zag: my positions' gradient in my rows' order, then added to their rows of dwpe.
    Tensor mine = scratch(ledger, {T, C});  // zeroed
    encoder_grads(dwte, mine.f32(), dx, tokens, B, T, C, Vl, mp, ledger);
    for (const SeqPiece& p : sequence_pieces(true, mp.sp.rank(), mp.sp.size(), T * mp.sp.size()))
        for (long i = 0; i < long(p.len) * C; ++i) dwpe[long(p.pos) * C + i] += mine.f32()[long(p.row) * C + i];
}

}  // namespace ss
