// nccl_detail.h — what the nccl backend's own files share. Includes <nccl.h>,
// <cuda_runtime.h> and <mpi.h>, so only the files of src/comm/nccl/ (built
// only when CMake found CUDA, NCCL and MPI) include it.
//
//   SS_NCCL_CHECK       every NCCL call goes through it: a failure becomes an
//                       ss::Error naming the call, NCCL's error, the file, the
//                       line and the rank
//   SS_COMM_CUDA_CHECK  the same for the CUDA runtime calls of comm/ (ss_comm
//                       does not link kernels/cuda, whose SS_CUDA_CHECK this mirrors)
//   NcclBackend::Impl   one process's NCCL, CUDA and MPI state
//
// The MPI side (set up, the prepared groups and their call counts, send / recv,
// the end of a run) is the session the mpi backend has too (mpi_session.h); the
// waiting (deadline, side channel, the report of who is missing) its
// mpi::Watch, unchanged: what it polls is an NCCL communicator's state and a
// CUDA event instead of an MPI request.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "comm/mpi/mpi_session.h"
#include "comm/nccl/nccl_backend.h"

namespace ss::nccl {

/// Throws ss::Error for an NCCL call @p call (its text) that returned @p rc at file:line:
/// "NCCL error (rank 2) at src/comm/nccl/nccl_backend.cpp:120: ncclAllReduce(...) returned
/// ncclUnhandledCudaError (unhandled cuda error ...); NCCL says: <ncclGetLastError>".
[[noreturn]] void nccl_fail(ncclResult_t rc, const char* call, const char* file, int line);
/// Throws ss::Error for a CUDA runtime call @p call that returned @p err at file:line.
[[noreturn]] void cuda_fail(cudaError_t err, const char* call, const char* file, int line);

/// True for device memory on GPU @p gpu and for managed memory: NCCL may use
/// the pointer as it is. False for host memory (pageable or pinned) and for
/// another GPU's memory, which the backend stages through its own device buffer.
bool nccl_can_use(const void* p, int gpu);

/// A device buffer that grows to the largest size asked of it (cudaMalloc).
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    /// cudaFree (errors ignored: it may run during an abort).
    ~DeviceBuffer();
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    /// At least @p bytes of device memory on the current GPU (contents undefined).
    void* get(size_t bytes);

private:
    void* ptr_ = nullptr;
    size_t bytes_ = 0;
};

}  // namespace ss::nccl

/// Calls an NCCL function and throws ss::Error naming the call, NCCL's error,
/// the file, the line and the rank unless it returns ncclSuccess or
/// ncclInProgress. (On the backend's non-blocking communicators ncclInProgress
/// means "started": the wait that follows polls ncclCommGetAsyncError until the
/// call has been carried out, and reports its errors.)
#define SS_NCCL_CHECK(call)                                                               \
    do {                                                                                  \
        const ncclResult_t ss_nccl_rc_ = (call);                                          \
        if (ss_nccl_rc_ != ncclSuccess && ss_nccl_rc_ != ncclInProgress)                  \
            ::ss::nccl::nccl_fail(ss_nccl_rc_, #call, __FILE__, __LINE__);                \
    } while (0)

/// Calls a CUDA runtime function and throws ss::Error naming the call, the
/// error, the file, the line and the rank unless it returns cudaSuccess.
#define SS_COMM_CUDA_CHECK(call)                                                          \
    do {                                                                                  \
        const cudaError_t ss_comm_cuda_err_ = (call);                                     \
        if (ss_comm_cuda_err_ != cudaSuccess)                                             \
            ::ss::nccl::cuda_fail(ss_comm_cuda_err_, #call, __FILE__, __LINE__);          \
    } while (0)

namespace ss {

/// One process's NCCL, CUDA and MPI state.
struct NcclBackend::Impl {
    /// Starts the MPI session (mpi_session.h); the GPU and NCCL come after, in NcclBackend's constructor.
    explicit Impl(double timeout_seconds);

    mpi::Session session;  ///< MPI: rank, world, send / recv (through the host), the Watch, the prepared groups
    int local_rank = 0;    ///< rank among the processes of this node
    int local_size = 1;    ///< processes on this node
    int gpu = 0;           ///< the CUDA device: local_rank % GPUs seen

    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;  ///< blocking = 0 (set by the constructor)
    cudaStream_t stream = nullptr;      ///< the communication stream (non-blocking)
    cudaEvent_t caller_done = nullptr;  ///< recorded on the caller's stream; the comm stream waits for it
    cudaEvent_t start = nullptr;        ///< recorded just before the NCCL call (timing)
    cudaEvent_t end = nullptr;          ///< recorded just after it (timing, and what a wait polls)
    double last_gpu_seconds = -1;       ///< start -> end of the last collective

    std::vector<ncclComm_t> comms;  ///< by prepared index (0 = world): the group's communicator (rank i =
                                    ///< ranks[i]); null where I am not a member, and after abort_all
    bool aborted = false;           ///< a call failed and every communicator was aborted
    bool finished = false;          ///< finish() returned: the communicators may be finalised

    nccl::DeviceBuffer stage_in;   ///< host buffers' data on the GPU (and bf16's fp32 sums)
    nccl::DeviceBuffer stage_out;  ///< results on the GPU, before they go back to a host buffer
    nccl::DeviceBuffer one;        ///< the float a barrier all-reduces
    std::vector<uint16_t> host_bf16;  ///< bf16 reductions: the caller's bf16 values, on the host
    std::vector<float> host_f32;      ///< bf16 reductions: the same widened to fp32, then the sums

    /// Makes this process's GPU the thread's current device (a caller may have changed it).
    void use_gpu();
    /// Makes the communication stream wait for the work queued so far on the
    /// caller's stream (ss::current_stream(), or the legacy default stream).
    void after_caller();
    /// Copies @p bytes between any two buffers on the communication stream and waits for it.
    void copy(void* dst, const void* src, size_t bytes);
    /// Polls until @p comm has no NCCL call in progress (ncclCommGetAsyncError),
    /// through the Watch; throws on an NCCL error or the timeout.
    void wait_ready(ncclComm_t comm, const mpi::WaitInfo& info);
    /// Runs @p enqueue (the NCCL call or calls, on the communication stream) between
    /// the timing events, then waits for it as wait_ready does and for the end
    /// event; sets last_gpu_seconds. On any error, aborts every communicator first.
    void run(ncclComm_t comm, const mpi::WaitInfo& info, const std::function<void()>& enqueue);
    /// ncclCommAbort on every communicator (after a failed or timed-out call).
    void abort_all();
};

}  // namespace ss
