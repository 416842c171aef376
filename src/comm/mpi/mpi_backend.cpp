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
// Every collective is written once, in two halves, and both forms use them:
//
//     start half (post)                          finish half (MpiRequest::wait)
//     count it on its group, widen bf16 to an    poll MPI_Test through the Watch (mpi_watch.cpp),
//     fp32 copy the request owns, MPI_I*(...)    which times out with a report; then round bf16
//                                                once, divide for avg, copy out of scratch
//
//     blocking  all_reduce(...)        = post, then wait at once
//     started   start(Call) -> request = post; Comm::wait(handle) runs the finish half later
//
// so a started call makes the same MPI calls on the same data as the blocking
// one, and its bits are the same. Its scratch (the fp32 copy of a bf16
// reduction, reduce_scatter's fp32 result) belongs to the request, never to the
// backend, so a later call cannot overwrite it while it is in flight. A count
// of 0 still synchronises the group (MPI may return at once from a 0-element
// collective, so it becomes a barrier).
//
// Order. MPI requires the collectives on one communicator to be started in the
// same order on every member. They are: every rank issues its calls (blocking
// or started) in program order, and the post is made when the call is issued.
// Started calls may be waited for in any order; on one communicator the tests
// wait in issue order, across communicators in any order.
//
// Progress, honestly. There is no progress thread (the process is
// MPI_THREAD_FUNNELED: only the rank's thread may call MPI). Open MPI moves a
// non-blocking collective on mostly inside MPI calls: at the post, in any later
// MPI call of the rank (another call's post, a send, the Watch's polls) and in
// the wait. A call whose data fits one round of small messages may be done by
// the time the rank waits; a large one, whose algorithm has several rounds,
// advances only when the rank enters MPI, so while the rank computes it
// waits. So overlap here is partial: a started call hides the peers' arrival
// (the wait starts when the last one came, not when this rank did) and
// whatever MPI does in the rank's other calls, not a whole transfer. The
// trace shows it: a started call's exposed_us is the time the rank still
// spent in wait().
//
// recv stays deferred to wait() (Backend's default). It could be posted early
// (an MPI_Irecv cannot deadlock), but mpi_p2p.cpp receives by probe: the tag
// carries the sender's dtype and the probe checks count and dtype before the
// message is taken, which an MPI_Irecv posted for one dtype's tag cannot do (a
// mismatched message would never match, and the error would be a timeout). A
// send already returns at once (a copy and an MPI_Isend), so its start is the
// blocking call.
//
// A call that cannot finish. A started MPI collective can be neither cancelled
// nor freed while it runs: MPI keeps writing its buffers. So:
//  - a wait that fails (timeout, desync) marks the backend broken and throws
//    the Watch's report, as the blocking form always has; run_mpi prints it and
//    aborts the job. Any later wait or post on the broken backend ends the job
//    at once with that report (abort_world) instead of calling MPI again, so
//    nothing progresses the stuck call into buffers the unwinding has freed.
//  - a rank leaving by an exception (rank_failing) still waits for its calls in
//    flight, through the Watch: CommHandle's destructor and ~Comm do. They
//    usually finish at once, because the other ranks issued the same calls. If
//    one cannot, its wait ends the job right there (abort_world), before the
//    unwinding frees what MPI still writes. A started receive is deferred to its
//    wait (backend.cpp, DeferredRecv): nothing is posted, so a dropped one is
//    not run at all (Request::drop).
//  - a request destroyed before it finished (never waited) is waited for by its
//    destructor, through the Watch, and ends the job the same way if it fails.
#include <climits>
#include <cstring>

#include "comm/mpi/mpi_session.h"
#include "comm/reduce_kernels.h"
#include "core/check.h"

namespace ss {

namespace {

const mpi::BackendNames kNames{"mpi", "run_mpi", "MpiBackend", "MPI", ""};

}  // namespace

/// One process's MPI state: its session (mpi_session.h), a communicator per
/// group, and what is known about calls that could not finish.
struct MpiBackend::Impl {
    explicit Impl(double timeout_seconds) : session(kNames, timeout_seconds) {}

