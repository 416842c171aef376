// threads_p2p.cpp — send and recv in the threads backend.
//
// Each rank has an inbox (threads_world.h). send copies the data into a
// message and appends it to the receiver's inbox, so it never waits; recv
// takes the oldest message from that sender with the same key (p2p_key:
// payload, micro-batch, layer), waiting for it with the same timeout and
// failure reports as the collectives.
//
// Started (Comm::start_send, start_recv) without emulated links, neither needs
// a progress thread: a send only copies into the peer's inbox, a recv only
// waits for its sender. On one each would cost two thread switches for
// nothing, which an oversubscribed CPU pays in full (ring attention's passes,
// 8 ranks on 2 cores: 372 ms a step against 348 with every call blocking). So
// a started send runs at once, and a started recv runs at its wait, after the
// receives from the same peer issued before it: the progress thread's order.
// With emulated links both go to progress threads (threads_sync.cpp), since
// the link's time must pass beside the rank's compute.
//
// A started recv whose message has not come yet, with no earlier started recv
// from that peer still queued, is posted in the inbox instead (PostedRecv):
// the send finds it under the inbox's lock and copies its bytes straight into
// the receiver's buffer. That is one copy where a message takes two (into the
// message, out of it) and no allocation. Sends fill posted receives in the
// order they were started, and a send that finds none queues its message under
// the same lock, so a receive is posted only when no message of its kind is
// waiting: the order, and so the bits, are those of the queued form.
//
// A started send that finds a posted receive fills it, as a blocking one does,
// and returns finished. One that finds none lends its buffer: its message
// holds the sender's pointer (threads::Loan), not a copy, since the buffer is
// the call's until its wait (comm.h, "Asynchronous form"). The bytes are then
// copied once, by whoever comes first, under the receiver's inbox lock: the
// receiver takes them into its buffer (a started recv takes a message that is
// already there at once), or the sender's wait copies them into the message,
// which then waits as a queued one. So the sender never waits for its
// receiver, as before, and ring attention's K/V passes (every rank sends, then
// receives) cost one copy a hop where they took two, whichever rank comes first.
#include <cstring>
#include <sstream>
#include <thread>

#include "comm/threads/threads_backend.h"
#include "comm/threads/threads_world.h"
#include "core/check.h"

