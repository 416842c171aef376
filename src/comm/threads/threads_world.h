// threads_world.h — where the threads backend's ranks meet: shared memory,
// per-group barriers that never hang, mailboxes, and the failure flag.
//
// All N ranks of a threads run share one World. For every group that has been
// used (keyed by its ordered list of global ranks) the World holds a
// GroupState:
//
//     GroupState for ranks [0,2,4,6]
//       slots[member][call parity]   what each member posted for its current call:
//                                    the call's description (op, count, dtype, ...)
//                                    and the buffer pointers the others may read
//       arrived[member]              how many barriers that member has reached
//
// A collective is a sequence of barriers on its group ("sync points"). At each
// one a member bumps its own `arrived` counter and waits until every member's
// counter has reached the same value (a counting barrier: no central counter
// to reset, and a member that is late is simply the one whose counter is low,
// which is exactly what a desync report needs to name).
//
// Waiting spins briefly (a ring step is often microseconds), then sleeps on a
// condition variable. Every sleep has a deadline (CommOptions.timeout_seconds)
// and is woken early when any rank fails or returns, so nothing hangs.
//
// Point-to-point: each rank has an Inbox; send copies the data into a Message
// and pushes it to the receiver's inbox (so send never waits); recv takes the
// oldest message from that sender. A receive started before its message has
// come is posted in the inbox instead (PostedRecv): the send then copies its
// bytes straight into the receiver's buffer, one copy where a message takes two.
// A started send whose receive is not posted lends its buffer instead (Loan):
// the message carries the sender's pointer, and whoever comes first copies the
// bytes once, the receiver into its buffer or the sender, at its wait, into
// the message.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "comm/label.h"
#include "core/dtype.h"

namespace ss::threads {

/// What a member says it is calling; the members of a group must agree on all of it.
struct CallDesc {
    const char* op = "";  ///< "all_reduce", ... (a string literal)
    std::string axis;                 ///< the group's axis
    size_t count = 0;                 ///< elements (per rank where the op says so)
    DType dt = DType::f32;            ///< element type
    ReduceOp reduce = ReduceOp::sum;  ///< reductions only
    int root = -1;                    ///< broadcast only
    Label label;                      ///< for error messages only: not compared
};

/// "all_reduce on tp (1000 x fp32, sum; grad, step 3)".
std::string call_str(const CallDesc& d);

/// What a member posts for one call: its description and the buffers others read.
struct Slot {
    CallDesc desc;               ///< what the member is calling
    const void* data = nullptr;  ///< the buffer in the call's dtype
    const void* work = nullptr;  ///< fp32 work buffer of a reduction
    std::chrono::steady_clock::time_point posted;  ///< when the member arrived (emulated links start at the last)
};

/// One member's arrival counter and call flag, on their own cache line (members
/// write theirs without bouncing each other's line).
struct alignas(64) Arrival {
    std::atomic<uint64_t> count{0};  ///< sync points this member has reached
    /// Inside a collective on this group, from begin() to the end of its last step:
    /// it may be reading the other members' posted buffers (ThreadsBackend::InCall).
    std::atomic<bool> in_call{false};
};

/// The shared state of one group.
struct GroupState {
    /// State for the group @p group_ranks (global ids in group order).
    explicit GroupState(std::vector<int> group_ranks);
    std::vector<int> ranks;                  ///< global ids, in group order
    std::unique_ptr<Arrival[]> arrived;      ///< per member: barriers reached so far
    std::vector<std::array<Slot, 2>> slots;  ///< per member, by call parity (see ThreadsBackend::begin)
    std::mutex mu;                           ///< for sleeping only; the fast path is lock-free
    std::condition_variable cv;              ///< notified when a member arrives and someone sleeps
    std::atomic<int> sleepers{0};            ///< members asleep on cv
};

/// A started send's buffer, lent to its message until the bytes are copied out of
/// it (threads_p2p.cpp). Guarded by the receiver's inbox lock.
struct Loan {
    const void* buf = nullptr;  ///< the sender's buffer: read only while not @ref settled
    bool settled = false;       ///< the bytes are copied out: the sender has its buffer back
    std::chrono::steady_clock::time_point copied;  ///< when they were
};

/// One point-to-point message in flight.
struct Message {
    int src = -1;                  ///< the sender's global rank
    std::string axis;              ///< as the sender gave it
    size_t count = 0;              ///< elements
    DType dt = DType::f32;         ///< element type
    Label label;                   ///< the sender's label
    std::unique_ptr<char[]> data;  ///< a copy of the sender's buffer (empty while @ref loan is set)
    std::shared_ptr<Loan> loan;    ///< set while the bytes are still in the sender's buffer
    std::chrono::steady_clock::time_point arrives;  ///< emulated links: when it has crossed the link
};

/// A receive started before its message came: the sender copies into @ref buf itself.
struct PostedRecv {
    int src = -1;           ///< the sender's global rank
    int key = 0;            ///< p2p_key of the receive's label: a send fills the oldest posted receive of its key
    void* buf = nullptr;    ///< the receiver's buffer (count elements of dt)
    size_t count = 0;       ///< elements expected
    DType dt = DType::f32;  ///< element type expected
    bool filled = false;    ///< the send has come (guarded by the inbox's lock)
    /// A send whose count or type differ is not copied: it is kept here for the
    /// receiver's mismatch report (data empty when the bytes went into buf).
    Message unmatched;
};

/// The messages waiting for one rank, and its receives waiting for messages.
struct Inbox {
    std::mutex mu;                 ///< guards messages, posted and every PostedRecv in it
    std::condition_variable cv;    ///< notified on every new message, every filled receive and on failure
    std::deque<Message> messages;  ///< oldest first
    std::deque<PostedRecv*> posted;  ///< oldest first; a send takes the first of its (src, key)
};

/// Everything the ranks of one run_threads() share.
class World {
public:
    /// A world of @p size ranks whose waits end after @p timeout_seconds; @p link_seconds
    /// (CommOptions::link_seconds) is the emulated links' time of a call, or empty.
    World(int size, double timeout_seconds,
          std::function<double(const char*, uint64_t, const std::vector<int>&)> link_seconds = {});

