// threads_sync.cpp — how the ranks of the threads backend meet for a collective.
//
// Every collective starts with begin(): post my call (its description and the
// buffers the others may read) in my slot, wait at a sync point, and check that
// every member called the same thing. sync() is the counting barrier described
// in threads_world.h, with the timeout and the desync report. The algorithms
// themselves are in threads_backend.cpp, point-to-point in threads_p2p.cpp.
#include <cstring>
#include <exception>
#include <sstream>
#include <thread>

#include "comm/threads/threads_backend.h"
#include "comm/threads/threads_world.h"
#include "comm/trace/trace.h"
#include "core/check.h"
#include "core/text.h"

namespace ss {

using threads::CallDesc;
using threads::GroupState;
using threads::Slot;

namespace {

bool same_call(const CallDesc& a, const CallDesc& b) {
    return std::strcmp(a.op, b.op) == 0 && a.axis == b.axis && a.count == b.count && a.dt == b.dt &&
           a.reduce == b.reduce && a.root == b.root;
}

// How long a waiting rank spins (yielding its core) before it sleeps. A ring
// step on a few KiB takes microseconds, so sleeping at once is slow (8 ranks
// on 2 cores, every wait asleep at once: 285-300 ms a step of DP 4 x SP 2
// against 195-205). With a core to itself a yield returns at once and 2000 of
// them last about a millisecond. With more ranks than cores each yield hands
// the core to another thread, and 2000 became storms of thread switches
// (100,000-300,000 a second, vmstat) in which steps slowed from 185-205 ms to
// 230-290: the progress threads of --overlap on spinning beside the compute.
// There a few dozen yields already let every other rank run once; then sleep.
// 50 was as fast as any count tried (docs/performance.md, "Waiting on an
// oversubscribed CPU").
constexpr int kSpinRoundsOwnCore = 2000;
constexpr int kSpinRoundsShared = 50;

int spin_rounds(int ranks) {
    const int cores = int(std::thread::hardware_concurrency());  // 0: unknown, as if enough
    return cores > 0 && ranks > cores ? kSpinRoundsShared : kSpinRoundsOwnCore;
}

}  // namespace

ThreadsBackend::ThreadsBackend(threads::World& world, int rank)
    : world_(world),
      rank_(rank),
      spin_rounds_(spin_rounds(world.size())),
      progress_(stall_backstop_seconds(world.timeout_seconds())) {}
ThreadsBackend::~ThreadsBackend() = default;

// ---- started calls: a progress thread per group (progress.h) --------------------------

namespace {

// The queue of a call: collectives by group; a rank's sends and receives by peer.
threads::QueueKey queue_key(const Call& c) {
    const int kind = c.op == CallOp::send ? 1 : c.op == CallOp::recv ? 2 : 0;
    return {kind, c.group.ranks};
}

}  // namespace

std::unique_ptr<Request> ThreadsBackend::start(const Call& call) {
    if (!world_.emulates_links() && (call.op == CallOp::send || call.op == CallOp::recv))
        return start_p2p(call);  // no progress thread needed (threads_p2p.cpp)
    return progress_.submit(queue_key(call), [this, call] { run(call); },
                            describe_call(call_op_name(call.op), call.group, call.label));
}

void ThreadsBackend::rank_failing() { world_.mark_failing(rank_); }

void ThreadsBackend::drain(int kind, const std::vector<int>& ranks) { progress_.drain({kind, ranks}); }

// Emulated links (CommOptions::link_seconds): the call ends no earlier than the
// link's time after the LAST member arrived, since no byte moves before then. The
// wait is a sleep, so the cores stay free for the ranks that compute.
// It first ends the call (InCall::end): the last step is done, the sleep reads
// no buffer. A link too slow for the timeout fails the run at once, in every
// member alike (each computes the same time), so no queued call starts after it.
void ThreadsBackend::emulate_link(InCall& call, const char* op, size_t count, DType dt) {
    const GroupCtx& g = call.group();
    call.end();
    const int n = int(g.state->ranks.size());
    double t = 0;
    try {
        t = world_.link_seconds(op, collective_bytes(op, count, dtype_size(dt), n), g.state->ranks);
    } catch (const Error& e) {
        raise(e.what());
    }
    if (t <= 0) return;
    auto last = slot(g, 0).posted;
    for (int m = 1; m < n; ++m) last = std::max(last, slot(g, m).posted);
    std::this_thread::sleep_until(last + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                             std::chrono::duration<double>(t)));
}

