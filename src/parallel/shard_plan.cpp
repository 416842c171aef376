// shard_plan.cpp — the per-unit partition and its two collectives. The
// picture is in shard_plan.h.
#include "parallel/shard_plan.h"

#include <algorithm>

#include "kernels/dispatch.h"

namespace ss {

ShardPlan make_shard_plan(const std::vector<Unit>& units, int n, int index) {
    ShardPlan p;
    p.n = n;
    p.index = index;
    for (const Unit& u : units) {
        ShardPlan::UnitShard us;
        us.begin = u.begin;
        us.end = u.end;
        us.chunk = (u.size() + n - 1) / n;  // ceil: the last chunk may end in padding
        us.local = p.shard_size;
        p.shard_size += us.chunk;
        p.units.push_back(us);
    }
    return p;
}

Piece ShardPlan::mine(int u) const {
    const UnitShard& us = units[size_t(u)];
    int64_t lo = std::min(us.end, us.begin + index * us.chunk);
    int64_t hi = std::min(us.end, lo + us.chunk);
    return Piece{lo, hi, us.local};
}

std::vector<Piece> ShardPlan::pieces() const {
    std::vector<Piece> out;
    for (size_t u = 0; u < units.size(); ++u) out.push_back(mine(int(u)));
    return out;
}

Tensor ShardGroup::all_gather(int u, const void* my_chunk, DType dt, const Label& label) const {
    Tensor whole(ledger, Mem::comm, {plan.padded(u)}, dt, false);
    comm.all_gather(my_chunk, whole.data(), size_t(plan.units[size_t(u)].chunk), dt, group, label);
    return whole;
}

void ShardGroup::reduce_scatter(int u, const void* padded_unit, void* my_chunk, DType dt, const Label& label) const {
    comm.reduce_scatter(padded_unit, my_chunk, size_t(plan.units[size_t(u)].chunk), dt, group, ReduceOp::avg, label);
}

namespace {

// my_acc += my chunk of the average (fp32 or bf16 on the wire).
void add_chunk(float* my_acc, const Tensor& mine, DType dt, int64_t chunk) {
    if (dt == DType::bf16)
        for (int64_t i = 0; i < chunk; ++i) my_acc[i] += bf16_to_f32(mine.bf16()[i]);
    else
        for (int64_t i = 0; i < chunk; ++i) my_acc[i] += mine.f32()[i];
}

}  // namespace

UnitInFlight ShardGroup::start_all_gather(int u, const void* my_chunk, DType dt, const Label& label) const {
    UnitInFlight f;
    f.unit = u;
    f.whole = Tensor(ledger, Mem::comm, {plan.padded(u)}, dt, false);
    f.handle = comm.start_all_gather(my_chunk, f.whole.data(), size_t(plan.units[size_t(u)].chunk), dt, group, label);
    return f;
}

UnitInFlight ShardGroup::start_reduce_scatter_add(int u, Tensor unit_grads, DType dt, float* my_acc,
                                                  const Label& label) const {
    UnitInFlight f;
    f.unit = u;
    f.my_acc = my_acc;
    if (dt == DType::bf16) {
        f.send = Tensor(ledger, Mem::comm, {plan.padded(u)}, DType::bf16, false);
        kern::f32_to_bf16(f.send.bf16(), unit_grads.f32(), size_t(plan.padded(u)));
    } else {
        f.send = std::move(unit_grads);  // the unit's gradients go on the wire as they are
    }
    const int64_t chunk = plan.units[size_t(u)].chunk;
    f.mine = Tensor(ledger, Mem::comm, {chunk}, dt, false);
    f.handle = comm.start_reduce_scatter(f.send.data(), f.mine.data(), size_t(chunk), dt, group, ReduceOp::avg, label);
    return f;
}

void ShardGroup::finish_reduce_scatter_add(UnitInFlight& f) const {
    comm.wait(f.handle);
    add_chunk(f.my_acc, f.mine, f.mine.dtype(), plan.units[size_t(f.unit)].chunk);
    f = UnitInFlight{};
}

void ShardGroup::reduce_scatter_add(int u, const float* unit_grads, DType dt, float* my_acc, const Label& label) const {
    // send: the unit's padded gradient in the wire dtype; recv: my chunk of
    // the average over the shard group, added into my fp32 gradient shard.
    const int64_t chunk = plan.units[size_t(u)].chunk;
    Tensor send;
    const void* send_ptr = unit_grads;
    if (dt == DType::bf16) {
        send = Tensor(ledger, Mem::comm, {plan.padded(u)}, DType::bf16, false);
        kern::f32_to_bf16(send.bf16(), unit_grads, size_t(plan.padded(u)));
        send_ptr = send.data();
    }
    Tensor mine(ledger, Mem::comm, {chunk}, dt, false);
    reduce_scatter(u, send_ptr, mine.data(), dt, label);
    add_chunk(my_acc, mine, dt, chunk);
}

}  // namespace ss
