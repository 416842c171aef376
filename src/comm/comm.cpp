// comm.cpp — argument checks and tracing around the backend's collectives.
#include "comm/comm.h"

#include <algorithm>
#include <exception>
#include <cstdint>
#include <sstream>
#include <utility>

#include "comm/trace/trace.h"
#include "core/check.h"

namespace ss {

/// A started call: what it is, the backend's Request, and when it was issued.
struct PendingCall {
    Call call;                         ///< what was started
    std::unique_ptr<Request> request;  ///< the backend's side
    double issued_us = 0;              ///< Comm::now_us() at start_*
    double trace_issued_us = 0;        ///< the tracer's clock at start_* (when tracing)
    bool waited = false;               ///< wait() or wait_all() has taken it
    Backend* backend = nullptr;        ///< whose call it is (for a handle dropped unwaited)
};


std::string ranks_str(const std::vector<int>& ranks) {
    std::ostringstream os;
    os << "[";
    for (size_t i = 0; i < ranks.size(); ++i) os << (i ? "," : "") << ranks[i];
    os << "]";
    return os.str();
}

std::string describe_call(const char* op, const Group& group, const Label& label) {
    std::ostringstream os;
    os << op << " on " << (group.axis.empty() ? "?" : group.axis) << " group " << ranks_str(group.ranks)
       << " (" << label_str(label) << ")";
    return os.str();
}

Comm::Comm(int rank, int world_size, std::unique_ptr<Backend> backend, Tracer* tracer)
    : rank_(rank), world_size_(world_size), backend_(std::move(backend)), tracer_(tracer),
      origin_(std::chrono::steady_clock::now()) {
    SS_CHECK(world_size >= 1, "Comm: world size " << world_size << " must be at least 1");
    SS_CHECK(rank >= 0 && rank < world_size, "Comm: rank " << rank << " is outside the world [0, " << world_size << ")");
    SS_CHECK(backend_ != nullptr, "Comm: no backend given");
}

Comm::~Comm() {
    // A call still in flight reads and writes the rank's buffers: let it end
    // (after a failure every wait ends at once) before anything is freed.
    for (auto& p : in_flight_) {
        try {
            p->request->drop();  // (a receive not started yet is left alone: Request::drop)
        } catch (...) {
        }
    }
}

Group Comm::world_group() const {
    Group g{"world", {}};
    for (int r = 0; r < world_size_; ++r) g.ranks.push_back(r);
    return g;
}

// ---- checks shared by every backend ----------------------------------------------

void Comm::check_group(const char* op, const Group& group) const {
    SS_CHECK(!group.ranks.empty(), op << " on " << group.axis << ": the group is empty");
    bool member = false;
    for (int r : group.ranks) {
        SS_CHECK(r >= 0 && r < world_size_, op << " on " << group.axis << " group " << ranks_str(group.ranks)
                                               << ": rank " << r << " is outside the world [0, " << world_size_ << ")");
        member |= (r == rank_);
    }
    SS_CHECK(member, op << " on " << group.axis << " group " << ranks_str(group.ranks) << ": rank " << rank_
                        << " called it but is not a member of the group");
    if (group.ranks.size() > 1) {
        std::vector<int> sorted = group.ranks;
        std::sort(sorted.begin(), sorted.end());
        auto dup = std::adjacent_find(sorted.begin(), sorted.end());
        SS_CHECK(dup == sorted.end(), op << " on " << group.axis << " group " << ranks_str(group.ranks)
                                         << ": rank " << *dup << " appears twice");
    }
}

void Comm::check_peer(const char* op, int peer) const {
    SS_CHECK(peer >= 0 && peer < world_size_,
             op << ": peer rank " << peer << " is outside the world [0, " << world_size_ << ")");
}

namespace {

void check_reducible(const char* op, DType dt) {
    SS_CHECK(dt == DType::f32 || dt == DType::bf16,
             op << ": reductions take fp32 or bf16, not " << dtype_name(dt));
}

void check_buffer(const char* op, const char* which, const void* p, size_t count) {
    SS_CHECK(p != nullptr || count == 0, op << ": " << which << " buffer is null but count is " << count);
}

// Do the byte ranges [a, a+na) and [b, b+nb) overlap?
bool overlap(const void* a, size_t na, const void* b, size_t nb) {
    auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
    return na && nb && pa < pb + nb && pb < pa + na;
}

}  // namespace

void Comm::trace(const char* op, const Group& group, size_t count, DType dt, const Label& label,
                 double start_us, double dur_us, double issued_us, double exposed_us, double gpu_seconds,
                 int peer) {
    TraceEvent ev;
    ev.kind = TraceEvent::Kind::collective;
    ev.tid = kCommLane;
    ev.name = op;
    ev.cat = "comm";
    ev.ts_us = start_us;
    ev.dur_us = dur_us;
    ev.issued_us = issued_us;
    ev.exposed_us = exposed_us;
    ev.axis = group.axis;
    ev.group = group.ranks;
    ev.count = count;
    ev.dtype = dtype_name(dt);
    ev.bytes = collective_bytes(op, count, dtype_size(dt), group.size());
    ev.label = label;
    ev.peer = peer;
    // The backend's own timing of the call on the device, where it has one (nccl's CUDA
    // events), as the caller read it right after the call ran: a started call is traced
    // when it is waited for, by which time later calls have overwritten last_gpu_seconds().
    if (gpu_seconds >= 0) ev.gpu_us = gpu_seconds * 1e6;
    tracer_->record(std::move(ev));
}

void Comm::run_hook(const char* op, const Group& group, const Label& label) {
    if (!next_call_hook_) return;
    auto hook = std::move(next_call_hook_);  // once: cleared before it runs (it may throw)
    next_call_hook_ = nullptr;
    hook(describe_call(op, group, label));
}

// ---- the collectives: check, call the backend, trace -------------------------------

void Comm::begin(const char* op, const Group& group, const Label& label) {
    run_hook(op, group, label);
    check_group(op, group);
}

namespace {

// all_gather and reduce_scatter: @p block (count_per_rank elements, mine) may sit
// in @p whole (n blocks) only at my index, in place; anywhere else they must not overlap.
void check_block_in(const char* op, const Group& group, const Label& label, int rank, const void* block,
                    const char* block_name, const void* whole, const char* whole_name, size_t count_per_rank,
                    DType dt) {
    const size_t bytes = count_per_rank * dtype_size(dt), n = group.size();
    const void* in_place = static_cast<const char*>(whole) + group.index_of(rank) * bytes;
    SS_CHECK(block == in_place || !overlap(block, bytes, whole, n * bytes),
             describe_call(op, group, label) << ": " << block_name << " overlaps " << whole_name
                                             << "; in place is allowed only with " << block_name << " = "
                                             << whole_name << " + my_index * count_per_rank");
}

}  // namespace

double Comm::now_us() const {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - origin_).count();
}

