// progress.h — the threads backend's progress threads: one per group a rank
// starts calls on, running that group's calls in the order the rank issued them.
//
//     rank 0's thread        start_all_reduce(dp) ──queue──>  progress thread "dp [0,1]"
//       ... backward ...                                       runs the ring, sleeps the
//       wait(h) ──────────────────────────── done? <────────── emulated link time, done
//
// A rank that starts a call hands it to the progress thread of the call's
// group (a key: the group's ranks, and whether it is a collective, a send or a
// recv, so a rank's sends and receives to one peer flow independently, as on
// a full-duplex link). Sends and receives come here only with emulated links;
// without, they need no thread (threads_p2p.cpp). Each thread runs its queue in order; different groups'
// threads run side by side, as NCCL runs each communicator on its own stream.
// A blocking call on a group first waits for that group's queue to empty
// (drain), so issue order holds for blocking and started calls alike, and the
// results are the blocking form's bits. A failed call keeps its error's text
// for wait() to throw as a new ss::Error on the waiting thread: no exception
// object crosses threads (its reference count lives in the uninstrumented C++
// runtime, which ThreadSanitizer cannot follow). Threads are made on a group's first started call and
// joined when the backend is destroyed.
#pragma once

#include <atomic>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "comm/backend.h"

namespace ss::threads {

/// Which queue a call goes to: its group's ranks, and collective (0), send (1) or recv (2).
using QueueKey = std::pair<int, std::vector<int>>;

/// When the call now running on a queue began (steady_clock ticks): a wait measures its
/// backstop from it, so calls queued ahead of the waited one do not count against it.
struct QueuePulse {
    std::atomic<std::chrono::steady_clock::rep> running_since{0};  ///< ticks; 0 before the first call
};

/// One call on a progress thread, and what became of it.
struct Job {
    std::function<void()> run;  ///< the call
    std::shared_ptr<QueuePulse> pulse;  ///< its queue's: when the call running there began
    std::string what;           ///< "all_reduce on dp group [0,1] (grad, step 3)", for a timeout report
    std::mutex mu;              ///< guards the fields below
    std::condition_variable cv; ///< notified when done
    bool done = false;          ///< finished, well or not
    bool failed = false;        ///< it threw
    std::string error;          ///< what() of what it threw
    std::chrono::steady_clock::time_point started;   ///< when it began to run
    std::chrono::steady_clock::time_point finished;  ///< when it ended
};

/// The progress threads of one rank.
class Progress {
public:
    /// A wait() throws, naming the call, when the call running on its queue (the waited
    /// one, or one queued before it) has run for more than @p backstop_seconds (well past
    /// every call's own timeout, backend.h stall_backstop_seconds), counted from the wait's
    /// start at the earliest: a stuck progress thread. A long queue of calls that each
    /// finish in time is not (deep ZeRO-3 prefetch on slow emulated links).
    explicit Progress(double backstop_seconds);
    /// Lets every queue finish, then joins the threads.
    ~Progress();
    Progress(const Progress&) = delete;
    Progress& operator=(const Progress&) = delete;

    /// Queues @p run on @p key's thread (made on first use) and returns at once.
    std::unique_ptr<Request> submit(const QueueKey& key, std::function<void()> run, std::string what);
    /// Returns once everything queued on @p key has finished (at once on that key's own thread).
    void drain(const QueueKey& key);

private:
    struct Queue;
    Queue& queue(const QueueKey& key);

    double backstop_seconds_;
    std::mutex mu_;  // guards queues_
    std::map<QueueKey, std::unique_ptr<Queue>> queues_;
};

}  // namespace ss::threads
