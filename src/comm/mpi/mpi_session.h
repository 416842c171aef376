// mpi_session.h — one process's MPI session, shared by the mpi and nccl backends.
//
// Both backends run one rank per process under mpirun, and both lean on MPI for
// everything but their collectives: the nccl backend bootstraps NCCL over MPI,
// sends its point-to-point messages over MPI and waits through the same Watch.
// So what surrounds a collective is written once, here:
//
//     Session(names, timeout)   MPI_Init once; rank, world; two private copies of the
//                               world (p2p: send/recv and prepare; ctl: the Watch's
//                               side channel), each made with a timeout
//     agree(groups)             prepare's checks: every group valid, every rank
//                               passing the same list (an all-reduce, with a timeout)
//     add / begin_call          the prepared groups as this rank sees them: my index
//                               in each, and the calls I have begun on each
//     finish()                  sends received, call counts exchanged (mpi::Watch::finish)
//     run_rank<Backend>         run_mpi and run_nccl: the body, then finish, or MPI_Abort
//
// What differs stays in each backend: the communicator of a group (MPI_Comm or
// ncclComm_t, in a vector by the same prepared index) and the collective calls.
// Includes <mpi.h>: only the files of src/comm/mpi/ and src/comm/nccl/ include it.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "comm/comm.h"
#include "comm/mpi/mpi_backend.h"
#include "comm/mpi/mpi_detail.h"

namespace ss::mpi {

/// How a backend over MPI names itself in its errors: "mpi backend: ...", "run_mpi",
/// "MpiBackend::prepare", "this group has no MPI communicator".
struct BackendNames {
    const char* backend;   ///< "mpi", "nccl"
    const char* launcher;  ///< "run_mpi", "run_nccl"
    const char* cls;       ///< "MpiBackend", "NcclBackend"
    const char* library;   ///< whose communicators: "MPI", "NCCL"
    const char* split;     ///< how it makes them, for the error: "" or " (ncclCommSplit)"
};

/// One process's MPI side of a backend over MPI. See the file comment.
///
/// The constructor, agree() and finish() are collective over MPI_COMM_WORLD.
struct Session {
    /// Checks @p timeout_seconds (> 0), initialises MPI if needed, and makes the two
    /// copies of the world and the Watch. Throws ss::Error if another rank does not
    /// start its backend within the timeout.
    Session(const BackendNames& names, double timeout_seconds);
    /// Frees the copies of the world (sends in flight complete in the background),
    /// unless MPI has been finalised already.
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    /// One prepared group, as this rank sees it.
    struct Seat {
        int me = -1;         ///< my index in the group, -1 if not a member
        uint64_t calls = 0;  ///< collectives I have begun on it
    };

    const BackendNames& names;    ///< for the error messages
    int rank = 0;                 ///< rank in MPI_COMM_WORLD
    int world = 1;                ///< size of MPI_COMM_WORLD
    double timeout = 60;          ///< seconds every wait may take
    MPI_Comm p2p = MPI_COMM_NULL;  ///< a dup of the world: send / recv, prepare's check and splits
    MPI_Comm ctl = MPI_COMM_NULL;  ///< a dup of the world: the Watch's side channel
    PointToPoint pt;               ///< send / recv on p2p, and the sends in flight
    std::unique_ptr<Watch> watch;  ///< waits with a deadline, names who is missing
    std::vector<Seat> groups;      ///< by prepared index (0 = world), the same on every rank
    std::map<std::vector<int>, int> prepared_index;  ///< rank list -> prepared index (every group, member or not)
    uint64_t prepares = 0;  ///< collective set-up steps so far (prepare, communicator creation)

    /// The world group, "world" [0, 1, ..., world-1].
    Group world_group() const;
    /// True if @p group's rank list has been prepared.
    bool prepared(const Group& group) const { return prepared_index.count(group.ranks) > 0; }

    /// prepare()'s steps 1 and 2: checks @p groups (none empty, every rank in the
    /// world, none twice), then that every rank passes the same list, with the
    /// timeout; returns the groups whose rank lists are new, in order.
    std::vector<const Group*> agree(const std::vector<Group>& groups);
    /// Records @p group as the next prepared index, with my index @p me in it (-1:
    /// not a member); the backend pushes its communicator for it in the same order.
    void add(const Group& group, int me);
    /// The bookkeeping at the start of every collective: finds @p group's prepared
    /// index (an ss::Error if it was never prepared or I am not in it), counts the
    /// call there and describes it in @p info for the Watch (@p reduce: "sum" or
    /// "avg" for a reduction, else null). Returns the index.
    int begin_call(WaitInfo& info, const char* op, const Group& group, const Label& label, size_t count,
                   DType dt, const char* reduce = nullptr);
    /// The end of a run: every send received, then every rank told how many calls
    /// I made on each group, and their counts awaited (Watch::finish).
    void finish();
    /// An injected hang (Backend::stall): sleeps, answering nobody, until the rank
    /// that times out waiting for this one aborts the job; throws after the backstop.
    [[noreturn]] void stall(const std::string& why) const;
};

/// One communicator split of prepare(): the groups fresh[first, end) share no rank, so
/// one split call (MPI_Comm_split, ncclCommSplit) makes all of them.
struct SplitBatch {
    size_t first = 0;  ///< the batch's first group in the list
    size_t end = 0;    ///< one past its last
    int color = -1;    ///< this rank's group's place in the batch, -1 when it is in none
    int key = 0;       ///< this rank's index in that group
};

/// Cuts @p fresh (in order) into batches of groups that share no rank (the groups of
/// one GroupKind partition the world, so a mesh needs one batch per kind), with
/// @p rank's color and key in each; @p world ranks in all.
std::vector<SplitBatch> split_batches(const std::vector<const Group*>& fresh, int world, int rank);

/// The tracer for this rank: one per rank (make_tracers(world) in every process), or
/// exactly one; checks that it records @p rank. @p launcher names the caller in errors.
Tracer* pick_tracer(const std::vector<Tracer*>& tracers, int rank, int world, const char* launcher);

/// run_mpi and run_nccl (their contract is in mpi_backend.h): this process's rank
/// runs @p body over a @p B (MpiBackend or NcclBackend) that has prepared @p groups,
/// then finishes; any error prints "rank R: <message>" and ends the job (abort_world).
template <class B>
void run_rank(const char* launcher, const std::function<void(Comm&)>& body, const CommOptions& opts,
              const std::vector<Group>& groups) {
    const int rank = mpi_world_rank(), world = mpi_world_size();
    try {
        Tracer* tracer = pick_tracer(opts.tracers, rank, world, launcher);
        auto backend = std::make_unique<B>(opts.timeout_seconds);
        B& mine = *backend;
        mine.prepare(groups);
        Comm comm(rank, world, std::move(backend), tracer);
        body(comm);
        mine.finish();
    } catch (const std::exception& e) {  // the backend is gone by now (nccl: its communicators aborted)
        abort_world(e.what());
    } catch (...) {
        abort_world("an exception that is not a std::exception");
    }
}

}  // namespace ss::mpi
