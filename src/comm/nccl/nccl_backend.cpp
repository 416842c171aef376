// nccl_backend.cpp — the collectives of the `nccl` backend: each one is NCCL's.
//
// Every call goes through the same five steps on the backend's communication
// stream (nccl_backend.h says why each is there):
//
//     caller's stream  ──kernels──●caller_done
//                                 │ cudaStreamWaitEvent
//     comm stream                 └─[copy in]─●start─[NCCL call]─●end─[copy out]
//                                                                 │
//     host             begin_call ... poll end + ncclCommGetAsyncError (the Watch, with the timeout)
//
//   1. begin_call   find the group's communicator, count and describe the call (mpi::Session)
//   2. after_caller the comm stream waits for the caller's kernels
//   3. copy in      only for a buffer NCCL cannot use (host memory): into stage_in
//   4. run          start event, the NCCL call(s), end event; wait for end
//   5. copy out     a staged result back to the caller's buffer
//
// bf16 reductions go through fp32 on the host (bf16_reduction below), so that
// they round once, as the contract says. A count of 0 still synchronises the
// group: it becomes a barrier (a one-float all-reduce).
#include <cstring>

#include "comm/nccl/nccl_detail.h"
#include "comm/reduce_kernels.h"
#include "core/check.h"
#include "core/device.h"

namespace ss {

using mpi::WaitInfo;

// ---- the five steps ------------------------------------------------------------------

void NcclBackend::Impl::use_gpu() {
    int current = -1;
    SS_COMM_CUDA_CHECK(cudaGetDevice(&current));
    if (current != gpu) SS_COMM_CUDA_CHECK(cudaSetDevice(gpu));
}

void NcclBackend::Impl::after_caller() {
    cudaStream_t caller = nullptr;  // a CPU-device caller: the legacy default stream (copies, if any)
    if (current_device() == Device::cuda) {
        SS_CHECK(current_gpu() == gpu, "nccl backend: rank " << session.rank << " computes on GPU " << current_gpu()
                                           << " but its NCCL communicators are on GPU " << gpu
                                           << "; start the body with ss::DeviceScope gpu(ss::Device::cuda, "
                                              "ss::nccl_local_gpu())");
        caller = static_cast<cudaStream_t>(current_stream());
    }
    SS_COMM_CUDA_CHECK(cudaEventRecord(caller_done, caller));
    SS_COMM_CUDA_CHECK(cudaStreamWaitEvent(stream, caller_done, 0));
}

void NcclBackend::Impl::copy(void* dst, const void* src, size_t bytes) {
    if (bytes == 0) return;
    // cudaMemcpyDefault: the driver tells host, device and managed memory apart (unified addressing).
    SS_COMM_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream));
    SS_COMM_CUDA_CHECK(cudaStreamSynchronize(stream));  // needs no other rank: no timeout
}

namespace {

// True once NCCL has carried out the calls made on @p comm (a non-blocking
// communicator may return ncclInProgress before the call is on the stream).
bool comm_idle(ncclComm_t comm) {
    ncclResult_t state = ncclSuccess;
    SS_NCCL_CHECK(ncclCommGetAsyncError(comm, &state));
    if (state == ncclInProgress) return false;
    if (state != ncclSuccess)
        nccl::nccl_fail(state, "ncclCommGetAsyncError(comm) (the collective, or a peer, failed)", __FILE__, __LINE__);
    return true;
}

}  // namespace

void NcclBackend::Impl::wait_ready(ncclComm_t comm, const WaitInfo& info) {
    session.watch->wait([&] { return comm_idle(comm); }, info);
}

void NcclBackend::Impl::run(ncclComm_t comm, const WaitInfo& info, const std::function<void()>& enqueue) {
    try {
        SS_COMM_CUDA_CHECK(cudaEventRecord(start, stream));
        enqueue();
        bool end_recorded = false;
        session.watch->wait([&] {
            if (!comm_idle(comm)) return false;  // still being put on the stream
            if (!end_recorded) {
                SS_COMM_CUDA_CHECK(cudaEventRecord(end, stream));
                end_recorded = true;
            }
            const cudaError_t e = cudaEventQuery(end);
            if (e == cudaErrorNotReady) return false;  // running (or waiting on the GPU for a peer)
            SS_COMM_CUDA_CHECK(e);
            return true;
        }, info);
        float ms = 0;
        SS_COMM_CUDA_CHECK(cudaEventElapsedTime(&ms, start, end));
        last_gpu_seconds = double(ms) / 1e3;
    } catch (...) {
        // A collective that timed out is still running on the GPU (and on the
        // members that did arrive); only ncclCommAbort stops it.
        abort_all();
        throw;
    }
}

