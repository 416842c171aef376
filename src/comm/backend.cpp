// backend.cpp — what every backend shares: a Call run with the blocking calls,
// and the default start() that runs it at once (backend.h).
#include "comm/backend.h"

namespace ss {

namespace {

// A call that ran inside start(): nothing is left to wait for.
struct FinishedRequest final : Request {
    void wait() override {}
};

// A recv started on a backend that runs calls at once: it runs in wait(), where
// the program needs the data. Run at start(), a receive posted early would wait
// for a send its own rank has not made yet (a pipeline stage posts the next
// micro-batch's receive before it sends this one's), which the progress threads
// of the threads backend never do.
// Dropped unwaited (Request::drop), it never runs: nothing was posted, so nothing
// reads or writes its buffer (a failing rank used to run it, waiting a whole timeout
// and its grace for each, for a send that would not come).
struct DeferredRecv final : Request {
    DeferredRecv(Backend& b, const Call& c) : backend(b), call(c) {}
    void wait() override {
        if (ran) return;  // once: a dropped handle's call may be waited again by wait_all
        ran = true;
        started = std::chrono::steady_clock::now();
        backend.run(call);
        finished = std::chrono::steady_clock::now();
        gpu_seconds = backend.last_gpu_seconds();  // its own, before the rank's next call
    }
    void drop() override {}
    Backend& backend;
    Call call;
    bool ran = false;
};

}  // namespace

const char* call_op_name(CallOp op) {
    switch (op) {
        case CallOp::all_reduce: return "all_reduce";
        case CallOp::all_gather: return "all_gather";
        case CallOp::reduce_scatter: return "reduce_scatter";
        case CallOp::all_to_all: return "all_to_all";
        case CallOp::broadcast: return "broadcast";
        case CallOp::send: return "send";
        case CallOp::recv: return "recv";
        case CallOp::barrier: return "barrier";
    }
    return "?";
}

std::unique_ptr<Request> finished_request(std::chrono::steady_clock::time_point started, double gpu_seconds) {
    auto r = std::make_unique<FinishedRequest>();
    r->started = started;
    r->finished = std::chrono::steady_clock::now();
    r->gpu_seconds = gpu_seconds;
    return r;
}

void Backend::run(const Call& c) {
    switch (c.op) {
        case CallOp::all_reduce: all_reduce(c.recv, c.count, c.dt, c.group, c.reduce, c.label); break;
        case CallOp::all_gather: all_gather(c.send, c.recv, c.count, c.dt, c.group, c.label); break;
        case CallOp::reduce_scatter: reduce_scatter(c.send, c.recv, c.count, c.dt, c.group, c.reduce, c.label); break;
        case CallOp::all_to_all: all_to_all(c.send, c.recv, c.count, c.dt, c.group, c.label); break;
        case CallOp::broadcast: broadcast(c.recv, c.count, c.dt, c.root, c.group, c.label); break;
        case CallOp::send: send(c.send, c.count, c.dt, c.peer, c.group.axis, c.label); break;
        case CallOp::recv: recv(c.recv, c.count, c.dt, c.peer, c.group.axis, c.label); break;
        case CallOp::barrier: barrier(c.group, c.label); break;
    }
}

std::unique_ptr<Request> Backend::start(const Call& call) {
    if (call.op == CallOp::recv) return std::make_unique<DeferredRecv>(*this, call);
    const auto t0 = std::chrono::steady_clock::now();
    run(call);
    // The call's device time now: the rank's next call, before it waits for this one, overwrites it.
    return finished_request(t0, last_gpu_seconds());
}

}  // namespace ss
