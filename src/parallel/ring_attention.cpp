#include "parallel/ring_attention.h"

#include <vector>

#include "comm/trace/trace.h"
#include "kernels/cpu/attention_block.h"

namespace ss {

RingAttention::RingAttention(Comm& comm, Group sp_group)
    : comm_(comm), group_(std::move(sp_group)), rank_(group_.index_of(comm.rank())) {}

RingStep ring_step(int sp_rank, int step, int sp) {
    const int owner = (sp_rank - step + sp) % sp;  // the block has gone `step` hops right
    const RingBlock block = owner == sp_rank  ? RingBlock::diagonal
                            : owner < sp_rank ? RingBlock::full
                                              : RingBlock::skipped;  // blocks ahead of me are all masked
    return RingStep{owner, block, (sp_rank + 1) % sp, (sp_rank + sp - 1) % sp};
}

namespace {
// My keys and values, packed as [B, Tl, 2C] rows of [k | v]: what goes round the ring.
std::vector<float> pack_kv(const float* qkv, int B, int Tl, int C) {
    std::vector<float> kv(size_t(B) * Tl * 2 * C);
    for (long row = 0; row < long(B) * Tl; ++row)
        std::copy(qkv + row * 3 * C + C, qkv + row * 3 * C + 3 * C, kv.begin() + row * 2 * C);
    return kv;
}
}  // namespace

void RingAttention::ring_forward(float* out, float* lse, const float* qkv, int B, int Tl, int C, int NH, int layer) {
    const int s = size();
    std::vector<float> m(size_t(B) * NH * Tl), l(m.size());
    std::vector<float> kv = pack_kv(qkv, B, Tl, C), next(kv.size());
    cpu::attention_block_init(m.data(), l.data(), out, B, Tl, C, NH);
    for (int step = 0; step < s; ++step) {
        const RingStep rs = ring_step(rank_, step, s);  // whose keys and values I hold now
        const int owner = rs.owner, right = group_.ranks[rs.send_to], left = group_.ranks[rs.recv_from];
        if (rs.block != RingBlock::skipped) {
            ScopedSpan span(comm_.tracer(), "ring block", "fwd", {{"layer", layer}, {"block", owner}});
            cpu::attention_block_forward(m.data(), l.data(), out, qkv, kv.data(), kv.data() + C, 2 * C, B, Tl, Tl,
                                         rank_ * Tl, owner * Tl, C, NH);
        }
        if (step + 1 < s) {  // pass it on: send right (never waits), then take the left neighbour's
            comm_.send(kv.data(), kv.size(), right, label(Payload::act, layer, false), "sp");
            comm_.recv(next.data(), next.size(), left, label(Payload::act, layer, false), "sp");
            kv.swap(next);
        }
    }
    cpu::attention_block_finish(out, lse, m.data(), l.data(), out, B, Tl, C, NH);
}

void RingAttention::ring_backward(float* dqkv, const float* dout, const float* qkv, const float* out,
                                  const float* lse, int B, int Tl, int C, int NH, int layer) {
    const int s = size();
    std::vector<float> D(size_t(B) * NH * Tl);
    cpu::attention_block_delta(D.data(), dout, out, B, Tl, C, NH);
    std::vector<float> kv = pack_kv(qkv, B, Tl, C), next(kv.size());
    std::vector<float> dkv(kv.size(), 0.0f), dnext(kv.size());  // gradients of the block I hold
    for (int step = 0; step < s; ++step) {
        const RingStep rs = ring_step(rank_, step, s);
        const int owner = rs.owner, right = group_.ranks[rs.send_to], left = group_.ranks[rs.recv_from];
        if (rs.block != RingBlock::skipped) {
            ScopedSpan span(comm_.tracer(), "ring block", "bwd", {{"layer", layer}, {"block", owner}});
            cpu::attention_block_backward(dqkv, dkv.data(), dkv.data() + C, dout, qkv, kv.data(), kv.data() + C,
                                          2 * C, lse, D.data(), B, Tl, Tl, rank_ * Tl, owner * Tl, C, NH);
        }
        if (s == 1) break;
        if (step + 1 < s) {
            comm_.send(kv.data(), kv.size(), right, label(Payload::act, layer, true), "sp");
            comm_.recv(next.data(), next.size(), left, label(Payload::act, layer, true), "sp");
            kv.swap(next);
        }
        // The gradients travel with their block; after the last step one more hop brings
        // each block's gradient back to its owner.
        comm_.send(dkv.data(), dkv.size(), right, label(Payload::act_grad, layer, true), "sp");
        comm_.recv(dnext.data(), dnext.size(), left, label(Payload::act_grad, layer, true), "sp");
        dkv.swap(dnext);
    }
    // dkv now holds the gradient of my own keys and values, from every rank that used them.
    for (long row = 0; row < long(B) * Tl; ++row)
        for (int c = 0; c < 2 * C; ++c) dqkv[row * 3 * C + C + c] += dkv[row * 2 * C + c];
}

}  // namespace ss