void Comm::add_interval(double start_us, double end_us) {
    intervals_.emplace_back(start_us, end_us);
    ++times_.calls;
}

CommTimes Comm::take_times() {
    // The union of the calls' intervals: two calls in flight at once count once.
    std::sort(intervals_.begin(), intervals_.end());
    double total = 0, lo = 0, hi = -1;
    for (const auto& [a, b] : intervals_) {
        if (a > hi) {
            if (hi > lo) total += hi - lo;
            lo = a;
            hi = b;
        } else {
            hi = std::max(hi, b);
        }
    }
    if (hi > lo) total += hi - lo;
    CommTimes t = times_;
    t.comm_s = total * 1e-6;
    intervals_.clear();
    times_ = CommTimes{};
    return t;
}

template <class Fn>
void Comm::timed(const char* op, const Group& group, size_t count, DType dt, const Label& label, Fn&& call,
                 int peer) {
    const double t0 = now_us();
    const double trace0 = tracer_ ? tracer_->now_us() : 0;
    call();
    const double dur = now_us() - t0;
    add_interval(t0, t0 + dur);
    times_.exposed_s += dur * 1e-6;  // a blocking call: the rank waits for all of it
    if (tracer_) trace(op, group, count, dt, label, trace0, dur, -1, dur, backend_->last_gpu_seconds(), peer);
}