namespace ss {

namespace {
// The oldest message in @p box from @p peer with that p2p_key, or messages.end() (inbox lock held).
std::deque<threads::Message>::iterator find_message(threads::Inbox& box, int peer, int key) {
    for (auto it = box.messages.begin(); it != box.messages.end(); ++it)
        if (it->src == peer && p2p_key(it->label) == key) return it;
    return box.messages.end();
}
}  // namespace

// A receive started without emulated links: it runs when it is waited for, or
// when a later receive from the same peer (started or blocking) needs it out of
// the way first.
struct ThreadsBackend::StartedRecv {
    Call call;
    bool ran = false;   // taken from the queue and run (or failed: error)
    std::string error;  // what its run threw
    std::chrono::steady_clock::time_point started, finished;
};

class ThreadsBackend::StartedRecvRequest final : public Request {
public:
    StartedRecvRequest(ThreadsBackend& b, std::shared_ptr<StartedRecv> r) : backend_(b), recv_(std::move(r)) {}
    void wait() override {
        backend_.recv_started(recv_->call.peer, recv_.get());
        started = recv_->started;
        finished = recv_->finished;
    }

private:
    ThreadsBackend& backend_;
    std::shared_ptr<StartedRecv> recv_;
};

// A receive posted in this rank's inbox; the send fills it (threads_world.h).
// Destroyed unwaited (its rank is throwing), it takes itself out of the inbox,
// so no send writes into a buffer that may be gone.
class ThreadsBackend::PostedRecvRequest final : public Request {
public:
    PostedRecvRequest(ThreadsBackend& b, const Call& call) : backend_(b), call_(call) {}
    ~PostedRecvRequest() override {
        if (!waited_) backend_.unpost(posted_);
    }
    void wait() override {
        backend_.wait_posted(posted_, call_);  // throws on a failure, a timeout or a mismatch
        waited_ = true;
        finished = std::chrono::steady_clock::now();
    }
    threads::PostedRecv posted_;

private:
    ThreadsBackend& backend_;
    Call call_;
    bool waited_ = false;  // filled and waited for: no longer in the inbox
};

// A started send that lent its buffer (lend): waited for, or destroyed unwaited
// (its rank is throwing), it makes sure the bytes are out of the buffer.
class ThreadsBackend::LentSendRequest final : public Request {
public:
    LentSendRequest(ThreadsBackend& b, int peer, size_t bytes, std::shared_ptr<threads::Loan> loan)
        : backend_(b), peer_(peer), bytes_(bytes), loan_(std::move(loan)) {}
    ~LentSendRequest() override {
        if (!waited_) backend_.settle(peer_, *loan_, bytes_);
    }
    void wait() override {
        backend_.settle(peer_, *loan_, bytes_);
        waited_ = true;
        finished = loan_->copied;  // written under the inbox lock that settle took
    }

private:
    ThreadsBackend& backend_;
    int peer_;
    size_t bytes_;
    std::shared_ptr<threads::Loan> loan_;
    bool waited_ = false;
};

std::unique_ptr<Request> ThreadsBackend::start_p2p(const Call& call) {
    if (call.op == CallOp::send) return lend(call);
    std::deque<std::shared_ptr<StartedRecv>>& earlier = started_recvs_[call.peer];
    if (earlier.empty() && !world_.failed()) {
        threads::Inbox& box = world_.inbox(rank_);
        const int key = p2p_key(call.label);
        std::unique_lock<std::mutex> lock(box.mu);
        auto it = find_message(box, call.peer, key);
        if (it != box.messages.end() && it->count == call.count && it->dt == call.dt) {
            // Its message is here already: taken now (a lent one frees its sender's buffer).
            // Only this rank takes from its inbox, so recv_now finds the same message.
            lock.unlock();
            const auto t0 = std::chrono::steady_clock::now();
            recv_now(call.recv, call.count, call.dt, call.peer, call.group.axis, call.label);
            return finished_request(t0);
        }
        // A message that does not match is taken at the wait, as a queued receive, to report it there.
        if (it == box.messages.end()) {
            auto req = std::make_unique<PostedRecvRequest>(*this, call);
            req->started = std::chrono::steady_clock::now();
            threads::PostedRecv& p = req->posted_;
            p.src = call.peer;
            p.key = key;
            p.buf = call.recv;
            p.count = call.count;
            p.dt = call.dt;
            box.posted.push_back(&p);
            return req;
        }
    }
    auto r = std::make_shared<StartedRecv>();
    r->call = call;
    earlier.push_back(r);
    return std::make_unique<StartedRecvRequest>(*this, std::move(r));
}

void ThreadsBackend::recv_started(int peer, const StartedRecv* upto) {
    if (upto && upto->ran) {  // a later receive from the same peer ran it first
        if (!upto->error.empty()) throw Error(upto->error);
        return;
    }
    auto it = started_recvs_.find(peer);
    if (it == started_recvs_.end()) return;
    std::deque<std::shared_ptr<StartedRecv>>& q = it->second;
    while (!q.empty()) {
        std::shared_ptr<StartedRecv> r = std::move(q.front());
        q.pop_front();
        const Call& c = r->call;
        r->started = std::chrono::steady_clock::now();
        r->ran = true;
        try {
            recv_now(c.recv, c.count, c.dt, c.peer, c.group.axis, c.label);
        } catch (const Error& e) {
            r->error = e.what();  // for its own wait, if another's ran it
            throw;
        }
        r->finished = std::chrono::steady_clock::now();
        if (r.get() == upto) return;
    }
}

void ThreadsBackend::wait_posted(threads::PostedRecv& p, const Call& c) {
    const std::string what =
        "recv on " + c.group.axis + " from rank " + std::to_string(c.peer) + " (" + label_str(c.label) + ")";
    threads::Inbox& box = world_.inbox(rank_);
    std::unique_lock<std::mutex> lock(box.mu);
    wait_for_peer(lock, c.peer, what, [&] { return p.filled; }, [&] { take_posted(box, &p); });
    lock.unlock();
    if (p.unmatched.data) mismatch(p.unmatched, c.count, c.dt, what);
}

void ThreadsBackend::unpost(threads::PostedRecv& p) {
    threads::Inbox& box = world_.inbox(rank_);
    std::lock_guard<std::mutex> lock(box.mu);
    take_posted(box, &p);
}

void ThreadsBackend::take_posted(threads::Inbox& box, const threads::PostedRecv* p) {
    for (auto it = box.posted.begin(); it != box.posted.end(); ++it)
        if (*it == p) {
            box.posted.erase(it);
            return;
        }
}

void ThreadsBackend::send(const void* buf, size_t count, DType dt, int peer, const std::string& axis,
                          const Label& label) {
    drain(1, {rank_, peer});
    const std::string what = "send on " + axis + " to rank " + std::to_string(peer) + " (" + label_str(label) + ")";
    if (world_.failed()) stop(what);
    const size_t bytes = count * dtype_size(dt);
    const int key = p2p_key(label);
    threads::Inbox& box = world_.inbox(peer);
    {
        std::lock_guard<std::mutex> lock(box.mu);
        if (threads::PostedRecv* p = take_posted_from_me(box, key))
            return fill(box, *p, buf, count, dt, axis, label, nullptr);
    }
    // No receive waits for it: a message, copied outside the lock. Emulated links:
    // the bytes take the link's time to cross; this side's wire is busy until then
    // (a started send spends it on its progress thread).
    // A link too slow for the timeout fails the run at once, as a collective's does (emulate_link):
    // on a progress thread (a started send) a plain throw would stay its own, and the receiver's
    // timeout would be the first failure reported, as a desync.
    double t = 0;
    try {
        t = world_.link_seconds("send", bytes, {rank_, peer});
    } catch (const Error& e) {
        raise(e.what());
    }
    threads::Message m = message(buf, count, dt, axis, label, t);
    const auto arrives = m.arrives;
    {
        std::lock_guard<std::mutex> lock(box.mu);
        if (threads::PostedRecv* p = take_posted_from_me(box, key))  // posted while the copy was made
            return fill(box, *p, buf, count, dt, axis, label, &m);
        box.messages.push_back(std::move(m));
        box.cv.notify_all();
    }
    if (t > 0) std::this_thread::sleep_until(arrives);
}

threads::PostedRecv* ThreadsBackend::take_posted_from_me(threads::Inbox& box, int key) {
    for (auto it = box.posted.begin(); it != box.posted.end(); ++it)
        if ((*it)->src == rank_ && (*it)->key == key) {
            threads::PostedRecv* p = *it;
            box.posted.erase(it);
            return p;
        }
    return nullptr;
}

void ThreadsBackend::fill(threads::Inbox& box, threads::PostedRecv& p, const void* buf, size_t count, DType dt,
                          const std::string& axis, const Label& label, threads::Message* m) const {
    if (p.count == count && p.dt == dt) {
        if (count) std::memcpy(p.buf, buf, count * dtype_size(dt));
    } else {
        p.unmatched = m ? std::move(*m) : message(buf, count, dt, axis, label, 0);
    }
    p.filled = true;
    box.cv.notify_all();
}

std::unique_ptr<Request> ThreadsBackend::lend(const Call& call) {
    const auto t0 = std::chrono::steady_clock::now();
    const int peer = call.peer;
    drain(1, {rank_, peer});
    if (world_.failed())
        stop("send on " + call.group.axis + " to rank " + std::to_string(peer) + " (" + label_str(call.label) + ")");
    const int key = p2p_key(call.label);
    threads::Inbox& box = world_.inbox(peer);
    std::lock_guard<std::mutex> lock(box.mu);
    if (threads::PostedRecv* p = take_posted_from_me(box, key)) {  // the peer waits for it: one copy now, no loan
        fill(box, *p, call.send, call.count, call.dt, call.group.axis, call.label, nullptr);
        return finished_request(t0);
    }
    auto loan = std::make_shared<threads::Loan>();
    loan->buf = call.send;
    auto lent = std::make_unique<LentSendRequest>(*this, peer, call.count * dtype_size(call.dt), loan);
    lent->started = t0;
    threads::Message m;
    m.src = rank_;
    m.axis = call.group.axis;
    m.count = call.count;
    m.dt = call.dt;
    m.label = call.label;
    m.loan = loan;
    m.arrives = t0;  // no emulated links here (ThreadsBackend::start)
    box.messages.push_back(std::move(m));
    box.cv.notify_all();
    return lent;
}

void ThreadsBackend::settle(int peer, threads::Loan& loan, size_t bytes) {
    threads::Inbox& box = world_.inbox(peer);
    std::lock_guard<std::mutex> lock(box.mu);
    if (loan.settled) return;
    for (threads::Message& m : box.messages)
        if (m.loan.get() == &loan) {  // not received yet: the message takes its own copy
            m.data.reset(new char[bytes ? bytes : 1]);
            if (bytes) std::memcpy(m.data.get(), loan.buf, bytes);
            m.loan.reset();
            break;
        }
    loan.settled = true;
    loan.copied = std::chrono::steady_clock::now();
}

threads::Message ThreadsBackend::message(const void* buf, size_t count, DType dt, const std::string& axis,
                                         const Label& label, double link_seconds) const {
    threads::Message m;
    m.src = rank_;
    m.axis = axis;
    m.count = count;
    m.dt = dt;
    m.label = label;
    const size_t bytes = count * dtype_size(dt);
    m.data.reset(new char[bytes ? bytes : 1]);
    if (bytes) std::memcpy(m.data.get(), buf, bytes);
    m.arrives = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                       std::chrono::duration<double>(link_seconds));
    return m;
}