    mpi::Session session;         ///< rank, world, send / recv, the Watch, the prepared groups
    std::vector<MPI_Comm> comms;  ///< by prepared index: the group's communicator (rank i = ranks[i]),
                                  ///< MPI_COMM_NULL where I am not a member
    std::string broken;           ///< the report of the first wait that failed ("" while none has)
    bool failing = false;         ///< rank_failing(): the rank is leaving by an exception
    std::vector<std::vector<float>> stuck;  ///< scratch of failed calls, which MPI may still write: kept
                                            ///< until the job ends (it ends soon: run_mpi aborts it)
};

// ---- setting up: the session, and a communicator per group ---------------------------

MpiBackend::MpiBackend(double timeout_seconds) : impl_(std::make_unique<Impl>(timeout_seconds)) {
    prepare({impl_->session.world_group()});
}

MpiBackend::~MpiBackend() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;  // too late to free anything; the process is ending
    if (!impl_->broken.empty()) {
        // A collective is stuck in MPI (its wait failed) and run_mpi is about to
        // abort the job: leave its communicators and scratch as they are, on
        // purpose, rather than free what MPI may still write.
        (void)impl_.release();
        return;
    }
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

// ---- the calls: a start half (post) and a finish half (MpiRequest::wait) ------------

namespace {

// What a failing rank adds to the report of a call it could not finish.
std::string leaving_note(int rank) {
    return " (rank " + std::to_string(rank) +
           " was leaving its work by an exception with this call in flight; an MPI collective cannot be "
           "cancelled, so the job ends here)";
}

// One collective posted to MPI, and what is left to do when it completes.
class MpiRequest final : public Request {
public:
    MpiRequest(MpiBackend::Impl& m, const Call& call) : m_(m), call_(call) {}
    ~MpiRequest() override;
    MpiRequest(const MpiRequest&) = delete;
    MpiRequest& operator=(const MpiRequest&) = delete;

    void post();           // the start half: bookkeeping, scratch, the MPI_I* call
    void wait() override;  // the finish half: the Watch, then the copy-out

private:
    void post_all_reduce();
    void post_reduce_scatter();
    void post_all_gather();
    void post_all_to_all();
    void post_broadcast();
    void finish_data();  // after MPI completed: round bf16, divide for avg, copy out

    MpiBackend::Impl& m_;
    Call call_;              // a copy: info_ points into its group and label
    mpi::WaitInfo info_;     // how the Watch names this call (mpi_detail.h)
    MPI_Comm comm_ = MPI_COMM_NULL;
    MPI_Request req_ = MPI_REQUEST_NULL;  // MPI_REQUEST_NULL once completed (MPI_Test sets it)
    bool meet_only_ = false;  // count 0 (or a barrier): an MPI_Ibarrier, nothing to copy
    bool done_ = false;       // finished and copied out
    bool failed_ = false;     // its wait failed: MPI still owns its scratch and the caller's buffers
    std::vector<float> wide_;  // bf16: the fp32 copy MPI reduces (all_reduce in place; reduce_scatter's input)
    std::vector<float> out_;   // reduce_scatter: the fp32 result when it cannot be recv itself
};

void MpiRequest::post() {
    if (!m_.broken.empty()) mpi::abort_world(m_.broken);  // a collective is stuck: MPI is no longer usable
    const char* op = call_op_name(call_.op);
    const bool reduces = call_.op == CallOp::all_reduce || call_.op == CallOp::reduce_scatter;
    const int index = m_.session.begin_call(info_, op, call_.group, call_.label, call_.count, call_.dt,
                                            reduces ? reduce_op_name(call_.reduce) : nullptr);  // mpi_session.cpp
    SS_CHECK(call_.count <= size_t(INT_MAX), describe_call(op, call_.group, call_.label)
                                                 << ": " << call_.count << " elements is more than MPI's int count allows ("
                                                 << INT_MAX << "); split the call");
    comm_ = m_.comms[size_t(index)];
    if (call_.op == CallOp::broadcast) info_.root = call_.root;
    started = std::chrono::steady_clock::now();
    meet_only_ = call_.count == 0 || call_.op == CallOp::barrier;
    if (meet_only_) {  // moves nothing but still meets the group
        SS_MPI_CHECK(MPI_Ibarrier(comm_, &req_));
        return;
    }
    switch (call_.op) {
        case CallOp::all_reduce: post_all_reduce(); break;
        case CallOp::reduce_scatter: post_reduce_scatter(); break;
        case CallOp::all_gather: post_all_gather(); break;
        case CallOp::all_to_all: post_all_to_all(); break;
        case CallOp::broadcast: post_broadcast(); break;
        default: SS_FAIL("mpi backend: " << op << " is not a collective");
    }
}

// fp32 in place; bf16 through an fp32 copy, rounded once at the end.
void MpiRequest::post_all_reduce() {
    float* x = static_cast<float*>(call_.recv);
    if (call_.dt == DType::bf16) {
        wide_.resize(call_.count);
        reduce::widen_bf16(wide_.data(), static_cast<const uint16_t*>(call_.recv), call_.count);
        x = wide_.data();
    }
    SS_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, x, int(call_.count), MPI_FLOAT, MPI_SUM, comm_, &req_));
}

