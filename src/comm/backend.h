// backend.h — the seam between "which collective" and "how the bytes move".
//
// Comm (comm.h) is what the rest of ShardScope calls. It checks the arguments,
// times the call for the trace and hands it to a Backend, the one abstract
// interface in comm/. Each backend is one way of moving bytes:
//
//     threads   N ranks as threads of one process; the collectives are written
//               by hand over shared memory (threads_backend.cpp), to teach
//     mpi       one process per rank under mpirun; the collectives are MPI's
//     nccl      one process per GPU; the collectives are NCCL's
//
// A Backend object belongs to one rank and is called from that rank's thread
// only. All ranks of a world use the same backend: a group never mixes them.
//
// The contract every backend implements (Comm has already checked it):
//  - `group` contains the calling rank, has no duplicates and only ranks in
//    [0, world); `count` may be 0 (the call still synchronises the group).
//  - Element types: f32 and bf16 for reductions; any DType for the others.
//    bf16 reductions accumulate in fp32 and round to bf16 once per element.
//  - all_gather / reduce_scatter / all_to_all take a count PER RANK, so every
//    rank's block is the same size; callers pad (ZeRO pads to a multiple of n).
//  - Reductions are in a fixed order, so a run is bit-for-bit repeatable.
//  - send never waits for the receiver: it returns once the data has been
//    copied out (the threads backend buffers it; an MPI backend copies it and
//    uses MPI_Isend). So "send to the right, then recv from the left" on every
//    rank of a ring (ring attention, pipeline exchanges) cannot deadlock.
//    Messages between two ranks arrive in the order they were sent.
//  - Every wait ends: after the timeout, or at once when another rank failed,
//    with an ss::Error that names the call, the group and the missing ranks.
//
// Asynchronous calls. Every call also has a start form (Comm::start_*): the
// backend is handed the whole call as a Call and returns a Request, which the
// rank waits for later. The default start() runs the call at once, on the
// caller's thread, and returns it finished (a recv runs in wait() instead,
// where the data is needed, so that posting it early cannot wait for a send
// the rank has yet to make): correct for any backend, with nothing hidden
// (nccl uses it). A backend that can progress calls while the rank computes
// overrides it: threads, a progress thread per group (threads/progress.h);
// mpi, the call's MPI non-blocking collective posted at start and finished in
// wait() (mpi/mpi_backend.cpp; Open MPI moves it mostly inside MPI calls, so
// the overlap is partial). Either way the calls on one group run in the order
// they were issued, the blocking ones included, so results are bit-identical
// to the blocking form.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "comm/label.h"
#include "core/dtype.h"
#include "mesh/group.h"

namespace ss {

/// Which call a Call is.
enum class CallOp { all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send, recv, barrier };

/// "all_reduce", ... : the op's name, as traces and errors spell it.
const char* call_op_name(CallOp op);

/// One call described whole, as Comm::start_* hands it to Backend::start.
/// The buffers must stay valid, and unwritten by the rank, until it is waited for.
struct Call {
    CallOp op = CallOp::barrier;      ///< which call
    const void* send = nullptr;       ///< input: send buffer (all_reduce, broadcast, recv: unused)
    void* recv = nullptr;             ///< output: recv buffer; the buffer itself for all_reduce and broadcast
    size_t count = 0;                 ///< elements (per rank for all_gather, reduce_scatter, all_to_all)
    DType dt = DType::f32;            ///< element type
    Group group;                      ///< the group; {axis, {me, peer}} for send, {axis, {peer, me}} for recv
    ReduceOp reduce = ReduceOp::sum;  ///< reductions only
    int root = -1;                    ///< broadcast only: the root's index in the group
    int peer = -1;                    ///< send/recv only: the other rank
    Label label;                      ///< what the bytes are
};

/// A call a backend has started: wait() returns once it has finished.
class Request {
public:
    virtual ~Request() = default;
    /// Returns once the call has finished; throws its ss::Error if it failed
    /// (timeouts and desync reports name the rank, the call and the group as
    /// the blocking form's do). Called once.
    virtual void wait() = 0;
    /// Its handle was dropped before its wait (the rank is leaving by an exception, or the
    /// Comm is being destroyed): end whatever still reads or writes the caller's buffers,
    /// which die next. The default waits for the call; a receive that has not started (a
    /// deferred one: nothing posted, no buffer touched) does nothing, so a failing rank does
    /// not wait a whole timeout for a message its peer will not send. A later wait() (Comm's
    /// wait_all) still runs it. Throws like wait().
    virtual void drop() { wait(); }
    /// When the call began to run (after the calls queued before it on its group).
    std::chrono::steady_clock::time_point started;
    /// When it finished (valid after wait()).
    std::chrono::steady_clock::time_point finished;
    /// The call's own time on the device (Backend::last_gpu_seconds, read as soon as the
    /// call ran, before another call can overwrite it), or -1 when not measured. Valid
    /// after wait(); the trace event's gpu_us.
    double gpu_seconds = -1;
};

/// A Request for a call that already ran, from @p started to now, that took @p gpu_seconds
/// on the device (-1: not measured); wait() returns at once.
std::unique_ptr<Request> finished_request(std::chrono::steady_clock::time_point started,
                                          double gpu_seconds = -1);

/// How one rank's collectives are carried out. See the file comment for the contract.
class Backend {
public:
    virtual ~Backend() = default;