void ThreadsBackend::recv(void* buf, size_t count, DType dt, int peer, const std::string& axis,
                          const Label& label) {
    recv_started(peer, nullptr);  // receives started before this one, from the same peer, come first
    recv_now(buf, count, dt, peer, axis, label);
}

void ThreadsBackend::recv_now(void* buf, size_t count, DType dt, int peer, const std::string& axis,
                              const Label& label) {
    drain(2, {peer, rank_});
    const std::string what = "recv on " + axis + " from rank " + std::to_string(peer) + " (" + label_str(label) + ")";
    if (world_.failed()) stop(what);
    threads::Inbox& box = world_.inbox(rank_);
    std::unique_lock<std::mutex> lock(box.mu);
    const int key = p2p_key(label);
    auto it = box.messages.end();
    wait_for_peer(lock, peer, what, [&] { return (it = find_message(box, peer, key)) != box.messages.end(); }, [] {});
    threads::Message m = std::move(*it);
    box.messages.erase(it);
    const bool same = m.count == count && m.dt == dt;
    if (m.loan) {  // the bytes are still the sender's: copied before it may have its buffer back
        if (same && count) std::memcpy(buf, m.loan->buf, count * dtype_size(dt));
        m.loan->settled = true;
        m.loan->copied = std::chrono::steady_clock::now();
    }
    lock.unlock();
    if (!same) mismatch(m, count, dt, what);
    if (count && m.data) std::memcpy(buf, m.data.get(), count * dtype_size(dt));
    std::this_thread::sleep_until(m.arrives);  // emulated links: not before it has crossed (else at once)
}

