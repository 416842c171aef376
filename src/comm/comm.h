// comm.h — Comm: the collectives one rank calls, on a Group, tagged with a Label.
//
// This is the whole interface the strategies (src/parallel/) use to talk to
// other ranks. A Comm is bound to one rank: its global rank id, the world size,
// a Backend that moves the bytes (backend.h) and, optionally, a Tracer that
// records every call (trace.h). Each call:
//   1. checks its arguments (the rank is in the group, the root exists, the
//      buffers do not overlap where they must not) and throws ss::Error if not;
//   2. hands the call to the backend;
//   3. if tracing, records op, group, bytes, label, start and duration, and
//      the time on the device where the backend measured it (nccl: CUDA events).
//
// Counts are in elements. For all_gather, reduce_scatter and all_to_all the
// count is PER RANK, so every rank's block has the same size by construction;
// a caller whose tensor does not divide by the group size pads it (ZeRO pads
// the flat parameter buffer to a multiple of dp). A count of 0 is allowed.
//
// Reductions (all_reduce, reduce_scatter) take f32 or bf16. bf16 values are
// summed in fp32 and rounded to bf16 once per element at the end, so the
// result does not depend on how many partial sums the algorithm kept.
// The reduction order is fixed by the group's order, so a run is bit-for-bit
// repeatable; it may differ in the last bits from a serial left-to-right sum.
//
// Example (data parallel: average the gradients over dp):
//
//     Label label{Payload::grad, /*layer=*/-1, Phase::bwd, /*microbatch=*/-1, step};
//     comm.all_reduce(grads, n, dp_group, ReduceOp::avg, label);
//
// Asynchronous form. Every collective and send/recv also has a start_* form
// that returns a CommHandle at once; the call runs while the rank computes,
// and wait(handle) returns when it is done (wait_all: every handle not yet
// waited for). Until then its buffers belong to the call: the rank must not
// read its output or write its input. Calls on one group run in the order the
// rank issued them, blocking ones included, so a run gives the same bits with
// or without start_* (the reduction order is the algorithm's, not the timing's):
//
//     CommHandle h = comm.start_all_reduce(bucket, n, DType::f32, dp_group, ReduceOp::avg, label);
//     ... backward of earlier layers ...
//     comm.wait(h);                     // the bucket is averaged now
//
// The trace event of a started call is recorded when it is waited for, with
// when it was issued, when it ran, and how long the rank was blocked in wait:
// its exposed time (TraceEvent::issued_us, exposed_us). times() sums them.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/backend.h"
#include "comm/label.h"
#include "core/dtype.h"
#include "mesh/group.h"

namespace ss {

class Tracer;

/// How a world of ranks is started (run_threads; later the mpi launcher).
struct CommOptions {
    /// Every wait for another rank ends after this long with an ss::Error that
    /// names the collective, the group and the ranks that did not arrive.
    double timeout_seconds = 60;
    /// One Tracer per rank (see make_tracers), or empty for no tracing.
    std::vector<Tracer*> tracers;
    /// Emulated links (threads backend; comm/links.h makes it from --link): the
    /// least time, in seconds, a call @p op of @p bytes (per rank, as
    /// collective_bytes counts them) on the group @p ranks may take. Empty: none.
    std::function<double(const char* op, uint64_t bytes, const std::vector<int>& ranks)> link_seconds;
};

/// Thrown by a rank's work to end it at once, as if it had returned: run_threads
/// marks the rank finished, not failed, so the others see a rank that vanished
/// (an injected `exit` fault, src/train/fault.h). Deliberately not a
/// std::exception, so no error handler on the way out catches it.
struct RankVanished {};

struct PendingCall;

/// A call started with Comm::start_*: give it to Comm::wait. Movable, not copyable;
/// an empty (default) handle is allowed in wait() and does nothing.
class CommHandle {
public:
    CommHandle();
    ~CommHandle();
    /// Takes @p other's call; @p other is left empty.
    CommHandle(CommHandle&& other) noexcept;
    /// Finishes this handle's own call if it is still pending, then takes @p other's.
    CommHandle& operator=(CommHandle&& other) noexcept;
    /// True while the handle holds a call not yet waited for.
    bool pending() const { return call_ != nullptr; }

private:
    friend class Comm;
    std::shared_ptr<PendingCall> call_;
};

/// Where one rank's communication time went since the last Comm::take_times().
struct CommTimes {
    double comm_s = 0;     ///< the union of the calls' run intervals: calls in flight together count once
    double exposed_s = 0;  ///< time the rank was blocked in blocking calls and in wait(): not computing
    int calls = 0;         ///< calls finished
};

/// The collectives of one rank. Not thread-safe: one rank, one thread.
class Comm {
public:
    /// @p rank: this rank's global id in [0, world_size). @p tracer may be null (no tracing).
    Comm(int rank, int world_size, std::unique_ptr<Backend> backend, Tracer* tracer = nullptr);
    ~Comm();
    Comm(const Comm&) = delete;
    Comm& operator=(const Comm&) = delete;