    /// The emulated links' time of a call (0 without emulated links). Throws ss::Error
    /// when it is longer than the timeout: no call may wait that long, so the run stops
    /// at once, naming the call and the links, instead of sleeping past every deadline
    /// (a --link in the wrong units: 1e-9 GB/s is a byte a second).
    double link_seconds(const char* op, uint64_t bytes, const std::vector<int>& ranks) const;

    /// Whether calls take emulated links' time (CommOptions::link_seconds was given).
    bool emulates_links() const { return bool(link_seconds_); }

    /// Number of ranks.
    int size() const { return size_; }
    /// How long any wait may last.
    double timeout_seconds() const { return timeout_seconds_; }
    /// Now plus the timeout: when a wait that starts now must end.
    std::chrono::steady_clock::time_point deadline() const;

    /// The state of the group with these ranks (created on first use).
    GroupState& group(const std::vector<int>& ranks);
    /// The messages waiting for @p rank.
    Inbox& inbox(int rank) { return *inboxes_[rank]; }

    /// Records that @p rank failed with @p msg (only the first failure is kept),
    /// and wakes every waiting rank so it stops at once.
    void fail(int rank, const std::string& msg);
    /// @p rank is throwing out of its work with started calls in flight: every wait
    /// ends now (as for a failure), and that rank's fail() still gives the message.
    void mark_failing(int rank);
    /// Has any rank failed?
    bool failed() const { return failed_.load(); }
    /// "rank 1 failed: boom".
    std::string failure() const;
    /// The first failure as run_threads reports it: "rank 1: boom".
    std::string first_error() const;

    /// @p rank returned from its work; ranks waiting for it are told at once.
    void mark_finished(int rank);
    /// Has @p rank returned from its work?
    bool finished(int rank) const { return finished_[rank].load(); }

    /// What @p rank is waiting in right now ("" when it is not waiting), for desync reports.
    void set_waiting(int rank, std::string what);
    /// What @p rank is waiting in ("" when it is not waiting).
    std::string waiting(int rank) const;

private:
    void wake_all();

    int size_;
    double timeout_seconds_;
    std::function<double(const char*, uint64_t, const std::vector<int>&)> link_seconds_;
    std::mutex groups_mu_;
    std::map<std::vector<int>, std::unique_ptr<GroupState>> groups_;
    std::vector<std::unique_ptr<Inbox>> inboxes_;
    std::unique_ptr<std::atomic<bool>[]> finished_;

    mutable std::mutex fail_mu_;
    std::atomic<bool> failed_{false};
    int failed_rank_ = -1;
    bool failing_ = false;  // mark_failing: the message is still to come
    std::string failed_msg_;

    struct Waiting {
        mutable std::mutex mu;
        std::string what;
    };
    std::vector<std::unique_ptr<Waiting>> waiting_;
};

}  // namespace ss::threads
