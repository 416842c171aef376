// mpi_backend.cpp — the collectives of the `mpi` backend: each one is MPI's.
//
// A Group is an MPI communicator whose rank i is group.ranks[i], so "index in
// the group" (a broadcast root, an all_gather block) and "rank in the
// communicator" are the same number:
//
//     world  0 1 2 3          prepare({tp: [0,1] [2,3]})  ->  MPI_Comm_split(world, color, key)
//                                  color = which group I am in, key = my index in it
//     tp     [0,1] [2,3]           rank 2 gets a communicator {2 -> 0, 3 -> 1}
//
// Each call starts the non-blocking MPI collective and waits for it through the
// Watch (mpi_watch.cpp), which ends the wait with a report after the
// timeout. bf16 reductions go through fp32 (reduce_kernels.h): widen, MPI_SUM
// on MPI_FLOAT, round once. A count of 0 still synchronises the group (MPI may
// return at once from a 0-element collective, so it becomes a barrier).
#include <chrono>
#include <climits>
#include <cstring>
#include <set>
#include <thread>

#include "comm/mpi/mpi_detail.h"
#include "comm/reduce_kernels.h"
#include "core/check.h"

namespace ss {

using mpi::WaitInfo;

namespace {


bool test(MPI_Request& req) {
    int done = 0;
    SS_MPI_CHECK(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
    return done != 0;
}

float* grow(std::vector<float>& v, size_t n) {
    if (v.size() < n) v.resize(n);
    return v.data();
}

}  // namespace

// ---- setting up: two private copies of the world, and a communicator per group ------

MpiBackend::MpiBackend(double timeout_seconds) : impl_(std::make_unique<Impl>()) {
    SS_CHECK(timeout_seconds > 0, "mpi backend: timeout " << timeout_seconds << " s must be positive");
    mpi::ensure_initialized();
    Impl& m = *impl_;
    SS_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &m.rank));
    SS_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &m.world));
    // Non-blocking dups, so that a rank that never starts the backend is a timeout, not a hang.
    MPI_Request reqs[2];
    SS_MPI_CHECK(MPI_Comm_idup(MPI_COMM_WORLD, &m.p2p, &reqs[0]));
    SS_MPI_CHECK(MPI_Comm_idup(MPI_COMM_WORLD, &m.ctl, &reqs[1]));
    for (MPI_Request& r : reqs)
        SS_CHECK(mpi::wait_for(r, timeout_seconds),
                 "mpi backend: rank " << m.rank << " waited " << timeout_seconds
                                      << " s for the other ranks to start the mpi backend (MPI_Comm_idup); "
                                         "does every process of the job call run_mpi?");
    m.watch = std::make_unique<mpi::Watch>(m.ctl, m.rank, m.world, timeout_seconds);
    m.pt.comm = m.p2p;
    m.pt.rank = m.rank;
    Group world{"world", {}};
    for (int r = 0; r < m.world; ++r) world.ranks.push_back(r);
    prepare({world});
}

MpiBackend::~MpiBackend() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;  // too late to free anything; the process is ending
    Impl& m = *impl_;
    m.watch.reset();
    m.pt.release();  // the sends in flight complete in the background
    for (auto& g : m.groups)
        if (g.comm != MPI_COMM_NULL) MPI_Comm_free(&g.comm);
    if (m.p2p != MPI_COMM_NULL) MPI_Comm_free(&m.p2p);
    if (m.ctl != MPI_COMM_NULL) MPI_Comm_free(&m.ctl);
}

int MpiBackend::rank() const { return impl_->rank; }
int MpiBackend::world_size() const { return impl_->world; }

bool MpiBackend::prepared(const Group& group) const { return impl_->prepared_index.count(group.ranks) > 0; }

void MpiBackend::prepare(const std::vector<Group>& groups) {
    Impl& m = *impl_;
    // 1. Check the groups, and find the rank lists not prepared yet.
    const std::vector<const Group*> fresh = mpi::fresh_groups(groups, m.world, m.prepared_index, "MpiBackend::prepare");

    // 2. MPI_Comm_split is collective over the world and cannot time out, so first
    //    check (with a timeout) that every rank is here with the same list:
    //    max(h) == h and max(~h) == ~h on every rank iff all the h are equal.
    const uint64_t h = mpi::hash_groups(groups);
    uint64_t both[2] = {h, ~h};
    MPI_Request req;
    SS_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, both, 2, MPI_UINT64_T, MPI_MAX, m.p2p, &req));
    WaitInfo info;
    info.op = "prepare";
    Group world_group{"world", {}};
    for (int r = 0; r < m.world; ++r) world_group.ranks.push_back(r);
    info.group = &world_group;
    info.seq = m.prepares++;
    m.watch->wait([&] { return test(req); }, info);
    SS_CHECK(both[0] == h && both[1] == ~h,
             "MpiBackend::prepare: the ranks passed different lists of groups (rank "
                 << m.rank << " passed " << groups.size()
                 << "); every rank must prepare the same groups in the same order, e.g. mesh_groups(mesh)");

    // 3. One MPI_Comm_split per batch of groups that share no rank (mpi::split_batches):
    //    color = my group's place in the batch, key = my index in it.
    for (const mpi::SplitBatch& b : mpi::split_batches(fresh, m.world, m.rank)) {
        MPI_Comm comm = MPI_COMM_NULL;
        SS_MPI_CHECK(MPI_Comm_split(m.p2p, b.color < 0 ? MPI_UNDEFINED : b.color, b.key, &comm));
        for (size_t k = b.first; k < b.end; ++k) {
            m.prepared_index[fresh[k]->ranks] = int(m.groups.size());
            Impl::GroupComm gc;
            if (b.color == int(k - b.first)) {
                gc.comm = comm;
                gc.me = b.key;
                int size = 0;
                SS_MPI_CHECK(MPI_Comm_size(comm, &size));
                SS_CHECK(size == fresh[k]->size(), "MpiBackend::prepare: the communicator for "
                                                       << ranks_str(fresh[k]->ranks) << " has " << size << " ranks");
            }
            m.groups.push_back(gc);
        }
    }
}

