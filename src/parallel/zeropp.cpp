// zeropp.cpp — qwZ's quantized gather and qgZ's quantized reduce-scatter (the
// pictures are in zeropp.h).
#include "parallel/zeropp.h"

#include <cstring>
#include <tuple>

#include "core/check.h"
#include "kernels/cpu/quantize.h"

namespace ss {

namespace {

constexpr int kQwzBits = 8;  // qwZ's int8 weights (the paper's)

// fp32 values of @p n elements of @p dt at @p p (bf16 widened: quantization reads fp32).
Tensor widened(Ledger& ledger, const void* p, size_t n, DType dt) {
    Tensor x(ledger, Mem::workspace, {int64_t(n)}, DType::f32, false);
    if (dt == DType::bf16)
        bf16_to_f32(x.f32(), static_cast<const uint16_t*>(p), n);
    else if (n)
        std::memcpy(x.f32(), p, n * 4);
    return x;
}

uint8_t* bytes(Tensor& t) { return static_cast<uint8_t*>(t.data()); }

}  // namespace

// ---- qwZ ---------------------------------------------------------------------------------

UnitInFlight start_qwz_all_gather(const ShardGroup& g, int u, const void* my_chunk, DType storage, int block,
                                  const Label& label) {
    const size_t chunk = size_t(g.plan.units[size_t(u)].chunk);
    const size_t packed = cpu::quantized_bytes(chunk, kQwzBits, block);
    UnitInFlight f;
    f.unit = u;
    f.send = Tensor(g.ledger, Mem::comm, {int64_t(packed)}, DType::u8, false);
    f.wire = Tensor(g.ledger, Mem::comm, {int64_t(packed) * g.plan.n}, DType::u8, false);
    cpu::quantize_blocks(widened(g.ledger, my_chunk, chunk, storage).f32(), chunk, kQwzBits, block, bytes(f.send));
    f.whole = Tensor(g.ledger, Mem::comm, {g.plan.padded(u)}, storage, false);
    f.handle = g.comm.start_all_gather(f.send.data(), f.wire.data(), packed, DType::u8, g.group, label);
    return f;
}

void finish_qwz_all_gather(const ShardGroup& g, UnitInFlight& f, int block) {
    g.comm.wait(f.handle);
    const size_t chunk = size_t(g.plan.units[size_t(f.unit)].chunk);
    const size_t packed = cpu::quantized_bytes(chunk, kQwzBits, block);
    const bool bf16 = f.whole.dtype() == DType::bf16;
    Tensor x = bf16 ? Tensor(g.ledger, Mem::workspace, {int64_t(chunk)}, DType::f32, false) : Tensor();
    for (int i = 0; i < g.plan.n; ++i) {
        float* out = bf16 ? x.f32() : f.whole.f32() + size_t(i) * chunk;
        cpu::dequantize_blocks(bytes(f.wire) + size_t(i) * packed, chunk, kQwzBits, block, out);
        if (bf16) f32_to_bf16(f.whole.bf16() + size_t(i) * chunk, x.f32(), chunk);
    }
    f.send = Tensor();
    f.wire = Tensor();
}

Tensor qwz_all_gather(const ShardGroup& g, int u, const void* my_chunk, DType storage, int block,
                      const Label& label) {
    UnitInFlight f = start_qwz_all_gather(g, u, my_chunk, storage, block, label);
    finish_qwz_all_gather(g, f, block);
    return std::move(f.whole);
}

// ---- qgZ ---------------------------------------------------------------------------------

std::pair<Group, Group> qgz_groups(const Group& shard, int me, int k) {
    const int i = shard.index_of(me), n = shard.size();
    SS_CHECK(i >= 0 && k >= 1 && n % k == 0, "qgz_groups: rank " << me << " in a shard group of " << n << " with K = " << k);
    Group node{"qgz_node", {}}, cross{"qgz_cross", {}};
    for (int j = (i / k) * k; j < (i / k + 1) * k; ++j) node.ranks.push_back(shard.ranks[size_t(j)]);
    for (int j = i % k; j < n; j += k) cross.ranks.push_back(shard.ranks[size_t(j)]);
    return {node, cross};
}

Qgz::Qgz(const ShardGroup& shard, int node_size, int bits, int block)
    : shard_(shard), k_(node_size), bits_(bits), block_(block) {
    SS_CHECK(bits == 4 || bits == 8, "qgZ: bits " << bits << " (4 or 8)");
    if (k_ == shard.plan.n) {
        node_ = shard.group;  // no nodes: one all-to-all over the shard group, on its own axis
    } else {
        std::tie(node_, cross_) = qgz_groups(shard.group, shard.comm.rank(), k_);
    }
}

void Qgz::reduce_scatter_add(int u, const float* unit_grads, float* my_acc, const Label& label) const {
    const int n = shard_.plan.n, k = k_, m_nodes = n / k;
    const int64_t c = shard_.plan.units[size_t(u)].chunk;
    Ledger& ledger = shard_.ledger;

    // 1. Inside my node: local rank i gets the chunks {m K + i}, quantized; I sum my node's
    //    pieces of the chunks {m K + j} (j: my local index), in the node's rank order.
    //    A node of one rank sends nothing: its "sum" is its own gradient, unquantized.
    const int64_t piece1 = m_nodes * c;
    Tensor partial(ledger, Mem::workspace, {piece1});
    Tensor staged(ledger, Mem::workspace, {piece1}, DType::f32, false);
    auto stage = [&](int i) {  // the chunks {m K + i} of my gradient, side by side
        for (int m = 0; m < m_nodes; ++m)
            std::memcpy(staged.f32() + m * c, unit_grads + (m * k + i) * c, size_t(c) * 4);
    };
    if (k == 1) {
        stage(0);
        std::memcpy(partial.f32(), staged.f32(), size_t(piece1) * 4);
    } else {
        const size_t bytes1 = cpu::quantized_bytes(size_t(piece1), bits_, block_);
        Tensor send(ledger, Mem::comm, {int64_t(bytes1) * k}, DType::u8, false);
        Tensor recv(ledger, Mem::comm, {int64_t(bytes1) * k}, DType::u8, false);
        for (int i = 0; i < k; ++i) {
            stage(i);
            cpu::quantize_blocks(staged.f32(), size_t(piece1), bits_, block_, bytes(send) + size_t(i) * bytes1);
        }
        shard_.comm.all_to_all(send.data(), recv.data(), bytes1, DType::u8, node_, label);
        for (int i = 0; i < k; ++i)
            cpu::dequantize_add_blocks(bytes(recv) + size_t(i) * bytes1, size_t(piece1), bits_, block_, partial.f32());
    }
    // 2. Across nodes (M > 1): node m gets chunk m K + j of my node's sum, quantized
    //    again; I sum the M nodes' pieces of my own chunk, in node order.
    const float* mine = partial.f32();  // one node: its sum is the whole sum
    Tensor total;
    if (m_nodes > 1) {
        total = Tensor(ledger, Mem::workspace, {c});
        const size_t bytes2 = cpu::quantized_bytes(size_t(c), bits_, block_);
        Tensor send(ledger, Mem::comm, {int64_t(bytes2) * m_nodes}, DType::u8, false);
        Tensor recv(ledger, Mem::comm, {int64_t(bytes2) * m_nodes}, DType::u8, false);
        for (int m = 0; m < m_nodes; ++m)
            cpu::quantize_blocks(partial.f32() + m * c, size_t(c), bits_, block_, bytes(send) + size_t(m) * bytes2);
        shard_.comm.all_to_all(send.data(), recv.data(), bytes2, DType::u8, cross_, label);
        for (int m = 0; m < m_nodes; ++m)
            cpu::dequantize_add_blocks(bytes(recv) + size_t(m) * bytes2, size_t(c), bits_, block_, total.f32());
        mine = total.f32();
    }
    // The average, as the reduce-scatter's avg takes it: the sum divided by N.
    for (int64_t e = 0; e < c; ++e) my_acc[e] += mine[e] / float(n);
}

}  // namespace ss