void MpiRequest::post_reduce_scatter() {
    const size_t count = call_.count, total = size_t(call_.group.size()) * count;
    const float* in = static_cast<const float*>(call_.send);
    if (call_.dt == DType::bf16) {
        wide_.resize(total);
        reduce::widen_bf16(wide_.data(), static_cast<const uint16_t*>(call_.send), total);
        in = wide_.data();
    }
    // MPI forbids recv inside send (Comm allows recv = my block of send), and bf16
    // needs an fp32 result: those two cases reduce into out_.
    const char* send = static_cast<const char*>(call_.send);
    const char* recv = static_cast<const char*>(call_.recv);
    const bool direct = call_.dt == DType::f32 && (recv + count * 4 <= send || send + total * 4 <= recv);
    float* out = static_cast<float*>(call_.recv);
    if (!direct) {
        out_.resize(count);
        out = out_.data();
    }
    SS_MPI_CHECK(MPI_Ireduce_scatter_block(in, out, int(count), MPI_FLOAT, MPI_SUM, comm_, &req_));
}

void MpiRequest::post_all_gather() {
    const int me = call_.group.index_of(m_.session.rank);
    const bool in_place = call_.send == static_cast<const char*>(call_.recv) + me * call_.count * dtype_size(call_.dt);
    const MPI_Datatype type = mpi::datatype(call_.dt);
    SS_MPI_CHECK(MPI_Iallgather(in_place ? MPI_IN_PLACE : call_.send, int(call_.count), type, call_.recv,
                                int(call_.count), type, comm_, &req_));
}

void MpiRequest::post_all_to_all() {
    const MPI_Datatype type = mpi::datatype(call_.dt);
    SS_MPI_CHECK(MPI_Ialltoall(call_.send, int(call_.count), type, call_.recv, int(call_.count), type, comm_, &req_));
}

void MpiRequest::post_broadcast() {
    SS_MPI_CHECK(MPI_Ibcast(call_.recv, int(call_.count), mpi::datatype(call_.dt), call_.root, comm_, &req_));
}

void MpiRequest::wait() {
    if (done_) return;
    if (!m_.broken.empty()) mpi::abort_world(m_.broken);  // this call, or another, is stuck in MPI
    try {
        m_.session.watch->wait([&] { return mpi::test(req_); }, info_);
    } catch (const std::exception& e) {
        failed_ = true;
        m_.broken = e.what();
        if (m_.failing) mpi::abort_world(m_.broken + leaving_note(m_.session.rank));
        throw;  // to run_mpi, which prints it and aborts (the file comment)
    }
    finish_data();
    done_ = true;
    finished = std::chrono::steady_clock::now();
}