// ---- the checks of every call, blocking or started -----------------------------------

void Comm::check(const Call& c) {
    const char* op = call_op_name(c.op);
    if (c.op == CallOp::send || c.op == CallOp::recv) {
        run_hook(op, c.group, c.label);
        check_peer(op, c.peer);
        check_buffer(op, "the", c.op == CallOp::send ? c.send : c.recv, c.count);
        return;
    }
    begin(op, c.group, c.label);
    switch (c.op) {
        case CallOp::all_reduce:
            check_reducible(op, c.dt);
            check_buffer(op, "the", c.recv, c.count);
            break;
        case CallOp::all_gather:
            check_buffer(op, "send", c.send, c.count);
            check_buffer(op, "recv", c.recv, c.count);
            check_block_in(op, c.group, c.label, rank_, c.send, "send", c.recv, "recv", c.count, c.dt);
            break;
        case CallOp::reduce_scatter:
            check_reducible(op, c.dt);
            check_buffer(op, "send", c.send, c.count);
            check_buffer(op, "recv", c.recv, c.count);
            check_block_in(op, c.group, c.label, rank_, c.recv, "recv", c.send, "send", c.count, c.dt);
            break;
        case CallOp::all_to_all: {
            check_buffer(op, "send", c.send, c.count);
            check_buffer(op, "recv", c.recv, c.count);
            const size_t bytes = c.group.size() * c.count * dtype_size(c.dt);
            SS_CHECK(!overlap(c.send, bytes, c.recv, bytes),
                     describe_call(op, c.group, c.label) << ": send and recv overlap; all_to_all cannot run in place");
            break;
        }
        case CallOp::broadcast:
            check_buffer(op, "the", c.recv, c.count);
            SS_CHECK(c.root >= 0 && c.root < c.group.size(),
                     describe_call(op, c.group, c.label)
                         << ": root index " << c.root << " is not an index into the group (0.." << c.group.size() - 1
                         << "); it is the root's position in group.ranks, not its global rank");
            break;
        default: break;
    }
}

// ---- the blocking calls: check, call the backend, trace ------------------------------

void Comm::all_reduce(void* buf, size_t count, DType dt, const Group& group, ReduceOp op, const Label& label) {
    Call c{CallOp::all_reduce, nullptr, buf, count, dt, group, op, -1, -1, label};
    check(c);
    timed("all_reduce", group, count, dt, label, [&] { backend_->all_reduce(buf, count, dt, group, op, label); });
}

void Comm::all_gather(const void* send, void* recv, size_t count_per_rank, DType dt, const Group& group,
                      const Label& label) {
    check(Call{CallOp::all_gather, send, recv, count_per_rank, dt, group, ReduceOp::sum, -1, -1, label});
    timed("all_gather", group, count_per_rank, dt, label,
          [&] { backend_->all_gather(send, recv, count_per_rank, dt, group, label); });
}

void Comm::reduce_scatter(const void* send, void* recv, size_t count_per_rank, DType dt, const Group& group,
                          ReduceOp op, const Label& label) {
    check(Call{CallOp::reduce_scatter, send, recv, count_per_rank, dt, group, op, -1, -1, label});
    timed("reduce_scatter", group, count_per_rank, dt, label,
          [&] { backend_->reduce_scatter(send, recv, count_per_rank, dt, group, op, label); });
}

void Comm::all_to_all(const void* send, void* recv, size_t count_per_rank, DType dt, const Group& group,
                      const Label& label) {
    check(Call{CallOp::all_to_all, send, recv, count_per_rank, dt, group, ReduceOp::sum, -1, -1, label});
    timed("all_to_all", group, count_per_rank, dt, label,
          [&] { backend_->all_to_all(send, recv, count_per_rank, dt, group, label); });
}

