#include "parallel/ring_attention.h"

#include <algorithm>
#include <vector>

#include "comm/trace/trace.h"
#include "core/check.h"
#include "kernels/cpu/attention_block.h"
#include "kernels/cpu/residual.h"

namespace ss {

RingAttention::RingAttention(Comm& comm, Group sp_group, RingSplit split, Ledger& ledger, bool overlap)
    : comm_(comm),
      group_(std::move(sp_group)),
      split_(split),
      ledger_(ledger),
      overlap_(overlap),
      rank_(group_.index_of(comm.rank())) {}

void RingAttention::sized(Tensor& t, int64_t n) {
    if (t.numel() != n) t = Tensor(ledger_, Mem::comm, {n}, DType::f32, false);
}

RingStep ring_step(int sp_rank, int step, int sp, RingSplit split) {
    const int owner = (sp_rank - step + sp) % sp;  // the block has gone `step` hops right
    // Positions in chunks: a sequence of sp chunks (contiguous) or 2 sp (zig-zag), one token each.
    const bool zz = zigzag_split(SpMode::ring, split, sp);
    const int chunks = zz ? 2 * sp : sp;
    const std::vector<SeqPiece> mine = sequence_pieces(zz, sp_rank, sp, chunks);
    const std::vector<SeqPiece> theirs = sequence_pieces(zz, owner, sp, chunks);
    RingStep st{owner, RingBlock::skipped, {}, 0.0, (sp_rank + 1) % sp, (sp_rank + sp - 1) % sp};
    const double piece_work = 1.0 / double(mine.size() * mine.size());  // a piece pair, in (T/sp)^2 blocks
    for (int qi = 0; qi < int(mine.size()); ++qi)
        for (int ki = 0; ki < int(theirs.size()); ++ki) {
            const int q = mine[size_t(qi)].pos, k = theirs[size_t(ki)].pos;
            if (k > q) continue;  // keys ahead of my queries: all masked
            const RingBlock b = k == q ? RingBlock::diagonal : RingBlock::full;
            st.pairs.push_back({qi, ki, b});
            st.work += b == RingBlock::diagonal ? piece_work / 2 : piece_work;
        }
    st.block = owner == sp_rank ? RingBlock::diagonal : st.pairs.empty() ? RingBlock::skipped : RingBlock::full;
    return st;
}

namespace {
// The mask of one step, as attention_block.h takes it: how many rows of the held
// block each of my rows sees. My pieces and the held block's are each in position
// order, so every row sees a prefix of the block (the pieces before it whole, a
// part of the one it shares a chunk with) and a later row no less: one kernel
// call per step covers all its pairs, with each piece packed once.
std::vector<int> step_visible(const std::vector<SeqPiece>& mine, const std::vector<SeqPiece>& held, int Tl) {
    std::vector<int> visible(size_t(Tl), 0);
    for (const SeqPiece& q : mine)
        for (const SeqPiece& k : held) {  // the held piece's keys at or before each of my piece's tokens
            const std::vector<int> n = cpu::causal_visible(q.len, k.len, q.pos, k.pos);
            for (int i = 0; i < q.len; ++i) visible[size_t(q.row + i)] += n[size_t(i)];
        }
    return visible;
}

}  // namespace

void RingAttention::start_pass(const float* held, Tensor& into, int64_t block, int right, int left, const Label& l,
                               CommHandle& sent, CommHandle& got) {
    if (!overlap_) return;
    // The receive first: where the left neighbour's send is already here, it is taken
    // now, and that neighbour's buffer is free by the time my send reaches its wait
    // (threads backend: a lent send's bytes are copied once, comm/threads/threads_p2p.cpp).
    got = comm_.start_recv(into.f32(), size_t(block), DType::f32, left, l, "sp");
    sent = comm_.start_send(held, size_t(block), DType::f32, right, l, "sp");
}

void RingAttention::finish_pass(const float* held, Tensor& into, int64_t block, int right, int left, const Label& l,
                                CommHandle& sent, CommHandle& got) {
    if (overlap_) {
        comm_.wait(got);  // at SP 2 the one who sent it has taken mine by now (start_pass)
        comm_.wait(sent);
    } else {  // send right (never waits), then take the left neighbour's
        comm_.send(held, size_t(block), right, l, "sp");
        comm_.recv(into.f32(), size_t(block), left, l, "sp");
    }
}

std::vector<SeqPiece> RingAttention::pieces_of(int sp_rank, int Tl) const {
    return sequence_pieces(zigzag(), sp_rank, size(), Tl * size());
}

// The blocks a rank holds in turn: its own first, c_attn's k|v plane (@p kv), which
// goes round as it is (read, never written); then each that comes in, into kv_ and
// next_ by turns, so the buffer a block arrives in is never the one being sent.
void RingAttention::ring_forward(float* out, float* lse, const float* q, const float* kv, int B, int Tl, int C,
                                 int NH, int layer) {
    const int s = size();
    std::vector<float> m(size_t(B) * NH * Tl), l(m.size());
    const int64_t block = int64_t(B) * Tl * 2 * C;
    sized(kv_, block);
    sized(next_, block);
    const float* held = kv;  // the block I hold
    Tensor *into = &next_, *spare = &kv_;  // where the next comes in, and the other
    const std::vector<SeqPiece> mine = pieces_of(rank_, Tl);
    cpu::attention_block_init(m.data(), l.data(), out, B, Tl, C, NH);
    for (int step = 0; step < s; ++step) {
        const RingStep rs = ring_step(rank_, step, s, split_);  // whose keys and values I hold now
        const int owner = rs.owner, right = group_.ranks[rs.send_to], left = group_.ranks[rs.recv_from];
        const bool pass = step + 1 < s;  // the block goes on to the right, the left one's comes in
        const Label kv_label = label(Payload::act, layer, false);
        CommHandle sent, got;
        if (pass) start_pass(held, *into, block, right, left, kv_label, sent, got);  // overlap on: under the compute
        if (!rs.pairs.empty()) {
            ScopedSpan span(comm_.tracer(), "ring block", "fwd",
                            {{"layer", layer}, {"block", owner}, {"work", rs.work}});
            // rs.pairs in one call: my rows against the held block, each row up to the keys it may see
            const std::vector<int> visible = step_visible(mine, pieces_of(owner, Tl), Tl);
            cpu::attention_block_forward(m.data(), l.data(), out, q, C, held, held + C, 2 * C, B, Tl, Tl,
                                         visible.data(), C, NH);
        }
        if (pass) {
            finish_pass(held, *into, block, right, left, kv_label, sent, got);
            held = into->f32();
            std::swap(into, spare);
        }
    }
    cpu::attention_block_finish(out, lse, m.data(), l.data(), out, B, Tl, C, NH);
}

void RingAttention::ring_backward(float* dqkv, const float* dout, const float* q, const float* kv, const float* out,
                                  const float* lse, int B, int Tl, int C, int NH, int layer) {
    const int s = size();
    std::vector<float> D(size_t(B) * NH * Tl);
    cpu::attention_block_delta(D.data(), dout, out, B, Tl, C, NH);
    // A block's key/value gradient is the sum of every rank's part. My own queries' part
    // of my own block is written straight into dqkv's k | v columns at step 0. The others'
    // parts are summed on the way round: the first rank after the owner starts the sum
    // (step 1), each later one receives it, adds its part and sends it on, and the last
    // one's send lands at the owner, which adds it into dqkv: s - 1 hops, as many as the
    // keys and values make (the sum travelling with its block from step 0 would take s).
    Tensor& dsum = dkv_;   // the others' part of the block I hold (steps 1 ..)
    Tensor& dnext = dnext_;  // the one coming in: the next block's, after the last step my own block's
    const int64_t block = int64_t(B) * Tl * 2 * C;
    for (Tensor* t : {&kv_, &next_, &dsum, &dnext}) sized(*t, block);
    const float* held = kv;  // as in ring_forward: my own plane first, then kv_ and next_ by turns
    Tensor *into = &next_, *spare = &kv_;
    const std::vector<SeqPiece> mine = pieces_of(rank_, Tl);
    const long C3 = 3L * C;
    for (int step = 0; step < s; ++step) {
        const RingStep rs = ring_step(rank_, step, s, split_);
        const int owner = rs.owner, right = group_.ranks[rs.send_to], left = group_.ranks[rs.recv_from];
        const bool pass = step + 1 < s;
        const bool gradient_hop = step > 0;  // my part of another's block goes on (my own stays home)
        const Label kv_label = label(Payload::act, layer, true);
        const Label dkv_label = label(Payload::act_grad, layer, true);
        CommHandle sent, got;  // the keys and values only: their gradients are made by the compute below
        if (pass) start_pass(held, *into, block, right, left, kv_label, sent, got);
        SS_CHECK(step > 0 || !rs.pairs.empty(), "ring attention: step 0 holds my own block, and it computed nothing");
        // Overlap on: the receive of the gradient hop is posted now, so the left
        // neighbour's send (after its compute) lands straight in dnext.
        CommHandle dgot;
        if (overlap_ && gradient_hop)
            dgot = comm_.start_recv(dnext.f32(), size_t(block), DType::f32, left, dkv_label, "sp");
        std::vector<int> visible;
        if (!rs.pairs.empty()) visible = step_visible(mine, pieces_of(owner, Tl), Tl);
        // Step 0 writes dq and my block's dk | dv in dqkv (every query sees itself, every key
        // is seen); step 1 starts the others' sum from zeros (the kernel's overwrite would
        // write dq too, which step 0 wrote), and the later steps add to the sum that came in.
        if (step == 1) std::fill(dsum.f32(), dsum.f32() + block, 0.0f);
        if (!rs.pairs.empty()) {
            ScopedSpan span(comm_.tracer(), "ring block", "bwd",
                            {{"layer", layer}, {"block", owner}, {"work", rs.work}});
            float* dk = step == 0 ? dqkv + C : dsum.f32();
            const int dkv_stride = step == 0 ? int(C3) : 2 * C;
            cpu::attention_block_backward(dqkv, dk, dk + C, dkv_stride, dout, q, C, held, held + C, 2 * C, lse,
                                          D.data(), B, Tl, Tl, visible.data(), C, NH,
                                          /*overwrite=*/step == 0);
        }
        if (pass) {
            finish_pass(held, *into, block, right, left, kv_label, sent, got);
            held = into->f32();
            std::swap(into, spare);
        }
        if (!gradient_hop) continue;
        if (overlap_) {  // started, as the K/V pass: at SP 2 the left neighbour has taken it by dgot's end
            CommHandle dsent = comm_.start_send(dsum.f32(), size_t(block), DType::f32, right, dkv_label, "sp");
            comm_.wait(dgot);
            comm_.wait(dsent);  // before dsum's buffer receives the next hop
        } else {
            comm_.send(dsum.f32(), size_t(block), right, dkv_label, "sp");
            comm_.recv(dnext.f32(), size_t(block), left, dkv_label, "sp");
        }
        std::swap(dsum, dnext);
    }
    if (s == 1) return;
    // dsum now holds the others' part of my own keys' and values' gradient: added to mine
    // (a kernel's loop, vector code: a loop here was scalar at -O2, 1.4% of a ring run's samples).
    const float* others = dsum.f32();
    for (long row = 0; row < long(B) * Tl; ++row) cpu::add_inplace(dqkv + row * C3 + C, others + row * 2 * C, 2 * C);
}

}  // namespace ss
