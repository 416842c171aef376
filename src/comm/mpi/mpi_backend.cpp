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
#include <climits>
#include <cstring>

#include "comm/mpi/mpi_session.h"
#include "comm/reduce_kernels.h"
#include "core/check.h"

namespace ss {

using mpi::WaitInfo;

namespace {

const mpi::BackendNames kNames{"mpi", "run_mpi", "MpiBackend", "MPI", ""};

float* grow(std::vector<float>& v, size_t n) {
    if (v.size() < n) v.resize(n);
    return v.data();
}

}  // namespace

/// One process's MPI state: its session (mpi_session.h) and a communicator per group.
struct MpiBackend::Impl {
    explicit Impl(double timeout_seconds) : session(kNames, timeout_seconds) {}

    mpi::Session session;         ///< rank, world, send / recv, the Watch, the prepared groups
    std::vector<MPI_Comm> comms;  ///< by prepared index: the group's communicator (rank i = ranks[i]),
                                  ///< MPI_COMM_NULL where I am not a member
    std::vector<float> scratch_a;  ///< fp32 work buffers for bf16 reductions
    std::vector<float> scratch_b;  ///< and for reduce_scatter's result
};

// ---- setting up: the session, and a communicator per group ---------------------------

MpiBackend::MpiBackend(double timeout_seconds) : impl_(std::make_unique<Impl>(timeout_seconds)) {
    prepare({impl_->session.world_group()});
}

MpiBackend::~MpiBackend() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;  // too late to free anything; the process is ending
    for (MPI_Comm& c : impl_->comms)
        if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
}  // then the session frees its copies of the world

int MpiBackend::rank() const { return impl_->session.rank; }
int MpiBackend::world_size() const { return impl_->session.world; }

bool MpiBackend::prepared(const Group& group) const { return impl_->session.prepared(group); }

void MpiBackend::prepare(const std::vector<Group>& groups) {
    Impl& m = *impl_;
    mpi::Session& s = m.session;
    // 1, 2. Check the groups, and that every rank passes the same list (mpi_session.cpp).
    const std::vector<const Group*> fresh = s.agree(groups);

    // 3. One MPI_Comm_split per batch of groups that share no rank (mpi::split_batches):
    //    color = my group's place in the batch, key = my index in it.
    for (const mpi::SplitBatch& b : mpi::split_batches(fresh, s.world, s.rank)) {
        MPI_Comm comm = MPI_COMM_NULL;
        SS_MPI_CHECK(MPI_Comm_split(s.p2p, b.color < 0 ? MPI_UNDEFINED : b.color, b.key, &comm));
        for (size_t k = b.first; k < b.end; ++k) {
            const bool mine = b.color == int(k - b.first);
            s.add(*fresh[k], mine ? b.key : -1);
            m.comms.push_back(mine ? comm : MPI_COMM_NULL);
            if (!mine) continue;
            int size = 0;
            SS_MPI_CHECK(MPI_Comm_size(comm, &size));
            SS_CHECK(size == fresh[k]->size(), "MpiBackend::prepare: the communicator for "
                                                   << ranks_str(fresh[k]->ranks) << " has " << size << " ranks");
        }
    }
}

// ---- the calls ---------------------------------------------------------------------

namespace {

// Finds the group's communicator and describes the call for the Watch.
struct OpenCall {
    MPI_Comm comm;
    int n;  // group size
    WaitInfo info;
};

OpenCall begin_call(MpiBackend::Impl& m, const char* op, const Group& group, const Label& label, size_t count,
                DType dt, const char* reduce = nullptr) {
    OpenCall c{MPI_COMM_NULL, group.size(), {}};
    const int index = m.session.begin_call(c.info, op, group, label, count, dt, reduce);  // mpi_session.cpp
    SS_CHECK(count <= size_t(INT_MAX), describe_call(op, group, label)
                                           << ": " << count << " elements is more than MPI's int count allows ("
                                           << INT_MAX << "); split the call");
    c.comm = m.comms[size_t(index)];
    return c;
}

void wait(MpiBackend::Impl& m, MPI_Request& req, const WaitInfo& info) {
    m.session.watch->wait([&] { return mpi::test(req); }, info);
}

// A count of 0 moves nothing but still meets the group.
void meet(MpiBackend::Impl& m, const OpenCall& c) {
    MPI_Request req;
    SS_MPI_CHECK(MPI_Ibarrier(c.comm, &req));
    wait(m, req, c.info);
}

}  // namespace

void MpiBackend::all_reduce(void* buf, size_t count, DType dt, const Group& group, ReduceOp op,
                            const Label& label) {
    Impl& m = *impl_;
    OpenCall c = begin_call(m, "all_reduce", group, label, count, dt, reduce_op_name(op));
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
    OpenCall c = begin_call(m, "reduce_scatter", group, label, count_per_rank, dt, reduce_op_name(op));
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
    OpenCall c = begin_call(m, "all_gather", group, label, count_per_rank, dt);
    if (count_per_rank == 0) return meet(m, c);
    const int me = group.index_of(m.session.rank);
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
    OpenCall c = begin_call(m, "all_to_all", group, label, count_per_rank, dt);
    if (count_per_rank == 0) return meet(m, c);
    const MPI_Datatype type = mpi::datatype(dt);
    MPI_Request req;
    SS_MPI_CHECK(MPI_Ialltoall(send, int(count_per_rank), type, recv, int(count_per_rank), type, c.comm, &req));
    wait(m, req, c.info);
}

void MpiBackend::broadcast(void* buf, size_t count, DType dt, int root_index, const Group& group,
                           const Label& label) {
    Impl& m = *impl_;
    OpenCall c = begin_call(m, "broadcast", group, label, count, dt);
    c.info.root = root_index;
    if (count == 0) return meet(m, c);
    MPI_Request req;
    SS_MPI_CHECK(MPI_Ibcast(buf, int(count), mpi::datatype(dt), root_index, c.comm, &req));
    wait(m, req, c.info);
}

void MpiBackend::barrier(const Group& group, const Label& label) {
    Impl& m = *impl_;
    OpenCall c = begin_call(m, "barrier", group, label, 0, DType::f32);
    meet(m, c);
}

// An injected hang (mpi_session.cpp): the rank that times out waiting for this
// one calls MPI_Abort, which ends this process too.
void MpiBackend::stall(const std::string& why) { impl_->session.stall(why); }

// ---- point to point ------------------------------------------------------------------

void MpiBackend::send(const void* buf, size_t count, DType dt, int peer, const std::string& axis,
                      const Label& label) {
    mpi::PointToPoint& pt = impl_->session.pt;
    mpi::PendingSend& s = pt.add(count, dt, peer, axis, label);  // mpi_p2p.cpp
    std::memcpy(s.data.data(), buf, s.data.size());
    pt.post();
}

void MpiBackend::recv(void* buf, size_t count, DType dt, int peer, const std::string& axis, const Label& label) {
    mpi::Session& s = impl_->session;
    MPI_Message msg = s.pt.probe(*s.watch, peer, count, dt, axis, label);
    SS_MPI_CHECK(MPI_Mrecv(buf, int(count), mpi::datatype(dt), &msg, MPI_STATUS_IGNORE));
}

// ---- the end of a run ------------------------------------------------------------------

void MpiBackend::finish() { impl_->session.finish(); }

}  // namespace ss
