// layers.cpp — GPT-2's stages, forward and backward: the embedding, a
// transformer block, the head. They wire the kernels together and call the
// model-parallel operators (tp.*, sp.*; model/model_parallel.h) exactly where
// tensor and sequence parallelism need their ranks to meet. The passes that
// walk the stages, and the model class, are in gpt2.cpp.
//
// kern::f runs f on the rank's device (kernels/dispatch.h: the CPU kernel or
// its CUDA twin); cpu::f has no GPU twin yet and runs on the host, over
// managed memory when the rank is on a GPU.
#include <algorithm>
#include <vector>

#include "core/device.h"
#include "kernels/cpu/vocab_parallel.h"
#include "kernels/dispatch.h"
#include "model/gpt2.h"
#include "model/model_parallel.h"

namespace ss {


// Saved activations need no zero-fill: forward writes every element first.
static Tensor act(Ledger& ledger, Shape shape) { return Tensor(ledger, Mem::acts, std::move(shape), DType::f32, false); }
static Tensor scratch(Ledger& ledger, Shape shape) { return Tensor(ledger, Mem::workspace, std::move(shape)); }

// ---- forward ------------------------------------------------------------------
//
// Under tensor parallelism (t = tp.size() > 1) each rank holds H/t heads and
// 4C/t MLP columns (model/params.h, Split), so the shapes below use
//   Cl = C/t (attention width of my heads), Hl = H/t, Fl = 4C/t, Vl = Vp/t
// (Vp: the padded vocabulary, model/config.h; the head scores only the rows
// below V, see `words`).
// With Megatron sequence parallelism (tp.sequence_parallel()) the residual
// stream, the LayerNorms and the dropout-free additions work on Tl = T/t
// tokens of each sequence; the column-parallel layers get the whole sequence
// back from an all-gather, and the row-parallel ones hand their partial sums
// over with a reduce-scatter instead of an all-reduce (Korthikanti et al.
// 2022, section 4.2.2). With t = 1 every tp.* call does nothing.

namespace {
// d(bias) of a layer whose bias was added to @p N rows of dout: column sums.
void bias_backward(float* dbias, const float* dout, int N, int C) {
    for (int n = 0; n < N; ++n)
        for (int c = 0; c < C; ++c) dbias[c] += dout[long(n) * C + c];
}
}  // namespace

void encoder_stage_forward(Activations& a, const float* wte, const float* wpe, const int* tokens, int C, int Vl,
                           const ModelParallel& mp, Ledger& ledger) {
    TensorParallel& tp = mp.tp;
    const int N = a.B * a.T;
    a.encoded = act(ledger, {a.B, a.Tl, C});
    wpe += long(mp.sp.rank()) * a.T * C;  // Ulysses: my tokens sit at positions rank*T .. rank*T + T-1
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
                   const ModelParallel& mp, Ledger& ledger) {
    TensorParallel& tp = mp.tp;
    SequenceParallel& sp = mp.sp;
    const bool msp = tp.sequence_parallel();  // Megatron-SP: my T tokens of the residual stream
    const int t = tp.size(), Cl = C / t, Hl = H / t, Fl = 4 * C / t;
    const int Tf = msp ? T * t : T, Nl = B * T, N = B * Tf;  // Tf: tokens the column/row layers see
    // Attention runs on Ta tokens of Ca channels: all Tf*sp tokens and my heads under Ulysses.
    const bool ring = sp.ring();  // ring attention: my tokens' queries, keys and values come round
    const int s = ring ? 1 : sp.size(), Ta = Tf * s, Ca = Cl / s, Ha = Hl / s;
    ba.ln1 = act(ledger, {B, Tf, C});  // under Megatron-SP: the gathered input of c_attn
    ba.ln1_mean = act(ledger, {B, T});
    ba.ln1_rstd = act(ledger, {B, T});
    ba.qkv = act(ledger, {B, Ta, 3 * Ca});
    ba.att = ring ? act(ledger, {B, Hl, Tf}) : act(ledger, {B, Ha, Ta, Ta});  // ring: log-sum-exp per query
    ba.atty = act(ledger, {B, Tf, Cl});
    ba.x_mid = act(ledger, {B, T, C});
    ba.ln2 = act(ledger, {B, Tf, C});
    ba.ln2_mean = act(ledger, {B, T});
    ba.ln2_rstd = act(ledger, {B, T});
    ba.fch = act(ledger, {B, Tf, Fl});
    ba.fch_gelu = act(ledger, {B, Tf, Fl});
    ba.x_out = act(ledger, {B, T, C});

    // LayerNorm on my tokens; under Megatron-SP all-gather them for the column-parallel layer.
    auto layernorm_then_gather = [&](Tensor& out, Tensor& mean, Tensor& rstd, const float* x, const float* g,
                                     const float* b) {
        if (!msp) {
            kern::layernorm_forward(out.f32(), mean.f32(), rstd.f32(), x, g, b, Nl, C);
            return;
        }
        Tensor mine = scratch(ledger, {B, T, C});
        kern::layernorm_forward(mine.f32(), mean.f32(), rstd.f32(), x, g, b, Nl, C);
        tp.gather_seq(mine.f32(), out.f32(), B, T, C, l, false);
    };
    // The row-parallel layer's partial sums: all-reduce (g), or reduce-scatter to my tokens.
    auto sum_partials = [&](Tensor& partial_full, float* out) {
        if (!msp) {
            tp.g_forward(out, long(Nl) * C, l);  // partial_full is out itself
            return;
        }
        tp.scatter_seq(partial_full.f32(), out, B, T, C, l, false);
    };

    // Attention: x_mid = x_in + g(c_proj_row(attention(c_attn_col(f(ln_1(x_in))))))
    layernorm_then_gather(ba.ln1, ba.ln1_mean, ba.ln1_rstd, x_in, w.ln1_w, w.ln1_b);
    if (ring) {
        kern::matmul_forward(ba.qkv.f32(), ba.ln1.f32(), w.attn_w, w.attn_b, N, C, 3 * Cl);
        sp.ring_forward(ba.atty.f32(), ba.att.f32(), ba.qkv.f32(), B, Tf, Cl, Hl, l);
    } else if (s == 1) {
        kern::matmul_forward(ba.qkv.f32(), ba.ln1.f32(), w.attn_w, w.attn_b, N, C, 3 * Cl);  // column-parallel: my heads
        kern::attention_forward(ba.atty.f32(), ba.att.f32(), ba.qkv.f32(), B, Tf, Cl, Hl);
    } else {  // Ulysses: my tokens -> all-to-all -> my heads of all tokens -> attention -> all-to-all back
        Tensor qkv_local = scratch(ledger, {B, Tf, 3 * Cl});
        kern::matmul_forward(qkv_local.f32(), ba.ln1.f32(), w.attn_w, w.attn_b, N, C, 3 * Cl);
        sp.seq_to_heads(qkv_local.f32(), ba.qkv.f32(), B, Tf, Cl, 3, l, false);
        Tensor y_heads = scratch(ledger, {B, Ta, Ca});
        kern::attention_forward(y_heads.f32(), ba.att.f32(), ba.qkv.f32(), B, Ta, Ca, Ha);
        sp.heads_to_seq(y_heads.f32(), ba.atty.f32(), B, Tf, Cl, 1, l, false);
    }
    {
        Tensor partial = msp ? scratch(ledger, {B, Tf, C}) : Tensor();
        float* proj = msp ? partial.f32() : ba.x_mid.f32();
        kern::matmul_forward(proj, ba.atty.f32(), w.attnproj_w, nullptr, N, Cl, C);  // row-parallel: a partial sum
        sum_partials(partial, ba.x_mid.f32());
    }
    kern::add_bias(ba.x_mid.f32(), w.attnproj_b, Nl, C);  // once, after the sum
    kern::add_inplace(ba.x_mid.f32(), x_in, long(Nl) * C);

    // MLP: x_out = x_mid + g(c_proj_row(gelu(c_fc_col(f(ln_2(x_mid))))))
    layernorm_then_gather(ba.ln2, ba.ln2_mean, ba.ln2_rstd, ba.x_mid.f32(), w.ln2_w, w.ln2_b);
    kern::matmul_forward(ba.fch.f32(), ba.ln2.f32(), w.fc_w, w.fc_b, N, C, Fl);
    kern::gelu_forward(ba.fch_gelu.f32(), ba.fch.f32(), long(N) * Fl);
    {
        Tensor partial = msp ? scratch(ledger, {B, Tf, C}) : Tensor();
        float* proj = msp ? partial.f32() : ba.x_out.f32();
        kern::matmul_forward(proj, ba.fch_gelu.f32(), w.fcproj_w, nullptr, N, Fl, C);
        sum_partials(partial, ba.x_out.f32());
    }
    kern::add_bias(ba.x_out.f32(), w.fcproj_b, Nl, C);
    kern::add_inplace(ba.x_out.f32(), ba.x_mid.f32(), long(Nl) * C);
}

// The words among my Vl rows of wte: rows at or past V are padding (model/config.h, padded_vocab).
static int words_of_rank(int V, int Vl, int tp_rank) { return std::clamp(V - tp_rank * Vl, 0, Vl); }

float head_forward(Activations& a, const float* x_last, const float* lnf_w, const float* lnf_b, const float* wte,
                   const int* targets, int C, int V, int Vl, const ModelParallel& mp, Ledger& ledger) {
    TensorParallel& tp = mp.tp;
    const int N = a.B * a.T, Nl = a.B * a.Tl;
    a.lnf = act(ledger, {a.B, a.T, C});
    a.lnf_mean = act(ledger, {a.B, a.Tl});
    a.lnf_rstd = act(ledger, {a.B, a.Tl});
    a.probs = act(ledger, {a.B, a.T, Vl});
    a.losses = act(ledger, {a.B, a.T});
    if (!tp.sequence_parallel()) {
        kern::layernorm_forward(a.lnf.f32(), a.lnf_mean.f32(), a.lnf_rstd.f32(), x_last, lnf_w, lnf_b, N, C);
    } else {  // ln_f on my tokens, then all of them for the vocabulary-parallel head
        Tensor mine = scratch(ledger, {a.B, a.Tl, C});
        kern::layernorm_forward(mine.f32(), a.lnf_mean.f32(), a.lnf_rstd.f32(), x_last, lnf_w, lnf_b, Nl, C);
        tp.gather_seq(mine.f32(), a.lnf.f32(), a.B, a.Tl, C, -1, false);
    }
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
    const int N = a.B * a.T, Nl = a.B * a.Tl;
    // Zero-filled: the padding columns stay 0, so wte's padding rows get no gradient.
    Tensor dlogits = scratch(ledger, {a.B, a.T, Vl});
    if (tp.size() == 1)
        kern::crossentropy_backward(dlogits.f32(), a.probs.f32(), targets, dloss, N, V, Vl);
    else  // probs are 0 in my padding columns, so they add 0
        cpu::vocab_ce_backward(dlogits.f32(), a.probs.f32(), targets, tp.rank() * Vl, dloss, N, Vl);
    Tensor dlnf = scratch(ledger, {a.B, a.T, C});
    kern::lm_head_backward(dlnf.f32(), dwte, dlogits.f32(), a.lnf.f32(), wte, N, C, Vl);
    // Each rank scored its Vp/t rows: sum their input gradients (f), or reduce-scatter them to my tokens.
    Tensor dmine;
    const float* dln = dlnf.f32();
    if (!tp.sequence_parallel()) {
        tp.f_backward(dlnf.f32(), long(N) * C, -1);
    } else {
        dmine = scratch(ledger, {a.B, a.Tl, C});
        tp.scatter_seq(dlnf.f32(), dmine.f32(), a.B, a.Tl, C, -1, true);
        dln = dmine.f32();
    }
    device_zero(current_device(), dx, sizeof(float) * size_t(Nl) * C);
    kern::layernorm_backward(dx, dlnf_w, dlnf_b, dln, x_last, lnf_w, a.lnf_mean.f32(), a.lnf_rstd.f32(), Nl, C);
}

void block_backward(float* dx, BlockGrads& g, const BlockActs& ba, const BlockWeights& w, const float* x_in, int B,
                    int T, int C, int H, int l, const ModelParallel& mp, Ledger& ledger) {
    TensorParallel& tp = mp.tp;
    SequenceParallel& sp = mp.sp;
    const bool msp = tp.sequence_parallel();
    const int t = tp.size(), Cl = C / t, Hl = H / t, Fl = 4 * C / t;
    const int Tf = msp ? T * t : T, Nl = B * T, N = B * Tf;
    const bool ring = sp.ring();
    const int s = ring ? 1 : sp.size(), Ta = Tf * s, Ca = Cl / s, Ha = Hl / s;

    // The row-parallel layer's output gradient: my tokens' dx, all-gathered under
    // Megatron-SP (the backward of its reduce-scatter); its bias saw only my tokens.
    auto proj_grad = [&](Tensor& full, float* dbias) -> const float* {
        if (!msp) return dx;  // g's backward is the identity
        bias_backward(dbias, dx, Nl, C);
        full = scratch(ledger, {B, Tf, C});
        tp.gather_seq(dx, full.f32(), B, T, C, l, true);
        return full.f32();
    };
    // The column-parallel layer's input gradient: partial over the TP ranks.
    // Sum it (f), or reduce-scatter it to my tokens (the backward of the all-gather).
    auto ln_input_grad = [&](Tensor& full, Tensor& mine) -> const float* {
        if (!msp) {
            tp.f_backward(full.f32(), long(Nl) * C, l);
            return full.f32();
        }
        mine = scratch(ledger, {B, T, C});
        tp.scatter_seq(full.f32(), mine.f32(), B, T, C, l, true);
        return mine.f32();
    };

    // dx = d/d(x_out). The residual passes it to x_mid unchanged (dx_mid starts as dx)
    // and the MLP branch adds its part.
    {
        Tensor dproj_full, dln2_mine;
        const float* dproj = proj_grad(dproj_full, g.fcproj_b);
        Tensor dfch_gelu = scratch(ledger, {B, Tf, Fl});
        Tensor dfch = scratch(ledger, {B, Tf, Fl});
        Tensor dln2 = scratch(ledger, {B, Tf, C});
        kern::matmul_backward(dfch_gelu.f32(), g.fcproj_w, msp ? nullptr : g.fcproj_b, dproj, ba.fch_gelu.f32(), w.fcproj_w,
                        N, Fl, C);
        kern::gelu_backward(dfch.f32(), ba.fch.f32(), dfch_gelu.f32(), long(N) * Fl);
        kern::matmul_backward(dln2.f32(), g.fc_w, g.fc_b, dfch.f32(), ba.ln2.f32(), w.fc_w, N, C, Fl);
        const float* dln = ln_input_grad(dln2, dln2_mine);
        kern::layernorm_backward(dx, g.ln2_w, g.ln2_b, dln, ba.x_mid.f32(), w.ln2_w, ba.ln2_mean.f32(), ba.ln2_rstd.f32(),
                           Nl, C);
    }

    // dx = d/d(x_mid) now. The same again for the attention branch.
    Tensor dproj_full, dln1_mine;
    const float* dproj = proj_grad(dproj_full, g.attnproj_b);
    Tensor datty = scratch(ledger, {B, Tf, Cl});
    Tensor dqkv = scratch(ledger, {B, Tf, 3 * Cl});
    Tensor datt_scratch = ring ? Tensor() : Tensor(ledger, Mem::workspace, {B, Ha, Ta, Ta}, DType::f32, false);
    Tensor dln1 = scratch(ledger, {B, Tf, C});
    kern::matmul_backward(datty.f32(), g.attnproj_w, msp ? nullptr : g.attnproj_b, dproj, ba.atty.f32(), w.attnproj_w, N,
                    Cl, C);
    // Selective recompute (Korthikanti et al. 2022, section 5): the forward dropped the
    // softmax probabilities; compute them again from the saved q, k, v (same kernel, same values).
    const float* att = ba.att.f32();
    Tensor att_again;
    if (!ring && ba.att.empty()) {
        att_again = Tensor(ledger, Mem::workspace, {B, Ha, Ta, Ta}, DType::f32, false);
        Tensor y_again = scratch(ledger, {B, Ta, Ca});
        kern::attention_forward(y_again.f32(), att_again.f32(), ba.qkv.f32(), B, Ta, Ca, Ha);
        att = att_again.f32();
    }
    if (ring) {
        sp.ring_backward(dqkv.f32(), datty.f32(), ba.qkv.f32(), ba.atty.f32(), ba.att.f32(), B, Tf, Cl, Hl, l);
    } else if (s == 1) {
        kern::attention_backward(dqkv.f32(), datt_scratch.f32(), datty.f32(), ba.qkv.f32(), att, B, Tf, Cl, Hl);
    } else {  // the two all-to-alls in reverse
        Tensor dy_heads = scratch(ledger, {B, Ta, Ca});
        sp.seq_to_heads(datty.f32(), dy_heads.f32(), B, Tf, Cl, 1, l, true);
        Tensor dqkv_heads = scratch(ledger, {B, Ta, 3 * Ca});
        kern::attention_backward(dqkv_heads.f32(), datt_scratch.f32(), dy_heads.f32(), ba.qkv.f32(), att, B, Ta,
                           Ca, Ha);
        sp.heads_to_seq(dqkv_heads.f32(), dqkv.f32(), B, Tf, Cl, 3, l, true);
    }
    kern::matmul_backward(dln1.f32(), g.attn_w, g.attn_b, dqkv.f32(), ba.ln1.f32(), w.attn_w, N, C, 3 * Cl);
    const float* dln = ln_input_grad(dln1, dln1_mine);
    kern::layernorm_backward(dx, g.ln1_w, g.ln1_b, dln, x_in, w.ln1_w, ba.ln1_mean.f32(), ba.ln1_rstd.f32(), Nl, C);
}

void encoder_stage_backward(float* dwte, float* dwpe, const float* dx, const int* tokens, int B, int T, int C,
                            int Vl, const ModelParallel& mp) {
    TensorParallel& tp = mp.tp;
    dwpe += long(mp.sp.rank()) * T * C;
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
    std::vector<float> full(size_t(B) * T * C);
    tp.gather_seq(dx, full.data(), B, Tl, C, -1, true);
    cpu::vocab_embedding_backward(dwte, full.data(), tokens, tp.rank() * Vl, Vl, B * T, C);
}

}  // namespace ss