void NcclBackend::Impl::abort_all() {
    if (aborted) return;
    aborted = true;
    for (auto it = comms.rbegin(); it != comms.rend(); ++it)
        if (*it != nullptr) {
            ncclCommAbort(*it);
            *it = nullptr;
        }
}

namespace {

// Finds the group's communicator, describes the call for the Watch, and orders
// the comm stream after the caller's work (steps 1 and 2).
struct OpenCall {
    ncclComm_t comm;
    int n;   // group size
    int me;  // my index in the group = my rank in its communicator
    WaitInfo info;
};

OpenCall begin_call(NcclBackend::Impl& m, const char* op, const Group& group, const Label& label, size_t count,
                DType dt, const char* reduce = nullptr) {
    SS_CHECK(!m.aborted, describe_call(op, group, label)
                             << ": the nccl backend of rank " << m.session.rank
                             << " was aborted after an earlier error; no call can run on it");
    OpenCall c{nullptr, group.size(), -1, {}};
    const size_t index = size_t(m.session.begin_call(c.info, op, group, label, count, dt, reduce));  // mpi_session.cpp
    c.comm = m.comms[index];
    c.me = m.session.groups[index].me;
    m.use_gpu();
    m.after_caller();
    return c;
}

ncclRedOp_t nccl_op(ReduceOp op) { return op == ReduceOp::avg ? ncclAvg : ncclSum; }

// A buffer NCCL can use: the caller's own, or a device copy of it (step 3).
// (Not const: all_reduce and broadcast work in place on it.)
char* device_input(NcclBackend::Impl& m, const void* p, size_t bytes) {
    if (nccl::nccl_can_use(p, m.gpu)) return static_cast<char*>(const_cast<void*>(p));
    void* staged = m.stage_in.get(bytes);
    m.copy(staged, p, bytes);
    return static_cast<char*>(staged);
}

// Where NCCL writes the result: the caller's buffer, or stage_out (step 5 copies it back).
char* device_output(NcclBackend::Impl& m, void* p, size_t bytes) {
    if (nccl::nccl_can_use(p, m.gpu)) return static_cast<char*>(p);
    return static_cast<char*>(m.stage_out.get(bytes));
}

void copy_back(NcclBackend::Impl& m, void* p, const char* result, size_t bytes) {
    if (result != p) m.copy(p, result, bytes);
}

// A count of 0 moves nothing but still meets the group: a one-float all-reduce.
void meet(NcclBackend::Impl& m, const OpenCall& c) {
    float* one = static_cast<float*>(m.one.get(sizeof(float)));
    SS_COMM_CUDA_CHECK(cudaMemsetAsync(one, 0, sizeof(float), m.stream));
    m.run(c.comm, c.info, [&] { SS_NCCL_CHECK(ncclAllReduce(one, one, 1, ncclFloat32, ncclSum, c.comm, m.stream)); });
}

// bf16 all_reduce (scatter = false: count elements in and out) or reduce_scatter
// (scatter = true: n * count in, count out), the contract's way: widen to fp32
// on the host (exact), sum fp32 with NCCL, round to bf16 once on the host (and
// divide by n there for avg). NCCL's own bf16 sum would round every partial sum.
void bf16_reduction(NcclBackend::Impl& m, const OpenCall& c, const void* send, void* recv, size_t count, ReduceOp op,
                    bool scatter) {
    const size_t n_in = scatter ? size_t(c.n) * count : count;
    m.host_bf16.resize(n_in);
    m.host_f32.resize(n_in);
    m.copy(m.host_bf16.data(), send, n_in * 2);  // from host, device or managed memory
    reduce::widen_bf16(m.host_f32.data(), m.host_bf16.data(), n_in);
    float* in = static_cast<float*>(m.stage_in.get(n_in * 4));
    float* out = scatter ? static_cast<float*>(m.stage_out.get(count * 4)) : in;
    m.copy(in, m.host_f32.data(), n_in * 4);
    m.run(c.comm, c.info, [&] {
        if (scatter)
            SS_NCCL_CHECK(ncclReduceScatter(in, out, count, ncclFloat32, ncclSum, c.comm, m.stream));
        else
            SS_NCCL_CHECK(ncclAllReduce(in, in, count, ncclFloat32, ncclSum, c.comm, m.stream));
    });
    m.copy(m.host_f32.data(), out, count * 4);
    reduce::narrow_to_bf16(m.host_bf16.data(), m.host_f32.data(), count, op == ReduceOp::avg ? float(c.n) : 1.0f);
    m.copy(recv, m.host_bf16.data(), count * 2);
}

}  // namespace

// ---- the calls ---------------------------------------------------------------------