    /// This rank's global id.
    int rank() const { return rank_; }
    /// Number of ranks in the world.
    int world_size() const { return world_size_; }
    /// "threads", "mpi", ...
    const char* backend_name() const { return backend_->name(); }
    /// The tracer every call is recorded in, or null.
    Tracer* tracer() const { return tracer_; }
    /// Starts (non-null) or stops (null) tracing.
    void set_tracer(Tracer* tracer) { tracer_ = tracer; }
    /// All ranks, axis "world".
    Group world_group() const;

    /// In place: buf (count elements) becomes op over every group member's buf.
    void all_reduce(void* buf, size_t count, DType dt, const Group& group, ReduceOp op, const Label& label);
    /// The same on fp32 data.
    void all_reduce(float* buf, size_t count, const Group& group, ReduceOp op, const Label& label) {
        all_reduce(buf, count, DType::f32, group, op, label);
    }

    /// recv[j*count_per_rank ...] = send of group member j. recv holds n*count_per_rank.
    /// In place is allowed: send == recv + my_index*count_per_rank.
    void all_gather(const void* send, void* recv, size_t count_per_rank, DType dt, const Group& group,
                    const Label& label);
    /// The same on fp32 data.
    void all_gather(const float* send, float* recv, size_t count_per_rank, const Group& group,
                    const Label& label) {
        all_gather(send, recv, count_per_rank, DType::f32, group, label);
    }

    /// send holds n*count_per_rank; recv (count_per_rank) = block my_index of op over the members' send.
    void reduce_scatter(const void* send, void* recv, size_t count_per_rank, DType dt, const Group& group,
                        ReduceOp op, const Label& label);
    /// The same on fp32 data.
    void reduce_scatter(const float* send, float* recv, size_t count_per_rank, const Group& group,
                        ReduceOp op, const Label& label) {
        reduce_scatter(send, recv, count_per_rank, DType::f32, group, op, label);
    }

    /// send and recv hold n*count_per_rank each; block j of send goes to member j,
    /// block j of recv comes from member j. send and recv must not overlap.
    void all_to_all(const void* send, void* recv, size_t count_per_rank, DType dt, const Group& group,
                    const Label& label);
    /// The same on fp32 data.
    void all_to_all(const float* send, float* recv, size_t count_per_rank, const Group& group,
                    const Label& label) {
        all_to_all(send, recv, count_per_rank, DType::f32, group, label);
    }

    /// buf on every member becomes buf of the member at index @p root_index of the group.
    void broadcast(void* buf, size_t count, DType dt, int root_index, const Group& group, const Label& label);
    /// The same on fp32 data.
    void broadcast(float* buf, size_t count, int root_index, const Group& group, const Label& label) {
        broadcast(buf, count, DType::f32, root_index, group, label);
    }

    /// Sends count elements to global rank @p peer. Returns once the data is
    /// copied out, without waiting for the receiver. @p axis is the mesh axis
    /// the two ranks are neighbours on ("pp", "sp"), for the trace.
    void send(const void* buf, size_t count, DType dt, int peer, const Label& label, const std::string& axis);
    /// The same on fp32 data.
    void send(const float* buf, size_t count, int peer, const Label& label, const std::string& axis) {
        send(buf, count, DType::f32, peer, label, axis);
    }
    /// Receives count elements from global rank @p peer (count and dtype must match the send).
    void recv(void* buf, size_t count, DType dt, int peer, const Label& label, const std::string& axis);
    /// The same on fp32 data.
    void recv(float* buf, size_t count, int peer, const Label& label, const std::string& axis) {
        recv(buf, count, DType::f32, peer, label, axis);
    }

