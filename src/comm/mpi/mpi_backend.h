// mpi_backend.h — the `mpi` backend: one process per rank under mpirun, MPI's collectives.
//
// Where the threads backend writes its collectives by hand, this one hands
// every call to MPI (Open MPI), so the same training run works across
// processes and machines:
//
//     Comm call        MPI call (non-blocking form, so that a wait can time out)
//     all_reduce       MPI_Allreduce            (MPI_Iallreduce, MPI_SUM)
//     all_gather       MPI_Allgather            (MPI_Iallgather)
//     reduce_scatter   MPI_Reduce_scatter_block (MPI_Ireduce_scatter_block, MPI_SUM)
//     all_to_all       MPI_Alltoall             (MPI_Ialltoall)
//     broadcast        MPI_Bcast                (MPI_Ibcast)
//     barrier          MPI_Barrier              (MPI_Ibarrier)
//     send             MPI_Isend from a copy of the data: returns at once, never waits
//     recv             MPI_Improbe (checks the size and type) + MPI_Mrecv
//
// Communicators. A Group becomes an MPI communicator made by MPI_Comm_split,
// which every rank of the WORLD must call together, in the same order. So they
// cannot be made lazily inside a call that only the group's ranks make: every
// group is created up front, by MpiBackend::prepare() (run_mpi does it with the
// groups you list, e.g. mesh_groups(mesh)). A call on a group that was not
// prepared throws ss::Error saying so.
//
// bf16. MPI has no bf16 type. Reductions widen bf16 to fp32, reduce with
// MPI_FLOAT and round back once per element: exactly the contract's "accumulate
// in fp32, round once" (backend.h). ReduceOp::avg is MPI_SUM, then a division
// by n. Collectives that only move data move bf16 as MPI_UINT16_T.
//
// Timeouts. A blocking MPI collective cannot time out, so each call starts the
// non-blocking form and polls MPI_Test until it completes or
// CommOptions::timeout_seconds have passed. While it polls, a rank answers a
// small side channel ("where are you?"); on a timeout it asks the missing
// members and throws an ss::Error naming the call, the group and the ranks
// that did not arrive, with where each of them is waiting instead. A rank that
// returns from its work tells the others how many calls it made on each group,
// so a collective it skipped fails at once. An MPI collective that has started
// cannot be cancelled, so after such an error the only safe end is
// MPI_Abort: run_mpi prints "rank R: <message>" and aborts the whole job, and
// no rank is left waiting. (Reductions run in MPI's fixed order for a given
// size and group, so a run is repeatable; the order is not the threads
// backend's ring, so the two may differ in the last bits.)
//
// Asynchronous form. Comm::start_* posts the same non-blocking MPI collective
// and returns; Comm::wait finishes it through the same Watch (same timeout, same
// report). The call's fp32 scratch belongs to its request, so several may be in
// flight at once. Progress is partial, and this is Open MPI's nature, not a
// choice: with no progress thread (the process is MPI_THREAD_FUNNELED, and the
// backend starts none), a non-blocking collective advances only while the rank
// is inside an MPI call. What overlaps is the peers' arrival and whatever
// moves during the rank's other MPI calls; a large transfer mostly moves in
// wait(). The trace's exposed_us shows how much stayed in the wait.
// mpi_backend.cpp says what happens to calls in flight when a rank fails.
//
// Run it (every process runs the same program; MPI gives each its rank):
//
//     mpirun --allow-run-as-root --oversubscribe -np 4 build/shardscope train ... --backend mpi
//
//     ss::ProcessMesh mesh(ss::mpi_world_size(), shape);
//     auto tracers = ss::make_tracers(mesh.world_size());   // only [mpi_world_rank()] is used here
//     ss::run_mpi([&](ss::Comm& comm) { ... }, {60, {tracers[ss::mpi_world_rank()].get()}},
//                 ss::mesh_groups(mesh));
//     ss::write_chrome_trace_mpi("out/trace.json", *tracers[ss::mpi_world_rank()], other);
//
// Everything here can be included in any build; without MPI, run_mpi and the
// others throw an ss::Error that says how to get it (unavailable/mpi_unavailable.cpp).
// The code: mpi_session.h (what the mpi and nccl backends share: set up, the
// prepared groups, the end of a run, run_mpi's body), mpi_backend.cpp (the
// collectives), mpi_watch.cpp (waits and the side channel), mpi_p2p.cpp
// (send/recv), mpi_launch.cpp (MPI itself), mpi_trace.cpp (one trace per job).
// docs/backends.md compares the three backends.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "comm/backend.h"
#include "comm/comm.h"
#include "mesh/process_mesh.h"

