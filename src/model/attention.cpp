// attention.cpp — plain, Ulysses and ring attention for one block, and
// attention(), which picks one (see attention.h). The all-to-alls and the ring
// are the sp operators of model_parallel.h; the math is the kernels'.
#include "model/attention.h"

#include "core/device.h"
#include "kernels/dispatch.h"
#include "kernels/profile.h"

namespace ss {

static Tensor scratch(Ledger& ledger, Shape shape) { return Tensor(ledger, Mem::workspace, std::move(shape)); }

// Ring, or one rank whose selective recompute drops the probabilities anyway: the
// blockwise kernels never make them (on one rank sp.ring_forward is one block,
// model/model_parallel.cpp).
bool blockwise_attention(const SequenceParallel& sp, Recompute recompute) {
    return sp.ring() || (sp.size() == 1 && recompute == Recompute::selective);
}

Attention attention(SequenceParallel& sp, int B, int T, int C, int H, Recompute recompute) {
    Attention a{B, T, C, H, T, C, H, true, plain_attention_forward, plain_attention_backward};
    if (blockwise_attention(sp, recompute)) {
        a.probs = false;
        a.planar = true;
        a.forward = blockwise_attention_forward;
        a.backward = blockwise_attention_backward;
    } else if (sp.size() > 1) {
        const int s = sp.size();
        a.Ta = T * s, a.Ca = C / s, a.Ha = H / s;
        a.forward = ulysses_attention_forward;
        a.backward = ulysses_attention_backward;
    }
    return a;
}

// The softmax probabilities backward needs: the saved ones, or (Ulysses with
// selective recompute, Korthikanti et al. 2022, section 5: the forward dropped
// them) the same kernel on the saved q, k, v again, into @p again.
static const float* probabilities(const Attention& a, const BlockActs& ba, Tensor& again, Ledger& ledger) {
    if (!ba.att.empty()) return ba.att.f32();
    again = Tensor(ledger, Mem::workspace, a.att_shape(), DType::f32, false);
    Tensor y_again = scratch(ledger, {a.B, a.Ta, a.Ca});
    kern::attention_forward(y_again.f32(), again.f32(), ba.qkv.f32(), a.B, a.Ta, a.Ca, a.Ha);
    return again.f32();
}

// ---- plain ----------------------------------------------------------------------

void plain_attention_forward(const Attention& a, BlockActs& ba, SequenceParallel&, int, Ledger&) {
    kern::attention_forward(ba.atty.f32(), ba.att.f32(), ba.qkv.f32(), a.B, a.T, a.C, a.H);
}

void plain_attention_backward(const Attention& a, float* dqkv, float* datt, const float* datty, const BlockActs& ba,
                              SequenceParallel&, int, Ledger& ledger) {
    Tensor again;
    const float* att = probabilities(a, ba, again, ledger);
    kern::attention_backward(dqkv, datt, datty, ba.qkv.f32(), att, a.B, a.T, a.C, a.H, kern::Grad::overwrite);
}

// ---- Ulysses ----------------------------------------------------------------------

// c_attn wrote my tokens' q|k|v of all my heads into ba.qkv; the all-to-all
// puts all tokens of 1/sp of those heads in its place (what backward reads).
void ulysses_attention_forward(const Attention& a, BlockActs& ba, SequenceParallel& sp, int layer, Ledger& ledger) {
    Tensor qkv_mine = scratch(ledger, {a.B, a.T, 3 * a.C});
    device_copy(qkv_mine.f32(), ba.qkv.f32(), sizeof(float) * size_t(qkv_mine.numel()));
    sp.seq_to_heads(qkv_mine.f32(), ba.qkv.f32(), a.B, a.T, a.C, 3, layer, false);
    Tensor y_heads = scratch(ledger, {a.B, a.Ta, a.Ca});
    kern::attention_forward(y_heads.f32(), ba.att.f32(), ba.qkv.f32(), a.B, a.Ta, a.Ca, a.Ha);
    sp.heads_to_seq(y_heads.f32(), ba.atty.f32(), a.B, a.T, a.C, 1, layer, false);
}

void ulysses_attention_backward(const Attention& a, float* dqkv, float* datt, const float* datty,
                                const BlockActs& ba, SequenceParallel& sp, int layer, Ledger& ledger) {
    Tensor again;
    const float* att = probabilities(a, ba, again, ledger);
    Tensor dy_heads = scratch(ledger, {a.B, a.Ta, a.Ca});
    sp.seq_to_heads(datty, dy_heads.f32(), a.B, a.T, a.C, 1, layer, true);
    Tensor dqkv_heads(ledger, Mem::workspace, {a.B, a.Ta, 3 * a.Ca}, DType::f32, false);  // written whole, below
    kern::attention_backward(dqkv_heads.f32(), datt, dy_heads.f32(), ba.qkv.f32(), att, a.B, a.Ta, a.Ca, a.Ha,
                             kern::Grad::overwrite);
    sp.heads_to_seq(dqkv_heads.f32(), dqkv, a.B, a.T, a.C, 3, layer, true);  // writes all of dqkv
}

// ---- ring, and blockwise on one rank ------------------------------------------------

// ba.att keeps the log-sum-exp of each query: all backward needs of the softmax.
// On one rank (no ring traffic inside) each pass is timed as the profile's attention row,
// with the plain core's model FLOPs (kernels/profile.h: 4 B T^2 C forward, 8 B T^2 C
// backward; the backward's recomputed S and P are not model FLOPs). Across ranks the ring's
// hops would fall inside the scope, so it is left out there.
void blockwise_attention_forward(const Attention& a, BlockActs& ba, SequenceParallel& sp, int layer, Ledger&) {
    const float* q = ba.qkv.f32();  // planar (Attention::planar): q, then k|v
    auto run = [&] {
        sp.ring_forward(ba.atty.f32(), ba.att.f32(), q, q + long(a.B) * a.T * a.C, a.B, a.T, a.C, a.H, layer);
    };
    if (sp.size() > 1) return run();
    kern::ProfileScope scope(kern::Kernel::attention_fwd, 4.0 * a.B * a.T * a.T * a.C);
    run();
}

void blockwise_attention_backward(const Attention& a, float* dqkv, float*, const float* datty, const BlockActs& ba,
                                  SequenceParallel& sp, int layer, Ledger&) {
    const float* q = ba.qkv.f32();
    auto run = [&] {
        sp.ring_backward(dqkv, datty, q, q + long(a.B) * a.T * a.C, ba.atty.f32(), ba.att.f32(), a.B, a.T, a.C,
                         a.H, layer);
    };
    if (sp.size() > 1) return run();
    kern::ProfileScope scope(kern::Kernel::attention_bwd, 8.0 * a.B * a.T * a.T * a.C);
    run();
}

}  // namespace ss