    /// Returns once every member of the group has called it.
    void barrier(const Group& group, const Label& label = {});

    /// all_reduce, started: returns at once (see "Asynchronous form" above).
    CommHandle start_all_reduce(void* buf, size_t count, DType dt, const Group& group, ReduceOp op,
                                const Label& label);
    /// all_gather, started.
    CommHandle start_all_gather(const void* send, void* recv, size_t count_per_rank, DType dt, const Group& group,
                                const Label& label);
    /// reduce_scatter, started.
    CommHandle start_reduce_scatter(const void* send, void* recv, size_t count_per_rank, DType dt,
                                    const Group& group, ReduceOp op, const Label& label);
    /// all_to_all, started.
    CommHandle start_all_to_all(const void* send, void* recv, size_t count_per_rank, DType dt, const Group& group,
                                const Label& label);
    /// broadcast, started.
    CommHandle start_broadcast(void* buf, size_t count, DType dt, int root_index, const Group& group,
                               const Label& label);
    /// send, started: the link time (emulated links) passes on the progress thread, not the rank's.
    CommHandle start_send(const void* buf, size_t count, DType dt, int peer, const Label& label,
                          const std::string& axis);
    /// recv, posted early: buf is filled by the time wait() returns.
    CommHandle start_recv(void* buf, size_t count, DType dt, int peer, const Label& label, const std::string& axis);
    /// Returns once @p handle's call has finished (at once for an empty handle), and
    /// empties the handle; throws the call's ss::Error if it failed.
    void wait(CommHandle& handle);
    /// wait() for every call this rank started and has not waited for, oldest first.
    void wait_all();
    /// Calls started and not yet waited for.
    int in_flight() const { return int(in_flight_.size()); }
    /// The communication time since the last take_times() (or the start), and starts again.
    CommTimes take_times();

    /// Calls @p hook once, at the start of this rank's next collective or
    /// send/recv (before any check or wait), with the call described as errors
    /// describe it: "all_gather on dp group [0,1] (param, step 3, layer 0, fwd)".
    /// The hook may throw, which fails that call. For injected faults
    /// (src/train/fault.h), which strike at a rank's next call so that their
    /// message can name it. An empty @p hook removes a pending one.
    void before_next_call(std::function<void(const std::string& call)> hook) { next_call_hook_ = std::move(hook); }

    /// Stops communicating, as a rank stuck in its own code does: see Backend::stall.
    void stall(const std::string& why) { backend_->stall(why); }

private:
    void begin(const char* op, const Group& group, const Label& label);  // run_hook, then check_group
    void check(const Call& call);                    // begin() and the op's argument checks
    CommHandle launch(Call call);                    // Backend::start, and remember it
    void finish(PendingCall& p, double wait_start_us);  // trace it, count it (exposed: its run inside the wait)
    template <class Fn>
    void timed(const char* op, const Group& group, size_t count, DType dt, const Label& label, Fn&& call,
               int peer = -1);  // the backend's call, traced
    void run_hook(const char* op, const Group& group, const Label& label);
    void check_group(const char* op, const Group& group) const;
    void check_peer(const char* op, int peer) const;
    void trace(const char* op, const Group& group, size_t count, DType dt, const Label& label,
               double start_us, double dur_us, double issued_us, double exposed_us, double gpu_seconds,
               int peer = -1);
    double now_us() const;          // seconds since this Comm was made, in microseconds
    void add_interval(double start_us, double end_us);

    int rank_;
    int world_size_;
    std::unique_ptr<Backend> backend_;
    Tracer* tracer_;
    std::function<void(const std::string&)> next_call_hook_;  // before_next_call
    std::vector<std::shared_ptr<PendingCall>> in_flight_;       // started, not yet waited for, oldest first
    std::chrono::steady_clock::time_point origin_;             // now_us()'s zero
    std::vector<std::pair<double, double>> intervals_;         // calls' [start, end] since take_times (us)
    CommTimes times_;                                          // exposed time and calls since take_times
};

/// "all_reduce on tp group [0,1] (grad, step 3, layer 2, bwd)": how errors name a call.
std::string describe_call(const char* op, const Group& group, const Label& label);

/// "[0,2,4,6]".
std::string ranks_str(const std::vector<int>& ranks);

}  // namespace ss
