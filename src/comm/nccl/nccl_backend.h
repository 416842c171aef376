// nccl_backend.h — the `nccl` backend: one process per GPU under mpirun, NCCL's collectives.
//
// The mpi backend moves host memory with MPI; this one moves GPU memory with
// NCCL, the library every large training run uses. MPI is still there, for
// what NCCL does not do: starting the processes, handing out the NCCL ids,
// waiting with a deadline and naming who is missing, and point-to-point.
//
//     Comm call        what runs                                   on
//     all_reduce       ncclAllReduce (ncclSum; avg: ncclAvg)        the group's NCCL communicator
//     all_gather       ncclAllGather
//     reduce_scatter   ncclReduceScatter (ncclSum; avg: ncclAvg)
//     all_to_all       one ncclSend + one ncclRecv per member, inside ncclGroupStart/End
//     broadcast        ncclBroadcast
//     barrier          ncclAllReduce of one float (so is every call with count 0)
//     send             a copy to the host + MPI_Isend: returns at once, never waits
//     recv             MPI_Improbe (checks size and dtype) + MPI_Mrecv, then a copy to buf
//
// Why send/recv are not ncclSend/ncclRecv. The contract (backend.h) says a send
// never waits for its receiver and that a recv takes messages by their label's
// key, in any order. NCCL matches point-to-point messages in the order they
// were posted, and an ncclSend does not finish until its peer has posted the
// ncclRecv, so "send right, then recv from the left" on a ring of big messages
// would hang, and a pipeline stage could not take micro-batch 3's activation
// before micro-batch 1's gradient. So send/recv go the mpi backend's way, through
// the host. (A version with ncclSend/ncclRecv needs the two sides to agree on the
// order of their messages, as a fused pipeline schedule does.)
//
// Communicators. Process r picks GPU (local rank on its node) % (GPUs it sees);
// rank 0 asks NCCL for a unique id (ncclGetUniqueId), MPI_Bcast sends it to all,
// and each process joins the world communicator (ncclCommInitRankConfig).
// Every other group is cut from the world by ncclCommSplit, which, like
// MPI_Comm_split, every world rank must call, in the same order; so groups are
// made up front by NcclBackend::prepare (run_nccl does it with the groups you
// list, e.g. mesh_groups(mesh)), the groups of one GroupKind by one split
// (color = which of them I am in; NCCL_SPLIT_NOCOLOR for a rank in none).
//
// Streams. Collectives run on a communication stream of the backend's own. Each
// call records an event on the caller's stream (ss::current_stream(), or the
// legacy default stream on the CPU device), makes the communication stream wait
// for it (cudaStreamWaitEvent) so NCCL reads what the caller's kernels wrote,
// runs the NCCL call between two timing events, and waits for it before
// returning: the Backend contract is synchronous, host code may read the result
// right after. last_gpu_seconds() is the time between the two events: the
// collective on the GPU, including the time it waited there for slower members.
//
// Buffers. Callers may pass device memory (cudaMalloc), managed memory
// (cudaMallocManaged, what core/device.h allocates for --device cuda) or plain
// host memory (a std::vector). cudaPointerGetAttributes tells which: device
// memory on this process's GPU and managed memory go to NCCL as they are; any
// other pointer is staged through a device buffer of the backend's (copy in,
// collective, copy out), so a CPU-device run works too, only slower.
//
// bf16. NCCL can sum bf16 (ncclBfloat16), but then every partial sum is
// rounded to bf16, which breaks the contract's "accumulate in fp32, round once".
// So bf16 reductions widen to fp32 on the host (exact), sum fp32 with NCCL and
// round back on the host once per element (reduce_kernels.h), as the mpi
// backend does; the price is a trip through host memory. Calls that only move
// data move every dtype as bytes (ncclUint8, count x element size).
//
// avg. fp32 avg is ncclAvg, which NCCL computes for floats as the sum of
// x * (1/n). For n a power of two, 1/n is exact and that is the same number as
// the sum divided by n; otherwise it may differ from the other backends in the
// last bit. bf16 avg divides once, on the host, exactly as the contract says.
//
// Timeouts. The communicators are non-blocking (ncclConfig_t.blocking = 0): no
// NCCL call waits for another rank, and each wait polls ncclCommGetAsyncError
// and cudaEventQuery on the call's end event against CommOptions::timeout_seconds,
// through the mpi backend's Watch (mpi_watch.cpp), which answers the MPI
// side channel meanwhile. On a timeout the error names the call, the group and
// the members that did not arrive, with where each of them waits instead
// ("desync: all_reduce on tp group [0,1] (grad, layer 5): rank 1 did not arrive
// within 60 s; rank 1 is waiting in ..."). Then every communicator is
// aborted (ncclCommAbort: a collective stuck on the GPU cannot be cancelled
// otherwise) and run_nccl prints "rank R: <message>" and calls MPI_Abort,
// which ends the whole job, as run_mpi does.
//
// Run it (one process per GPU; on several nodes, the same per node):
//
//     mpirun -np 8 build/shardscope train ... --backend nccl --device cuda
//
//     ss::ProcessMesh mesh(ss::mpi_world_size(), shape);
//     ss::run_nccl([&](ss::Comm& comm) {
//         ss::DeviceScope gpu(ss::Device::cuda, ss::nccl_local_gpu());  // the same GPU as NCCL's
//         ...
//     }, {60, {tracers[ss::mpi_world_rank()].get()}}, ss::mesh_groups(mesh));
//
// Everything here can be included in any build; without CUDA, NCCL or MPI,
// run_nccl and the others throw an ss::Error that says what is missing
// (unavailable/nccl_unavailable.cpp). The code: nccl_setup.cpp (GPU,
// communicators, prepare), nccl_backend.cpp (the collectives), nccl_p2p.cpp
// (send/recv), nccl_launch.cpp (run_nccl, the error messages); nccl_detail.h
// is what they share, and the MPI side is the mpi backend's session
// (src/comm/mpi/mpi_session.h). docs/backends.md compares the three backends.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/backend.h"
#include "comm/comm.h"
#include "comm/mpi/mpi_backend.h"  // mesh_groups, mpi_world_rank, mpi_world_size