void Comm::broadcast(void* buf, size_t count, DType dt, int root_index, const Group& group, const Label& label) {
    check(Call{CallOp::broadcast, nullptr, buf, count, dt, group, ReduceOp::sum, root_index, -1, label});
    timed("broadcast", group, count, dt, label,
          [&] { backend_->broadcast(buf, count, dt, root_index, group, label); });
}

void Comm::send(const void* buf, size_t count, DType dt, int peer, const Label& label, const std::string& axis) {
    const Group pair{axis, {rank_, peer}};
    check(Call{CallOp::send, buf, nullptr, count, dt, pair, ReduceOp::sum, -1, peer, label});
    timed("send", pair, count, dt, label, [&] { backend_->send(buf, count, dt, peer, axis, label); }, peer);
}

void Comm::recv(void* buf, size_t count, DType dt, int peer, const Label& label, const std::string& axis) {
    const Group pair{axis, {peer, rank_}};
    check(Call{CallOp::recv, nullptr, buf, count, dt, pair, ReduceOp::sum, -1, peer, label});
    timed("recv", pair, count, dt, label, [&] { backend_->recv(buf, count, dt, peer, axis, label); }, peer);
}

void Comm::barrier(const Group& group, const Label& label) {
    begin("barrier", group, label);
    timed("barrier", group, 0, DType::f32, label, [&] { backend_->barrier(group, label); });
}

// ---- the started calls: check, Backend::start, and later wait ------------------------

CommHandle::CommHandle() = default;
// A handle dropped before its wait (its owner is being destroyed, or the rank is
// leaving by an exception) still lets the call finish, since the call reads and
// writes buffers that die next to the handle. Comm's wait_all records it later.
static void finish_dropped(PendingCall* p) {
    if (!p || p->waited) return;
    if (std::uncaught_exceptions() > 0) p->backend->rank_failing();  // nobody waits for this rank's next call
    try {
        p->request->drop();  // wait_all may still wait it (Request::drop)
    } catch (...) {
        // Its error reaches the rank through wait_all, or the run has failed already.
    }
}

CommHandle::~CommHandle() { finish_dropped(call_.get()); }
CommHandle::CommHandle(CommHandle&&) noexcept = default;
CommHandle& CommHandle::operator=(CommHandle&& o) noexcept {
    if (this != &o) {
        finish_dropped(call_.get());
        call_ = std::move(o.call_);
    }
    return *this;
}

CommHandle Comm::launch(Call c) {
    check(c);
    auto p = std::make_shared<PendingCall>();
    p->issued_us = now_us();
    p->trace_issued_us = tracer_ ? tracer_->now_us() : 0;
    p->call = std::move(c);
    p->backend = backend_.get();
    p->request = backend_->start(p->call);
    in_flight_.push_back(p);
    CommHandle h;
    h.call_ = std::move(p);
    return h;
}

CommHandle Comm::start_all_reduce(void* buf, size_t count, DType dt, const Group& group, ReduceOp op,
                                  const Label& label) {
    return launch(Call{CallOp::all_reduce, nullptr, buf, count, dt, group, op, -1, -1, label});
}

CommHandle Comm::start_all_gather(const void* send, void* recv, size_t count_per_rank, DType dt, const Group& group,
                                  const Label& label) {
    return launch(Call{CallOp::all_gather, send, recv, count_per_rank, dt, group, ReduceOp::sum, -1, -1, label});
}

CommHandle Comm::start_reduce_scatter(const void* send, void* recv, size_t count_per_rank, DType dt,
                                      const Group& group, ReduceOp op, const Label& label) {
    return launch(Call{CallOp::reduce_scatter, send, recv, count_per_rank, dt, group, op, -1, -1, label});
}

CommHandle Comm::start_all_to_all(const void* send, void* recv, size_t count_per_rank, DType dt, const Group& group,
                                  const Label& label) {
    return launch(Call{CallOp::all_to_all, send, recv, count_per_rank, dt, group, ReduceOp::sum, -1, -1, label});
}