void MpiRequest::finish_data() {
    if (meet_only_) return;
    const size_t count = call_.count;
    const float divisor = call_.reduce == ReduceOp::avg ? float(call_.group.size()) : 1.0f;
    if (call_.op == CallOp::all_reduce) {
        if (call_.dt == DType::bf16)
            reduce::narrow_to_bf16(static_cast<uint16_t*>(call_.recv), wide_.data(), count, divisor);
        else if (call_.reduce == ReduceOp::avg)
            reduce::divide(static_cast<float*>(call_.recv), count, divisor);
    } else if (call_.op == CallOp::reduce_scatter) {
        float* out = out_.empty() ? static_cast<float*>(call_.recv) : out_.data();
        if (call_.dt == DType::bf16) {
            reduce::narrow_to_bf16(static_cast<uint16_t*>(call_.recv), out, count, divisor);
            return;
        }
        if (call_.reduce == ReduceOp::avg) reduce::divide(out, count, divisor);
        if (!out_.empty()) std::memcpy(call_.recv, out, count * 4);
    }
}

MpiRequest::~MpiRequest() {
    if (req_ == MPI_REQUEST_NULL) return;  // completed, or never posted
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;  // too late to wait; the process is ending
    if (failed_) {  // its error is on its way to run_mpi's abort; MPI may still write the scratch
        m_.stuck.push_back(std::move(wide_));
        m_.stuck.push_back(std::move(out_));
        return;
    }
    // Never waited for: its buffers are about to go, so it must finish first.
    try {
        wait();
    } catch (const std::exception& e) {
        mpi::abort_world(e.what());
    }
}

// The blocking form: the same two halves, one after the other.
void run_now(MpiBackend::Impl& m, const Call& call) {
    MpiRequest r(m, call);
    r.post();
    r.wait();
}

}  // namespace

std::unique_ptr<Request> MpiBackend::start(const Call& call) {
    // send: a copy and an MPI_Isend, already returns at once; recv: deferred to
    // wait, where the probe checks the message (the file comment).
    if (call.op == CallOp::send || call.op == CallOp::recv) return Backend::start(call);
    auto r = std::make_unique<MpiRequest>(*impl_, call);
    r->post();
    return r;
}

void MpiBackend::rank_failing() { impl_->failing = true; }

void MpiBackend::all_reduce(void* buf, size_t count, DType dt, const Group& group, ReduceOp op,
                            const Label& label) {
    run_now(*impl_, Call{CallOp::all_reduce, nullptr, buf, count, dt, group, op, -1, -1, label});
}

void MpiBackend::reduce_scatter(const void* send, void* recv, size_t count_per_rank, DType dt,
                                const Group& group, ReduceOp op, const Label& label) {
    run_now(*impl_, Call{CallOp::reduce_scatter, send, recv, count_per_rank, dt, group, op, -1, -1, label});
}

void MpiBackend::all_gather(const void* send, void* recv, size_t count_per_rank, DType dt, const Group& group,
                            const Label& label) {
    run_now(*impl_, Call{CallOp::all_gather, send, recv, count_per_rank, dt, group, ReduceOp::sum, -1, -1, label});
}

void MpiBackend::all_to_all(const void* send, void* recv, size_t count_per_rank, DType dt, const Group& group,
                            const Label& label) {
    run_now(*impl_, Call{CallOp::all_to_all, send, recv, count_per_rank, dt, group, ReduceOp::sum, -1, -1, label});
}

void MpiBackend::broadcast(void* buf, size_t count, DType dt, int root_index, const Group& group,
                           const Label& label) {
    run_now(*impl_, Call{CallOp::broadcast, nullptr, buf, count, dt, group, ReduceOp::sum, root_index, -1, label});
}

void MpiBackend::barrier(const Group& group, const Label& label) {
    run_now(*impl_, Call{CallOp::barrier, nullptr, nullptr, 0, DType::f32, group, ReduceOp::sum, -1, -1, label});
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