// ---- synchronisation ---------------------------------------------------------------

ThreadsBackend::GroupCtx& ThreadsBackend::ctx(const Group& group) {
    std::lock_guard<std::mutex> lock(groups_mu_);
    auto it = groups_.find(group.ranks);
    if (it != groups_.end()) return it->second;
    GroupCtx g;
    g.state = &world_.group(group.ranks);
    g.me = group.index_of(rank_);
    return groups_.emplace(group.ranks, g).first->second;
}

const Slot& ThreadsBackend::slot(const GroupCtx& g, int member) const {
    return g.state->slots[member][g.parity];
}

[[noreturn]] void ThreadsBackend::raise(const std::string& msg) {
    world_.fail(rank_, msg);
    throw Error(msg);
}

[[noreturn]] void ThreadsBackend::stop(const std::string& what) {
    throw Error(what + ": stopped because " + world_.failure());
}

// ---- a member's stay in a call -------------------------------------------------------

// The flag is raised before begin() looks at the failure flag, both seq_cst: a
// member leaving by an exception marks the run failed and then reads the flags,
// so a peer either sees the failure at its begin() and stops, or is seen inside
// and waited for. (Were it raised after, a peer could pass the failure check,
// then a sync the leaver had already reached, and read what it has freed.)
ThreadsBackend::InCall::InCall(ThreadsBackend& backend, GroupCtx& g)
    : backend_(backend), g_(&g), exceptions_(std::uncaught_exceptions()) {
    g.state->arrived[g.me].in_call.store(true);
}

ThreadsBackend::InCall::InCall(InCall&& o) noexcept
    : backend_(o.backend_), g_(o.g_), exceptions_(o.exceptions_) {
    o.g_ = nullptr;
}

void ThreadsBackend::InCall::end() {
    if (!g_) return;
    g_->state->arrived[g_->me].in_call.store(false);
    g_ = nullptr;
}

ThreadsBackend::InCall::~InCall() {
    GroupCtx* g = g_;
    if (!g) return;
    end();
    if (std::uncaught_exceptions() > exceptions_) backend_.wait_others_out(*g);
}