CommHandle Comm::start_broadcast(void* buf, size_t count, DType dt, int root_index, const Group& group,
                                 const Label& label) {
    return launch(Call{CallOp::broadcast, nullptr, buf, count, dt, group, ReduceOp::sum, root_index, -1, label});
}

CommHandle Comm::start_send(const void* buf, size_t count, DType dt, int peer, const Label& label,
                            const std::string& axis) {
    return launch(Call{CallOp::send, buf, nullptr, count, dt, Group{axis, {rank_, peer}}, ReduceOp::sum, -1, peer,
                       label});
}

CommHandle Comm::start_recv(void* buf, size_t count, DType dt, int peer, const Label& label,
                            const std::string& axis) {
    return launch(Call{CallOp::recv, nullptr, buf, count, dt, Group{axis, {peer, rank_}}, ReduceOp::sum, -1, peer,
                       label});
}

void Comm::finish(PendingCall& p, double wait_start_us) {
    const double wait_end_us = now_us();
    // The backend's clock (steady_clock) in this Comm's microseconds.
    auto us = [&](std::chrono::steady_clock::time_point t) {
        return std::chrono::duration<double, std::micro>(t - origin_).count();
    };
    const double run0 = std::max(p.issued_us, us(p.request->started));
    const double run1 = std::max(run0, std::min(wait_end_us, us(p.request->finished)));
    add_interval(run0, run1);
    // Exposed: the part of the call's run the rank sat in its wait, so at most the call's
    // duration (trace-format.md). The wake-up after it finished is not the call's, and the
    // calls queued before it on its group were waited first (Comm::wait).
    const double exposed_us = std::max(0.0, std::min(wait_end_us, run1) - std::max(wait_start_us, run0));
    times_.exposed_s += exposed_us * 1e-6;
    if (!tracer_) return;
    // The tracer's clock differs from this Comm's by a constant: map through now.
    const double shift = tracer_->now_us() - wait_end_us;
    const Call& c = p.call;
    trace(call_op_name(c.op), c.group, c.count, c.dt, c.label, run0 + shift, run1 - run0, p.trace_issued_us,
          exposed_us, p.request->gpu_seconds, c.peer);
}

void Comm::wait(CommHandle& handle) {
    if (!handle.call_) return;
    std::shared_ptr<PendingCall> p = std::move(handle.call_);
    handle.call_ = nullptr;
    if (p->waited) return;  // wait_all() took it already
    p->waited = true;
    // A call runs after the calls issued before it on its group (backend.h, start): those
    // are waited first, so that the time this wait spends on them is counted as theirs.
    // (in_flight_ is in issue order; sends and receives are left to their own waits.)
    auto collective = [](const Call& c) { return c.op != CallOp::send && c.op != CallOp::recv; };
    while (collective(p->call)) {
        const auto mine = std::find(in_flight_.begin(), in_flight_.end(), p);
        if (mine == in_flight_.end()) break;  // (not in flight: nothing is known to be before it)
        auto earlier = std::find_if(in_flight_.begin(), mine, [&](const std::shared_ptr<PendingCall>& q) {
            return collective(q->call) && q->call.group.ranks == p->call.group.ranks;
        });
        if (earlier == mine) break;
        std::shared_ptr<PendingCall> q = *earlier;
        in_flight_.erase(earlier);
        q->waited = true;
        const double t0 = now_us();
        q->request->wait();  // throws its error, as waiting for this call would
        finish(*q, t0);
    }
    auto it = std::find(in_flight_.begin(), in_flight_.end(), p);
    if (it != in_flight_.end()) in_flight_.erase(it);
    const double t0 = now_us();
    p->request->wait();  // throws the call's error
    finish(*p, t0);
}

void Comm::wait_all() {
    while (!in_flight_.empty()) {
        std::shared_ptr<PendingCall> p = in_flight_.front();
        in_flight_.erase(in_flight_.begin());
        p->waited = true;
        const double t0 = now_us();
        p->request->wait();
        finish(*p, t0);
    }
}

}  // namespace ss