void NcclBackend::all_reduce(void* buf, size_t count, DType dt, const Group& group, ReduceOp op,
                             const Label& label) {
    Impl& m = *impl_;
    OpenCall c = begin_call(m, "all_reduce", group, label, count, dt, reduce_op_name(op));
    if (count == 0) return meet(m, c);
    if (dt == DType::bf16) return bf16_reduction(m, c, buf, buf, count, op, /*scatter=*/false);
    // fp32, in place: on the caller's buffer, or on a device copy of it.
    const size_t bytes = count * 4;
    char* x = device_input(m, buf, bytes);
    m.run(c.comm, c.info,
          [&] { SS_NCCL_CHECK(ncclAllReduce(x, x, count, ncclFloat32, nccl_op(op), c.comm, m.stream)); });
    copy_back(m, buf, x, bytes);
}

void NcclBackend::reduce_scatter(const void* send, void* recv, size_t count_per_rank, DType dt,
                                 const Group& group, ReduceOp op, const Label& label) {
    Impl& m = *impl_;
    OpenCall c = begin_call(m, "reduce_scatter", group, label, count_per_rank, dt, reduce_op_name(op));
    if (count_per_rank == 0) return meet(m, c);
    if (dt == DType::bf16) return bf16_reduction(m, c, send, recv, count_per_rank, op, /*scatter=*/true);
    // NCCL allows recv = send + my_index * count (in place), as Comm does.
    const size_t out_bytes = count_per_rank * 4;
    const char* in = device_input(m, send, size_t(c.n) * out_bytes);
    char* out = device_output(m, recv, out_bytes);
    m.run(c.comm, c.info, [&] {
        SS_NCCL_CHECK(ncclReduceScatter(in, out, count_per_rank, ncclFloat32, nccl_op(op), c.comm, m.stream));
    });
    copy_back(m, recv, out, out_bytes);
}

// Calls that only move data move bytes: any dtype, count x element size.
void NcclBackend::all_gather(const void* send, void* recv, size_t count_per_rank, DType dt, const Group& group,
                             const Label& label) {
    Impl& m = *impl_;
    OpenCall c = begin_call(m, "all_gather", group, label, count_per_rank, dt);
    if (count_per_rank == 0) return meet(m, c);
    // In place (send = recv + my_index * block) is NCCL's in place too.
    const size_t block = count_per_rank * dtype_size(dt);
    const char* in = device_input(m, send, block);
    char* out = device_output(m, recv, size_t(c.n) * block);
    m.run(c.comm, c.info, [&] { SS_NCCL_CHECK(ncclAllGather(in, out, block, ncclUint8, c.comm, m.stream)); });
    copy_back(m, recv, out, size_t(c.n) * block);
}

// NCCL has no all-to-all call: it is n sends and n receives in one group, which
// NCCL runs together (so none waits for another to finish first).
void NcclBackend::all_to_all(const void* send, void* recv, size_t count_per_rank, DType dt, const Group& group,
                             const Label& label) {
    Impl& m = *impl_;
    OpenCall c = begin_call(m, "all_to_all", group, label, count_per_rank, dt);
    if (count_per_rank == 0) return meet(m, c);
    const size_t block = count_per_rank * dtype_size(dt);
    const char* in = device_input(m, send, size_t(c.n) * block);
    char* out = device_output(m, recv, size_t(c.n) * block);
    m.run(c.comm, c.info, [&] {
        SS_NCCL_CHECK(ncclGroupStart());
        for (int j = 0; j < c.n; ++j) {
            SS_NCCL_CHECK(ncclSend(in + size_t(j) * block, block, ncclUint8, j, c.comm, m.stream));
            SS_NCCL_CHECK(ncclRecv(out + size_t(j) * block, block, ncclUint8, j, c.comm, m.stream));
        }
        SS_NCCL_CHECK(ncclGroupEnd());
    });
    copy_back(m, recv, out, size_t(c.n) * block);
}

void NcclBackend::broadcast(void* buf, size_t count, DType dt, int root_index, const Group& group,
                            const Label& label) {
    Impl& m = *impl_;
    OpenCall c = begin_call(m, "broadcast", group, label, count, dt);
    c.info.root = root_index;
    if (count == 0) return meet(m, c);
    const size_t bytes = count * dtype_size(dt);
    // Only the root's data goes in; the others' buffer is only written.
    char* x = c.me == root_index ? device_input(m, buf, bytes) : device_output(m, buf, bytes);
    m.run(c.comm, c.info,
          [&] { SS_NCCL_CHECK(ncclBroadcast(x, x, bytes, ncclUint8, root_index, c.comm, m.stream)); });
    copy_back(m, buf, x, bytes);
}

void NcclBackend::barrier(const Group& group, const Label& label) {
    Impl& m = *impl_;
    OpenCall c = begin_call(m, "barrier", group, label, 0, DType::f32);
    meet(m, c);
}

}  // namespace ss