void ThreadsBackend::wait_for_peer(std::unique_lock<std::mutex>& lock, int peer, const std::string& what,
                                   const std::function<bool()>& ready, const std::function<void()>& give_up) {
    if (ready()) return;
    threads::Inbox& box = world_.inbox(rank_);
    world_.set_waiting(rank_, what);
    const auto deadline = world_.deadline();
    std::string error;
    bool stopped = false;
    while (!ready()) {
        if (world_.failed()) {
            stopped = true;
            break;
        }
        if (world_.finished(peer)) {
            error = "desync: " + what + ": rank " + std::to_string(peer) + " returned from its work without sending";
            break;
        }
        if (box.cv.wait_until(lock, deadline) == std::cv_status::timeout && !ready()) {
            std::string where = world_.waiting(peer);
            std::ostringstream os;
            os << "desync: " << what << ": rank " << peer << " did not send within " << world_.timeout_seconds()
               << " s; rank " << peer
               << (where.empty() ? " is not waiting in any collective" : " is waiting in " + where);
            error = os.str();
            break;
        }
    }
    if (stopped || !error.empty()) {
        give_up();
        lock.unlock();
        world_.set_waiting(rank_, "");
        if (stopped) stop(what);
        raise(error);
    }
    world_.set_waiting(rank_, "");
}

void ThreadsBackend::mismatch(const threads::Message& m, size_t count, DType dt, const std::string& what) {
    raise("mismatched send/recv: rank " + std::to_string(m.src) + " sent " + std::to_string(m.count) + " x " +
          dtype_name(m.dt) + " on " + m.axis + " (" + label_str(m.label) + ") but rank " + std::to_string(rank_) +
          " expects " + std::to_string(count) + " x " + dtype_name(dt) + " in " + what);
}

}  // namespace ss