// ---- the calls ---------------------------------------------------------------------

namespace {

// Finds the group's communicator and describes the call for the Watch.
struct Call {
    MPI_Comm comm;
    int n;  // group size
    WaitInfo info;
};

Call begin_call(MpiBackend::Impl& m, const char* op, const Group& group, const Label& label, size_t count,
                DType dt) {
    auto it = m.prepared_index.find(group.ranks);
    SS_CHECK(it != m.prepared_index.end(),
             describe_call(op, group, label)
                 << ": this group has no MPI communicator. MPI makes communicators collectively over the "
                    "whole world, so every group must be prepared up front, on every rank: pass it to run_mpi "
                    "(run_mpi(body, opts, mesh_groups(mesh))) or MpiBackend::prepare()");
    auto& g = m.groups[it->second];
    SS_CHECK(g.comm != MPI_COMM_NULL, describe_call(op, group, label) << ": rank " << m.rank << " is not a member");
    SS_CHECK(count <= size_t(INT_MAX), describe_call(op, group, label)
                                           << ": " << count << " elements is more than MPI's int count allows ("
                                           << INT_MAX << "); split the call");
    Call c{g.comm, group.size(), {}};
    c.info.op = op;
    c.info.group = &group;
    c.info.label = &label;
    c.info.count = count;
    c.info.dt = dt;
    c.info.group_index = it->second;
    c.info.seq = g.calls++;
    return c;
}

void wait(MpiBackend::Impl& m, MPI_Request& req, const WaitInfo& info) {
    m.watch->wait([&] { return test(req); }, info);
}

// A count of 0 moves nothing but still meets the group.
void meet(MpiBackend::Impl& m, const Call& c) {
    MPI_Request req;
    SS_MPI_CHECK(MPI_Ibarrier(c.comm, &req));
    wait(m, req, c.info);
}

}  // namespace

void MpiBackend::all_reduce(void* buf, size_t count, DType dt, const Group& group, ReduceOp op,
                            const Label& label) {
    Impl& m = *impl_;
    Call c = begin_call(m, "all_reduce", group, label, count, dt);
    c.info.reduce = reduce_op_name(op);
    if (count == 0) return meet(m, c);
    // fp32 in place; bf16 through an fp32 copy, rounded once at the end.
    float* x = dt == DType::f32 ? static_cast<float*>(buf) : grow(m.scratch_a, count);
    if (dt == DType::bf16) reduce::widen_bf16(x, static_cast<const uint16_t*>(buf), count);
    MPI_Request req;
    SS_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, x, int(count), MPI_FLOAT, MPI_SUM, c.comm, &req));
    wait(m, req, c.info);
    const float divisor = op == ReduceOp::avg ? float(c.n) : 1.0f;
    if (dt == DType::bf16)
        reduce::narrow_to_bf16(static_cast<uint16_t*>(buf), x, count, divisor);
    else if (op == ReduceOp::avg)
        reduce::divide(x, count, divisor);
}

