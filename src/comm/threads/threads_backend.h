// threads_backend.h — N ranks as N threads of one process, collectives by hand.
//
// The `threads` backend is the default: it needs nothing but a CPU, and its
// collectives are short enough to read. all_reduce is NCCL's ring algorithm
// (a reduce-scatter then an all-gather, n-1 steps each) over shared memory;
// the ring is drawn in threads_backend.cpp. The shared state (per-group
// barriers, mailboxes, the failure flag) is in threads_world.h; how ranks meet
// for a call (and report a desync) in threads_sync.cpp; send/recv in
// threads_p2p.cpp.
//
// Start a world with run_threads:
//
//     ss::run_threads(4, [&](ss::Comm& comm) {
//         std::vector<float> x(1000, float(comm.rank()));
//         comm.all_reduce(x.data(), x.size(), comm.world_group(), ss::ReduceOp::sum, {});
//     });                                   // x is 0+1+2+3 = 6 everywhere
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "comm/backend.h"
#include "comm/comm.h"
#include "comm/threads/progress.h"

namespace ss {

namespace threads {
class World;
struct GroupState;
struct CallDesc;
struct Slot;
struct Message;
struct Inbox;
struct PostedRecv;
struct Loan;
}  // namespace threads

/// Runs @p body on @p world ranks, each a thread with its own Comm (threads
/// backend), and waits for all of them. If a rank throws, every other rank is
/// woken and stops at its next wait for another rank; run_threads then throws
/// ss::Error with the FIRST failure: "rank 1: <its message>".
void run_threads(int world, const std::function<void(Comm&)>& body, const CommOptions& opts = {});

/// One rank's side of the threads backend (made by run_threads).
class ThreadsBackend final : public Backend {
public:
    /// Rank @p rank's side of the shared @p world.
    ThreadsBackend(threads::World& world, int rank);
    ~ThreadsBackend() override;

    const char* name() const override { return "threads"; }
    SS_BACKEND_CALLS  // all_reduce ... barrier, stall: the Backend interface (backend.h)
    /// Queues @p call on its group's progress thread (progress.h) and returns at once.
    /// Without emulated links, a send fills a posted receive at once or lends its
    /// buffer to the peer's inbox until one of the two copies it out (threads_p2p.cpp),
    /// and a recv takes a message that is there at once, or is posted, or runs in
    /// wait() after the receives from the same peer started before it: the same
    /// order and bits as a progress thread gives, without waking one.
    std::unique_ptr<Request> start(const Call& call) override;
    /// Every rank's waits end now (World::mark_failing).
    void rank_failing() override;

private:
    // This rank's view of one group: where it sits and how far it has got.
    struct GroupCtx {
        threads::GroupState* state = nullptr;
        int me = -1;            // my index in the group
        uint64_t barriers = 0;  // sync points passed on this group
        uint64_t calls = 0;     // collectives begun on this group
        int parity = 0;         // slot of the current call: calls % 2
        std::vector<float> scratch;  // the ring's running sums: two fp32 chunks
    };
    struct Chunks;
    // A member's stay in one collective (threads_sync.cpp): from begin() to end(),
    // which emulate_link calls after the last step. While it lasts the others may
    // read what the member posted, and it may read theirs. Leaving by an exception,
    // the member waits until no other member is in the call: the unwinding that
    // follows frees buffers a peer in the middle of a step would still read.
    class InCall {
    public:
        InCall(ThreadsBackend& backend, GroupCtx& g);
        InCall(InCall&& o) noexcept;
        InCall(const InCall&) = delete;
        InCall& operator=(const InCall&) = delete;
        InCall& operator=(InCall&&) = delete;
        ~InCall();
        GroupCtx& group() const { return *g_; }
        void end();  // my last step is done: I read nobody's buffers, nobody reads mine

    private:
        ThreadsBackend& backend_;
        GroupCtx* g_;     // null once ended (or moved from)
        int exceptions_;  // std::uncaught_exceptions() at the start: more at the end = leaving by one
    };

    GroupCtx& ctx(const Group& group);
    const threads::Slot& slot(const GroupCtx& g, int member) const;
    [[nodiscard]] InCall begin(GroupCtx& g, const threads::CallDesc& d, const void* data, const void* work);
    void wait_others_out(const GroupCtx& g);  // leaving a call by an exception (InCall)
    void sync(GroupCtx& g, const threads::CallDesc& d);
    void check_same_call(const GroupCtx& g);
    template <class T>
    void ring_reduce_scatter(GroupCtx& g, const threads::CallDesc& d, const T* in, float* partials,
                             const Chunks& chunks, float* out, const std::function<void(float*, size_t)>& finish);
    void ring_all_gather(GroupCtx& g, const threads::CallDesc& d, char* data, const Chunks& chunks,
                         size_t elem_size);
    float* scratch(GroupCtx& g, size_t count);
    void drain(int kind, const std::vector<int>& ranks);  // let this group's started calls finish first
    struct StartedRecv;
    class StartedRecvRequest;
    std::unique_ptr<Request> start_p2p(const Call& call);  // a started send or recv without emulated links
    void recv_started(int peer, const StartedRecv* upto);  // run started receives from peer, oldest first
    void recv_now(void* buf, size_t count, DType dt, int peer, const std::string& axis, const Label& label);
    class PostedRecvRequest;
    class LentSendRequest;
    std::unique_ptr<Request> lend(const Call& call);  // a started send: fill a posted receive, or lend buf
    void settle(int peer, threads::Loan& loan, size_t bytes);  // the loan's bytes into its message, if still lent
    // The oldest receive of (src rank_, key) @p box holds, taken out, or nullptr (its lock held).
    threads::PostedRecv* take_posted_from_me(threads::Inbox& box, int key);
    // Copies a send into posted receive @p p, or keeps it for p's mismatch report (lock held).
    void fill(threads::Inbox& box, threads::PostedRecv& p, const void* buf, size_t count, DType dt,
              const std::string& axis, const Label& label, threads::Message* m) const;
    void wait_posted(threads::PostedRecv& p, const Call& c);   // until a send has filled p
    void unpost(threads::PostedRecv& p);                       // out of the inbox, if no send has taken it
    static void take_posted(threads::Inbox& box, const threads::PostedRecv* p);  // inbox lock held
    threads::Message message(const void* buf, size_t count, DType dt, const std::string& axis, const Label& label,
                             double link_seconds) const;  // a copy of buf to queue in a peer's inbox
    // Waits on this rank's inbox (lock held) until ready(); on a failure, the peer's
    // return or the timeout: give_up() (lock held), then the error (threads_p2p.cpp).
    void wait_for_peer(std::unique_lock<std::mutex>& lock, int peer, const std::string& what,
                       const std::function<bool()>& ready, const std::function<void()>& give_up);
    [[noreturn]] void mismatch(const threads::Message& m, size_t count, DType dt, const std::string& what);
    void emulate_link(InCall& call, const char* op, size_t count, DType dt);  // ends the call; the link's time, slept
    [[noreturn]] void raise(const std::string& msg);
    [[noreturn]] void stop(const std::string& what);

    threads::World& world_;
    int rank_;
    int spin_rounds_;       // yields a waiting rank spins before it sleeps (threads_sync.cpp)
    std::mutex groups_mu_;  // groups_ is looked up from several progress threads
    std::map<std::vector<int>, GroupCtx> groups_;
    threads::Progress progress_;  // the progress threads of started calls
    // Receives started without emulated links and not yet run, by peer, oldest first
    // (only this rank's own thread touches them).
    std::map<int, std::deque<std::shared_ptr<StartedRecv>>> started_recvs_;
};

}  // namespace ss