namespace ss {

/// True in a build with the nccl backend (CMake found CUDA, NCCL and MPI).
bool nccl_available();

/// The GPU this process's nccl backend uses: its local rank on the node modulo
/// the GPUs it sees. Valid once an NcclBackend exists (inside run_nccl's body);
/// throws ss::Error before that, and in a build without the nccl backend.
int nccl_local_gpu();

/// Runs @p body as this process's rank, with the nccl backend: every process of
/// the job calls run_nccl, each with its own rank (MPI's) and the same arguments.
/// The same contract as run_mpi (mpi_backend.h):
///
/// - Initialises MPI if needed; picks this process's GPU (nccl_local_gpu()) and
///   makes it current (cudaSetDevice); creates the world communicator and one per
///   group in @p groups_to_prepare (collective: the same list, in the same order,
///   on every rank; see mesh_groups()).
/// - The body should run its kernels on that GPU: `ss::DeviceScope
///   gpu(ss::Device::cuda, ss::nccl_local_gpu())` at its start.
/// - The Comm traces into opts.tracers[rank] (one per rank) or opts.tracers[0]
///   (exactly one); that Tracer's rank() must be this process's rank. Empty: no tracing.
/// - Every wait ends after opts.timeout_seconds with an ss::Error naming the call,
///   the group and the missing ranks.
/// - When @p body returns, completes this rank's sends and waits (without a
///   timeout) until every rank has returned from its body.
/// - If @p body (or a collective) throws on any rank, that rank aborts its NCCL
///   communicators, prints "rank R: <message>" to stderr and calls
///   MPI_Abort(MPI_COMM_WORLD, 1): run_nccl returns on every rank or on none.
void run_nccl(const std::function<void(Comm&)>& body, const CommOptions& opts = {},
              const std::vector<Group>& groups_to_prepare = {});

/// One process's side of the nccl backend (made by run_nccl). Defined only in
/// builds with the nccl backend (src/comm/nccl/).
///
/// The constructor, prepare() and finish() are collective over MPI_COMM_WORLD:
/// every process calls them, in the same order. A collective that fails or times
/// out aborts every NCCL communicator of this process; after that every call
/// throws, and only MPI_Abort (run_nccl) ends the job cleanly.
class NcclBackend final : public Backend {
public:
    /// This process's side: picks its GPU, makes the communication stream and the
    /// world communicator. Initialises MPI if needed. Every wait ends after
    /// @p timeout_seconds (> 0). Throws ss::Error when this process sees no GPU, or
    /// when a node runs more processes than it has GPUs.
    explicit NcclBackend(double timeout_seconds = 60);
    /// Destroys the communicators (ncclCommFinalize + ncclCommDestroy after a clean
    /// finish(), else ncclCommAbort, which never waits for another rank).
    ~NcclBackend() override;
    NcclBackend(const NcclBackend&) = delete;
    NcclBackend& operator=(const NcclBackend&) = delete;

    /// This process's rank in MPI_COMM_WORLD (and in the world communicator).
    int rank() const;
    /// Number of processes in MPI_COMM_WORLD.
    int world_size() const;
    /// The CUDA device this process uses.
    int gpu() const;

    /// Creates one NCCL communicator per distinct rank list in @p groups (lists
    /// already prepared are skipped). Collective over the world: every rank passes
    /// the same list in the same order (checked first, with a timeout). Groups
    /// that share no rank are made by one ncclCommSplit together.
    void prepare(const std::vector<Group>& groups);
    /// True if @p group's rank list has been prepared.
    bool prepared(const Group& group) const;

    /// The end of a run (collective): completes this rank's sends, tells every
    /// other rank how many calls it made on each group, and waits for every other
    /// rank to finish too (as MpiBackend::finish).
    void finish();

    /// Seconds the last collective took on the GPU, between CUDA events recorded
    /// on the communication stream just before and just after the NCCL call
    /// (staging copies and the host's wait excluded; the time the GPU waited for
    /// slower members included). -1 before the first collective and after a
    /// send or recv (they do not run on the GPU stream).
    double last_gpu_seconds() const override;

    const char* name() const override { return "nccl"; }
    SS_BACKEND_CALLS  // all_reduce ... barrier, stall: the Backend interface (backend.h)

    /// The NCCL, CUDA and MPI state: internal, defined in nccl_detail.h, which
    /// only the backend's own files include.
    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace ss