void MpiBackend::reduce_scatter(const void* send, void* recv, size_t count_per_rank, DType dt,
                                const Group& group, ReduceOp op, const Label& label) {
    Impl& m = *impl_;
    Call c = begin_call(m, "reduce_scatter", group, label, count_per_rank, dt);
    c.info.reduce = reduce_op_name(op);
    if (count_per_rank == 0) return meet(m, c);
    const size_t total = size_t(c.n) * count_per_rank;
    const float* in = static_cast<const float*>(send);
    if (dt == DType::bf16) {
        float* wide = grow(m.scratch_a, total);
        reduce::widen_bf16(wide, static_cast<const uint16_t*>(send), total);
        in = wide;
    }
    // MPI forbids recv inside send (Comm allows recv = my block of send), and bf16
    // needs an fp32 result: those two cases reduce into a scratch buffer.
    const bool direct = dt == DType::f32 && (static_cast<const char*>(recv) + count_per_rank * 4 <=
                                                 static_cast<const char*>(send) ||
                                             static_cast<const char*>(send) + total * 4 <=
                                                 static_cast<const char*>(recv));
    float* out = direct ? static_cast<float*>(recv) : grow(m.scratch_b, count_per_rank);
    MPI_Request req;
    SS_MPI_CHECK(MPI_Ireduce_scatter_block(in, out, int(count_per_rank), MPI_FLOAT, MPI_SUM, c.comm, &req));
    wait(m, req, c.info);
    const float divisor = op == ReduceOp::avg ? float(c.n) : 1.0f;
    if (dt == DType::bf16) {
        reduce::narrow_to_bf16(static_cast<uint16_t*>(recv), out, count_per_rank, divisor);
        return;
    }
    if (op == ReduceOp::avg) reduce::divide(out, count_per_rank, divisor);
    if (!direct) std::memcpy(recv, out, count_per_rank * 4);
}

void MpiBackend::all_gather(const void* send, void* recv, size_t count_per_rank, DType dt, const Group& group,
                            const Label& label) {
    Impl& m = *impl_;
    Call c = begin_call(m, "all_gather", group, label, count_per_rank, dt);
    if (count_per_rank == 0) return meet(m, c);
    const int me = group.index_of(m.rank);
    const bool in_place = send == static_cast<const char*>(recv) + me * count_per_rank * dtype_size(dt);
    const MPI_Datatype type = mpi::datatype(dt);
    MPI_Request req;
    SS_MPI_CHECK(MPI_Iallgather(in_place ? MPI_IN_PLACE : send, int(count_per_rank), type, recv,
                                int(count_per_rank), type, c.comm, &req));
    wait(m, req, c.info);
}

void MpiBackend::all_to_all(const void* send, void* recv, size_t count_per_rank, DType dt, const Group& group,
                            const Label& label) {
    Impl& m = *impl_;
    Call c = begin_call(m, "all_to_all", group, label, count_per_rank, dt);
    if (count_per_rank == 0) return meet(m, c);
    const MPI_Datatype type = mpi::datatype(dt);
    MPI_Request req;
    SS_MPI_CHECK(MPI_Ialltoall(send, int(count_per_rank), type, recv, int(count_per_rank), type, c.comm, &req));
    wait(m, req, c.info);
}

void MpiBackend::broadcast(void* buf, size_t count, DType dt, int root_index, const Group& group,
                           const Label& label) {
    Impl& m = *impl_;
    Call c = begin_call(m, "broadcast", group, label, count, dt);
    c.info.root = root_index;
    if (count == 0) return meet(m, c);
    MPI_Request req;
    SS_MPI_CHECK(MPI_Ibcast(buf, int(count), mpi::datatype(dt), root_index, c.comm, &req));
    wait(m, req, c.info);
}

void MpiBackend::barrier(const Group& group, const Label& label) {
    Impl& m = *impl_;
    Call c = begin_call(m, "barrier", group, label, 0, DType::f32);
    meet(m, c);
}

// An injected hang: sleep, answering nobody (not even the side channel's "where
// are you?"), as a rank stuck in its own code would. The rank that times out
// waiting for this one calls MPI_Abort, which ends this process too.
void MpiBackend::stall(const std::string& why) {
    const double backstop = stall_backstop_seconds(impl_->watch->timeout_seconds());
    std::this_thread::sleep_for(std::chrono::duration<double>(backstop));
    SS_FAIL(why << ": still stalled after " << backstop << " s and no other rank timed out waiting for it");
}

// ---- point to point ------------------------------------------------------------------

void MpiBackend::send(const void* buf, size_t count, DType dt, int peer, const std::string& axis,
                      const Label& label) {
    Impl& m = *impl_;
    mpi::PendingSend& s = m.pt.add(count, dt, peer, axis, label);  // mpi_shared.cpp
    std::memcpy(s.data.data(), buf, s.data.size());
    m.pt.post();
}

void MpiBackend::recv(void* buf, size_t count, DType dt, int peer, const std::string& axis, const Label& label) {
    Impl& m = *impl_;
    MPI_Message msg = m.pt.probe(*m.watch, peer, count, dt, axis, label);
    SS_MPI_CHECK(MPI_Mrecv(buf, int(count), mpi::datatype(dt), &msg, MPI_STATUS_IGNORE));
}

// ---- the end of a run ------------------------------------------------------------------

void MpiBackend::finish() {
    Impl& m = *impl_;
    // 1. Every send has been received (a send nobody receives is a bug: say so).
    m.pt.complete(*m.watch);
    // 2. Tell the others how many calls I made on each group, and wait for theirs.
    std::vector<uint64_t> calls;
    for (const auto& g : m.groups) calls.push_back(g.calls);
    m.watch->finish(calls);
}

}  // namespace ss