namespace ss {

class Tracer;

/// True in a build with the mpi backend (CMake found MPI).
bool mpi_available();

/// This process's rank in MPI_COMM_WORLD. Initialises MPI if needed (and
/// finalises it at exit). Throws ss::Error in a build without MPI.
int mpi_world_rank();

/// Number of processes in MPI_COMM_WORLD (what `mpirun -np` started; 1 without
/// mpirun). Initialises MPI if needed. Throws ss::Error in a build without MPI.
int mpi_world_size();

/// Every group of every GroupKind of @p mesh, each distinct rank list once
/// (world first): what run_mpi must prepare so that a strategy may use any of them.
inline std::vector<Group> mesh_groups(const ProcessMesh& mesh) {
    std::vector<Group> out = mesh.groups(GroupKind::world);
    std::set<std::vector<int>> seen = {out[0].ranks};
    for (GroupKind kind : all_group_kinds())
        for (Group& g : mesh.groups(kind))
            if (seen.insert(g.ranks).second) out.push_back(std::move(g));
    return out;
}

/// Open MPI's own blocking collective on MPI_COMM_WORLD, for comparison with the
/// mpi backend (`shardscope bench comm --backend mpi`): @p op is "all_reduce"
/// (sum), "reduce_scatter", "all_gather", "all_to_all" or "broadcast" (root 0);
/// counts as Comm's (per rank for the three block collectives; fp32 or bf16,
/// bf16 reductions are not offered). Collective: every process calls it.
/// Returns this process's seconds inside the call.
double mpi_reference_collective(const std::string& op, const void* send, void* recv, size_t count, DType dt);

/// Runs @p body as this process's rank, with the mpi backend: every process of
/// the job calls run_mpi, each with its own rank (MPI's) and the same arguments.
///
/// - Initialises MPI if needed (MPI_Init_thread, MPI_THREAD_FUNNELED; MPI_Finalize
///   runs once, at exit).
/// - Creates a communicator for the world group and for every group in
///   @p groups_to_prepare (collective: the same list, in the same order, on every
///   rank; see mesh_groups()).
/// - The Comm traces into opts.tracers[rank] when the vector has one entry per
///   rank (make_tracers(world) in every process), or into opts.tracers[0] when it
///   has exactly one; that Tracer's rank() must be this process's rank. Empty: no tracing.
/// - Every wait ends after opts.timeout_seconds with an ss::Error naming the call,
///   the group and the missing ranks.
/// - When @p body returns, completes this rank's sends and waits (without a
///   timeout) until every rank has returned from its body.
/// - If @p body (or a collective) throws on any rank, that rank prints
///   "rank R: <message>" to stderr and calls MPI_Abort(MPI_COMM_WORLD, 1), which
///   ends every process of the job: no rank is left waiting. So run_mpi either
///   returns on every rank or does not return at all.
void run_mpi(const std::function<void(Comm&)>& body, const CommOptions& opts = {},
             const std::vector<Group>& groups_to_prepare = {});

/// Writes ONE Chrome trace for the whole job: every rank calls it with its own
/// Tracer (collective over MPI_COMM_WORLD); rank 0 gathers all ranks' events
/// (MPI_Gather of the sizes, then MPI_Gatherv) and writes @p path with
/// write_chrome_trace(), with @p other_data as "otherData".
///
/// Clocks: each process's Tracer has its own origin. At the call, all ranks meet
/// at a barrier and each reads its clock; rank r's events are shifted by
/// (rank 0's reading - rank r's reading), so every lane is on rank 0's clock,
/// to within the barrier's exit skew (microseconds on one machine, a network
/// latency across machines).
///
/// If rank 0 cannot write the file, every rank throws the same ss::Error. If a
/// rank does not arrive within @p timeout_seconds, the waiting rank prints the
/// reason and calls MPI_Abort, as run_mpi does.
void write_chrome_trace_mpi(const std::string& path, const Tracer& mine,
                            const nlohmann::json& other_data = nlohmann::json::object(),
                            double timeout_seconds = 60);

/// One process's side of the mpi backend (made by run_mpi). Defined only in
/// builds with MPI (src/comm/mpi/).
///
/// The constructor, prepare() and finish() are collective over MPI_COMM_WORLD:
/// every process calls them, in the same order. A collective that fails or times
/// out leaves MPI in a state that only MPI_Abort can end; run_mpi does that.
class MpiBackend final : public Backend {
public:
    /// This process's side; prepares the world group. Initialises MPI if needed.
    /// Every wait ends after @p timeout_seconds (> 0).
    explicit MpiBackend(double timeout_seconds = 60);
    /// Frees the communicators (outstanding sends complete in the background).
    ~MpiBackend() override;
    MpiBackend(const MpiBackend&) = delete;
    MpiBackend& operator=(const MpiBackend&) = delete;

    /// This process's rank in MPI_COMM_WORLD.
    int rank() const;
    /// Number of processes in MPI_COMM_WORLD.
    int world_size() const;

    /// Creates one communicator per distinct rank list in @p groups (lists already
    /// prepared are skipped). Collective over the world: every rank passes the same
    /// list in the same order (checked; a rank that differs gets an ss::Error).
    /// Groups that share no rank are made by one MPI_Comm_split together.
    void prepare(const std::vector<Group>& groups);
    /// True if @p group's rank list has been prepared.
    bool prepared(const Group& group) const;

    /// The end of a run (collective): completes this rank's sends (within the
    /// timeout), tells every other rank how many calls it made on each group
    /// (so one still waiting in a call this rank skipped fails at once), and
    /// waits for every other rank to finish too.
    void finish();

    const char* name() const override { return "mpi"; }
    SS_BACKEND_CALLS  // all_reduce ... barrier, stall: the Backend interface (backend.h)

    /// Posts @p call's MPI non-blocking collective and returns at once; the
    /// Request's wait() finishes it through the Watch (same timeout and report as
    /// the blocking form) and copies the result out. send runs at once (it never
    /// waits); recv is deferred to wait(). See mpi_backend.cpp for why, and for
    /// how much of a call actually moves before its wait.
    std::unique_ptr<Request> start(const Call& call) override;
    /// The rank is leaving by an exception with calls in flight: their waits
    /// (CommHandle's destructor, ~Comm) still finish them, and one that cannot
    /// ends the job at once (MPI_Abort) rather than return to free buffers MPI writes.
    void rank_failing() override;

    /// The MPI state (the session of mpi_session.h, a communicator per group):
    /// internal, defined in mpi_backend.cpp.
    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace ss
