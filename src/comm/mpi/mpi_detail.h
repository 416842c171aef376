// mpi_detail.h — the MPI pieces the mpi and nccl backends are built from.
// Includes <mpi.h>, so only the files of src/comm/mpi/ and src/comm/nccl/
// (built only when CMake found MPI) include it.
//
//   SS_MPI_CHECK       every MPI call goes through it: a failure becomes an
//                      ss::Error naming the call, the file, the line and the rank
//   mpi::Watch         waiting with a deadline, and the side channel that finds
//                      out who is missing when a wait times out (mpi_watch.cpp)
//   mpi::PointToPoint  send / recv over MPI (mpi_p2p.cpp)
//
// mpi_session.h puts them together into one process's session.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "comm/label.h"
#include "core/dtype.h"
#include "mesh/group.h"

namespace ss::mpi {

/// Throws ss::Error for an MPI call that returned @p rc != MPI_SUCCESS:
/// "MPI_Iallreduce(...) failed on rank 2 (src/comm/mpi/mpi_backend.cpp:120): MPI_ERR_TRUNCATE: message truncated".
[[noreturn]] void fail_call(const char* call, int rc, const char* file, int line);

/// Initialises MPI once (MPI_Init_thread, MPI_THREAD_FUNNELED), makes MPI calls
/// on MPI_COMM_WORLD return their errors instead of aborting, and registers
/// MPI_Finalize to run once at exit. Does nothing if MPI is already initialised.
void ensure_initialized();

/// This process's rank in MPI_COMM_WORLD while MPI runs (initialised and not yet
/// finalised), else -1: for error messages, which may come at any time.
int rank_if_running();

/// Prints "rank R: @p message" to stderr and ends the whole job with
/// MPI_Abort(MPI_COMM_WORLD, 1): the one safe end once a collective is stuck.
[[noreturn]] void abort_world(const std::string& message);

/// The MPI type that carries elements of @p dt: MPI_FLOAT, MPI_UINT16_T (bf16), MPI_INT32_T.
MPI_Datatype datatype(DType dt);

/// Seconds on a monotonic clock (for deadlines).
inline double now_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Lets other processes run while a rank polls: spins at first (a collective
/// on a few KiB takes microseconds), then yields the core, then sleeps briefly.
void pause(uint64_t polls);

/// True once @p req has completed (MPI_Test).
bool test(MPI_Request& req);

/// Polls @p req until it completes (true) or @p timeout_seconds pass (false).
/// For the few waits outside a backend (communicator creation, the trace writer).
bool wait_for(MPI_Request& req, double timeout_seconds);

/// A call this rank is waiting in: how it names itself in errors and in its
/// answers to other ranks. Built for every call, so it holds pointers and
/// makes its strings only when they are needed.
struct WaitInfo {
    const char* op = "";                ///< "all_reduce", ..., "recv", "send", "prepare"
    const Group* group = nullptr;       ///< collectives: the group
    const Label* label = nullptr;       ///< the call's label
    int peer = -1;                      ///< send / recv: the other rank
    const std::string* axis = nullptr;  ///< send / recv: the mesh axis
    size_t count = 0;                   ///< elements (per rank where the op says so)
    DType dt = DType::f32;              ///< element type
    const char* reduce = nullptr;       ///< reductions: "sum" / "avg"
    int root = -1;                      ///< broadcast: the root's index in the group
    int group_index = -1;               ///< collectives: index of the group in the prepared list
    uint64_t seq = 0;                   ///< collectives: this rank's call number on the group, from 0

    /// "all_reduce on tp group [0,1] (grad, layer 1)" or "recv from rank 0 on pp (act)".
    std::string what() const;
    /// The call instance, "g3#17" (group 3, its call 17): equal keys on two ranks
    /// mean they are in the same call. "-" for send / recv.
    std::string key() const;
    /// "8 x fp32, sum": what two ranks in the same call must agree on.
    std::string signature() const;
    /// The ranks this wait depends on (the group without @p me, or the peer).
    std::vector<int> others(int me) const;
};

/// Waiting with a deadline, and the side channel that explains a timeout.
///
/// A rank that waits polls its MPI request and, between polls, its side-channel
/// communicator, where it answers two kinds of message:
///
///     query     "where are you?"            -> reply: the call I am waiting in
///                                              (key, signature, description), or
///                                              "finished" once my work returned
///     finished  "I returned from my work; my call counts per group are c0 c1 ..."
///
/// On a timeout the rank sends a query to every member of the call it is waiting
/// in and collects the replies for a short grace period. A member that answers
/// with the same key has arrived; one that answers with another call is waiting
/// there instead; one that does not answer is busy outside the collectives
/// (computing, stuck). A "finished" notice whose count for this group shows the
/// call was never made ends the wait at once. Nothing is sent on a healthy run
/// except one notice per pair of ranks at the end.
class Watch {
public:
    /// The side channel lives on @p ctl (a communicator of its own, a dup of the world).
    Watch(MPI_Comm ctl, int rank, int world, double timeout_seconds);
    /// Leaves any outstanding answer to complete in the background.
    ~Watch();
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;

    /// The timeout every wait uses.
    double timeout_seconds() const { return timeout_; }

    /// Polls @p done until it returns true, answering the side channel meanwhile.
    /// Throws ss::Error ("desync: <call>: rank 1 did not arrive within 60 s; rank 1 is
    /// waiting in ...") after the timeout, or at once when a member has returned
    /// from its work without making this call. A process started by an MPI launcher
    /// whose launcher has died (`kill -9 mpirun`: the ranks live on, reparented)
    /// says so and exits, instead of training on unseen (check_launcher).
    void wait(const std::function<bool()>& done, const WaitInfo& info);

    /// The end of this rank's work: tells every other rank, with @p calls_per_group
    /// (calls made on each prepared group, by index), then answers the side channel
    /// (without a timeout) until every other rank has sent its notice too.
    void finish(const std::vector<uint64_t>& calls_per_group);

private:
    void service(const WaitInfo* waiting);
    void check_launcher() const;
    std::string skipped(const WaitInfo& info) const;
    [[noreturn]] void timed_out(const WaitInfo& info);
    void post(int dest, int tag, std::string text);

    MPI_Comm ctl_;
    int rank_, world_;
    double timeout_;
    int launcher_ = 0;  // the launcher's pid (this process's parent under mpirun); 0: none known
    bool finishing_ = false;
    struct Finished {
        std::vector<uint64_t> calls;  // per prepared group
        double at = 0;                // when the notice came (now_seconds)
    };
    std::map<int, Finished> finished_;     // rank -> its notice
    std::map<int, std::string> replies_;   // rank -> its answer to my query
    struct Outgoing {
        MPI_Request req;
        std::string text;
    };
    std::list<Outgoing> out_;  // answers and notices still being sent (std::list: stable buffers)
};

/// A send in flight: MPI_Isend reads from `data`, which lives until it completes.
struct PendingSend {
    MPI_Request req = MPI_REQUEST_NULL;  ///< the Isend
    std::vector<char> data;              ///< the copy being sent (host memory)
    int peer = -1;                       ///< receiver
    std::string axis;                    ///< for the error message
    Label label;                         ///< for the error message
    size_t count = 0;                    ///< elements
    DType dt = DType::f32;               ///< element type
};

/// send / recv over MPI as backend.h's contract has them, for the mpi and nccl
/// backends alike. A send copies the data (into add()'s buffer) and starts an
/// MPI_Isend, so it never waits for its receiver; the tag carries the label's
/// p2p_key, which recv matches on, and the sender's dtype, which recv checks.
struct PointToPoint {
    MPI_Comm comm = MPI_COMM_NULL;  ///< where the messages go (a dup of the world)
    int rank = 0;                   ///< this process's rank in it
    int tag_ub = -1;                ///< MPI_TAG_UB, read at the first send (-1: not yet)
    std::list<PendingSend> sends;   ///< in flight, oldest first

    /// A new send of @p count elements of @p dt to @p peer: forgets the sends that have
    /// completed, and returns this one with its buffer sized for the caller to fill; then post().
    PendingSend& add(size_t count, DType dt, int peer, const std::string& axis, const Label& label);
    /// Starts the MPI_Isend of the send add() returned last (checks its tag against MPI_TAG_UB).
    void post();
    /// Waits through @p watch for @p peer's message keyed by @p label, then checks that it is
    /// @p count elements of @p dt (a mismatch is taken off the wire and reported); returns it
    /// for MPI_Mrecv.
    MPI_Message probe(Watch& watch, int peer, size_t count, DType dt, const std::string& axis, const Label& label);
    /// Waits through @p watch until every send in flight has been received.
    void complete(Watch& watch);
    /// Frees the requests of the sends in flight (they complete in the background).
    void release();
};

}  // namespace ss::mpi

/// Calls an MPI function and throws ss::Error naming the call, the file, the
/// line and the rank if it does not return MPI_SUCCESS.
#define SS_MPI_CHECK(call)                                                 \
    do {                                                                   \
        int ss_mpi_rc_ = (call);                                           \
        if (ss_mpi_rc_ != MPI_SUCCESS)                                     \
            ::ss::mpi::fail_call(#call, ss_mpi_rc_, __FILE__, __LINE__);   \
    } while (0)