    /// "threads", "mpi", "nccl".
    virtual const char* name() const = 0;

    /// In place: buf (count elements) becomes the reduction of every rank's buf.
    virtual void all_reduce(void* buf, size_t count, DType dt, const Group& group, ReduceOp op,
                            const Label& label) = 0;
    /// recv (n * count_per_rank) = the ranks' send blocks in group order.
    virtual void all_gather(const void* send, void* recv, size_t count_per_rank, DType dt,
                            const Group& group, const Label& label) = 0;
    /// recv (count_per_rank) = block `my group index` of the reduction of the ranks' send (n * count_per_rank).
    virtual void reduce_scatter(const void* send, void* recv, size_t count_per_rank, DType dt,
                                const Group& group, ReduceOp op, const Label& label) = 0;
    /// Block j of my send goes to group member j; block j of my recv comes from member j.
    virtual void all_to_all(const void* send, void* recv, size_t count_per_rank, DType dt,
                            const Group& group, const Label& label) = 0;
    /// buf on every rank becomes buf of group member `root_index`.
    virtual void broadcast(void* buf, size_t count, DType dt, int root_index, const Group& group,
                           const Label& label) = 0;
    /// Point-to-point: count elements to global rank `peer`; returns without waiting for it.
    virtual void send(const void* buf, size_t count, DType dt, int peer, const std::string& axis,
                      const Label& label) = 0;
    /// Point-to-point: count elements from global rank `peer`.
    virtual void recv(void* buf, size_t count, DType dt, int peer, const std::string& axis,
                      const Label& label) = 0;
    /// Returns once every member of the group has called it.
    virtual void barrier(const Group& group, const Label& label) = 0;

    /// Stops communicating, as a rank stuck in its own code does (an injected
    /// `hang`, src/train/fault.h): takes part in nothing and answers nobody.
    /// The other ranks' waits then time out and name this rank. Threads: wakes
    /// and throws ss::Error when the run fails, so no thread is left behind.
    /// MPI: sleeps; the MPI_Abort of the rank that times out ends the process.
    /// Either way, if nothing has ended it after stall_backstop_seconds(timeout),
    /// throws ss::Error with @p why.
    virtual void stall(const std::string& why) = 0;

    /// Seconds the last call took on the device, measured with CUDA events; -1
    /// when not measured (threads, mpi, and nccl's send/recv). Comm puts it in
    /// the call's trace event as gpu_us (trace.h), beside the host's wall time:
    /// read right after a blocking call, and by the default start() right after
    /// the call it runs (Request::gpu_seconds), since the next call overwrites it.
    virtual double last_gpu_seconds() const { return -1; }

    /// Starts @p call and returns at once (or, by default, runs it now and
    /// returns it finished: see the file comment). Calls on one group run in
    /// issue order, blocking and started ones alike.
    virtual std::unique_ptr<Request> start(const Call& call);

    /// This rank is leaving its work by an exception while started calls are in
    /// flight: end the waits of every rank now, since this one will not come to
    /// its next call (threads: as a failure; the rank's own error follows).
    virtual void rank_failing() {}

    /// Runs @p call now with the blocking calls above (what the default start() does).
    void run(const Call& call);
};

/// Declares, inside a backend class, the calls of the Backend interface that
/// every backend implements (all_reduce ... barrier, and stall), so that their
/// signatures stand once, in Backend above, and not again in each backend. The
/// backend defines them in its own .cpp files; name() and, where it measures
/// one, last_gpu_seconds() it declares itself.
#define SS_BACKEND_CALLS                                                                                  \
    void all_reduce(void* buf, size_t count, DType dt, const Group& group, ReduceOp op,                   \
                    const Label& label) override;                                                         \
    void all_gather(const void* send, void* recv, size_t count_per_rank, DType dt, const Group& group,    \
                    const Label& label) override;                                                         \
    void reduce_scatter(const void* send, void* recv, size_t count_per_rank, DType dt, const Group& group, \
                        ReduceOp op, const Label& label) override;                                        \
    void all_to_all(const void* send, void* recv, size_t count_per_rank, DType dt, const Group& group,    \
                    const Label& label) override;                                                         \
    void broadcast(void* buf, size_t count, DType dt, int root_index, const Group& group,                 \
                   const Label& label) override;                                                          \
    void send(const void* buf, size_t count, DType dt, int peer, const std::string& axis,                 \
              const Label& label) override;                                                               \
    void recv(void* buf, size_t count, DType dt, int peer, const std::string& axis,                       \
              const Label& label) override;                                                               \
    void barrier(const Group& group, const Label& label) override;                                        \
    void stall(const std::string& why) override;

/// How long Backend::stall waits for the other ranks to notice before it gives
/// up: well past their own timeout, which each counts from its arrival at the
/// call (a rank may arrive much later than the stalled one stopped).
inline double stall_backstop_seconds(double timeout_seconds) { return 2 * timeout_seconds + 10; }

}  // namespace ss