// Leaving a call by an exception: the run fails (when nothing has yet: a failure
// is what ends a call early), so every member still inside stops at its next
// sync; until then it may be in the middle of a step, reading my buffers. A step
// is a copy or a sum of one chunk, so the wait is short; the deadline only
// bounds it.
void ThreadsBackend::wait_others_out(const GroupCtx& g) {
    world_.mark_failing(rank_);  // nothing if the run has failed already
    const threads::GroupState& gs = *g.state;
    const int n = int(gs.ranks.size());
    const auto deadline = world_.deadline();
    for (;;) {
        bool inside = false;
        for (int j = 0; j < n; ++j) inside = inside || (j != g.me && gs.arrived[j].in_call.load());
        if (!inside || std::chrono::steady_clock::now() >= deadline) return;
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
}

// ---- meeting ---------------------------------------------------------------------------

// Posts my call into my slot, meets the group, and checks that everyone called
// the same thing. Slots alternate by call parity: a fast rank may post call
// k+1 while a slow one still reads call k's slots, but it cannot post k+2
// before everyone has arrived at k+1.
ThreadsBackend::InCall ThreadsBackend::begin(GroupCtx& g, const CallDesc& d, const void* data, const void* work) {
    InCall call(*this, g);  // before the failure check: see InCall's constructor
    if (world_.failed()) stop(describe_call(d.op, Group{d.axis, g.state->ranks}, d.label));
    g.parity = int(g.calls++ & 1);
    Slot& mine = g.state->slots[g.me][g.parity];
    mine.desc = d;
    mine.data = data;
    mine.work = work;
    mine.posted = std::chrono::steady_clock::now();
    sync(g, d);
    check_same_call(g);
    return call;
}

void ThreadsBackend::check_same_call(const GroupCtx& g) {
    const GroupState& gs = *g.state;
    const CallDesc& first = slot(g, 0).desc;
    for (int j = 1; j < int(gs.ranks.size()); ++j) {
        const CallDesc& other = slot(g, j).desc;
        if (!same_call(first, other))
            raise("mismatched collectives on group " + ranks_str(gs.ranks) + ": rank " +
                  std::to_string(gs.ranks[0]) + " called " + threads::call_str(first) + " but rank " +
                  std::to_string(gs.ranks[j]) + " called " + threads::call_str(other) +
                  ". Every member of a group must make the same collective calls, in the same order, "
                  "with the same counts.");
    }
}

// One sync point: a counting barrier. I raise my counter to k (my k-th sync on
// this group) and wait until every member's counter is at least k.
void ThreadsBackend::sync(GroupCtx& g, const CallDesc& d) {
    GroupState& gs = *g.state;
    const int n = int(gs.ranks.size());
    const uint64_t k = ++g.barriers;
    gs.arrived[g.me].count.store(k);  // seq_cst: pairs with the sleepers count below
    if (gs.sleepers.load() > 0) {
        std::lock_guard<std::mutex> lock(gs.mu);
        gs.cv.notify_all();
    }
    auto all_here = [&] {
        for (int j = 0; j < n; ++j)
            if (gs.arrived[j].count.load() < k) return false;
        return true;
    };
    auto missing = [&] {
        std::vector<int> out;
        for (int j = 0; j < n; ++j)
            if (gs.arrived[j].count.load() < k) out.push_back(gs.ranks[j]);
        return out;
    };
    const Group group{d.axis, gs.ranks};
    // The timeout counts from arrival: under load (more threads than cores)
    // the yields can themselves take seconds, so the spin stops at the deadline too.
    const auto deadline = world_.deadline();

    for (int spin = 0; spin < spin_rounds_ && std::chrono::steady_clock::now() < deadline; ++spin) {
        if (all_here()) return;
        if (world_.failed()) stop(describe_call(d.op, group, d.label));
        std::this_thread::yield();
    }

    // Sleep until everyone is here, someone fails or returns, or the deadline.
    world_.set_waiting(rank_, describe_call(d.op, group, d.label));
    std::unique_lock<std::mutex> lock(gs.mu);
    gs.sleepers.fetch_add(1);
    std::string error;
    bool stopped = false;
    while (!all_here()) {
        if (world_.failed()) {
            stopped = true;
            break;
        }
        std::vector<int> gone;
        for (int r : missing())
            if (world_.finished(r)) gone.push_back(r);
        if (!gone.empty()) {
            error = "desync: " + describe_call(d.op, group, d.label) + ": rank " + join_ints(gone) +
                    " did not arrive: it returned from its work without making this call";
            break;
        }
        if (gs.cv.wait_until(lock, deadline) == std::cv_status::timeout && !all_here()) {
            std::ostringstream os;
            std::vector<int> late = missing();
            os << "desync: " << describe_call(d.op, group, d.label) << ": " << (late.size() == 1 ? "rank " : "ranks ")
               << join_ints(late) << " did not arrive within " << world_.timeout_seconds() << " s";
            for (int r : late) {
                std::string where = world_.waiting(r);
                os << "; rank " << r
                   << (where.empty() ? " is not waiting in any collective (still computing, stuck, or it skipped this call)"
                                     : " is waiting in " + where);
            }
            error = os.str();
            break;
        }
    }
    gs.sleepers.fetch_sub(1);
    lock.unlock();  // before fail(), which takes every group's lock to wake its sleepers
    world_.set_waiting(rank_, "");
    if (stopped) stop(describe_call(d.op, group, d.label));
    if (!error.empty()) raise(error);
}

// An injected hang (Backend::stall): sleep on my own inbox, which every failure
// and every rank that returns wakes (World::wake_all), so the thread gets out
// as soon as the others' timeout fails the run.
void ThreadsBackend::stall(const std::string& why) {
    auto others_returned = [&] {
        for (int r = 0; r < world_.size(); ++r)
            if (r != rank_ && !world_.finished(r)) return false;
        return true;
    };
    const double backstop_s = stall_backstop_seconds(world_.timeout_seconds());
    const auto backstop = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(backstop_s));
    threads::Inbox& box = world_.inbox(rank_);
    std::unique_lock<std::mutex> lock(box.mu);
    bool late = false;
    while (!world_.failed() && !others_returned() && !late)
        late = box.cv.wait_until(lock, backstop) == std::cv_status::timeout;
    lock.unlock();  // before fail(), which takes every inbox's lock
    if (world_.failed()) stop(why);
    if (others_returned()) raise(why + ": every other rank has returned, none is left to wait for this one");
    std::ostringstream os;
    os << why << ": still stalled after " << backstop_s << " s and no other rank timed out waiting for it";
    raise(os.str());
}

float* ThreadsBackend::scratch(GroupCtx& g, size_t count) {
    if (g.scratch.size() < count) g.scratch.resize(count);
    return g.scratch.data();
}

}  // namespace ss
