// nccl_launch.cpp — one rank per GPU process: run_nccl, the error messages
// of SS_NCCL_CHECK and SS_COMM_CUDA_CHECK, and the staging buffers.
//
// Under `mpirun -np 4 prog`, four copies of prog start; each calls run_nccl,
// MPI tells each its rank, the backend gives each a GPU, and each runs the body
// as that rank:
//
//     process 0 (GPU 0): run_nccl(body) -> body(Comm rank 0)  -+
//     process 1 (GPU 1): run_nccl(body) -> body(Comm rank 1)  -+-  NCCL between the GPUs,
//     ...                                                     -+   MPI beside it
//
// If any rank fails it prints "rank R: <why>" and calls MPI_Abort, which ends
// every process of the job, as run_mpi does (mpi_launch.cpp): a collective
// stuck on a GPU cannot be cancelled, so no rank may be left waiting in one.
#include <cstring>
#include <sstream>

#include "comm/nccl/nccl_detail.h"
#include "core/check.h"

namespace ss {

namespace nccl {

namespace {

// "rank 3" when MPI can tell, for the error messages.
std::string rank_text() {
    const int rank = mpi::rank_if_running();
    return rank >= 0 ? "rank " + std::to_string(rank) : "rank ?";
}

// "/work/main/src/comm/nccl/nccl_backend.cpp" -> "src/comm/nccl/nccl_backend.cpp".
const char* short_path(const char* file) {
    const char* s = std::strstr(file, "src/");
    return s != nullptr ? s : file;
}

// What to do about the errors a user can act on.
const char* nccl_hint(ncclResult_t rc) {
    switch (rc) {
        case ncclUnhandledCudaError:
            return "; a CUDA call inside NCCL failed: run with NCCL_DEBUG=WARN to see which";
        case ncclSystemError:
            return "; a system call or the network failed (a socket, shared memory, /dev/shm too small?): "
                   "run with NCCL_DEBUG=WARN";
        case ncclRemoteError:
            return "; another rank failed or the connection to it broke: look at the other ranks' messages";
        case ncclInvalidUsage:
            return "; NCCL was used wrongly (two ranks on one GPU? more processes per node than GPUs?)";
        default:
            return "";
    }
}

}  // namespace

void nccl_fail(ncclResult_t rc, const char* call, const char* file, int line) {
    std::ostringstream os;
    os << "NCCL error (" << rank_text() << ") at " << short_path(file) << ":" << line << ": " << call
       << " returned " << ncclGetErrorString(rc) << " (code " << int(rc) << ")" << nccl_hint(rc);
    const char* last = ncclGetLastError(nullptr);
    if (last != nullptr && *last != '\0') os << "; NCCL says: " << last;
    ::ss::fail(file, line, os.str());
}

void cuda_fail(cudaError_t err, const char* call, const char* file, int line) {
    std::ostringstream os;
    os << "CUDA error (" << rank_text() << ") at " << short_path(file) << ":" << line << ": " << call
       << " returned " << cudaGetErrorName(err) << " (" << cudaGetErrorString(err) << ")";
    if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver)
        os << "; check nvidia-smi and CUDA_VISIBLE_DEVICES, or use --backend mpi";
    ::ss::fail(file, line, os.str());
}

bool nccl_can_use(const void* p, int gpu) {
    cudaPointerAttributes a{};
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        (void)cudaGetLastError();  // not an error worth keeping: an address CUDA does not know is host memory
        return false;
    }
    if (a.type == cudaMemoryTypeManaged) return true;
    return a.type == cudaMemoryTypeDevice && a.device == gpu;
}

DeviceBuffer::~DeviceBuffer() {
    if (ptr_ != nullptr) cudaFree(ptr_);
}

void* DeviceBuffer::get(size_t bytes) {
    if (bytes <= bytes_ && ptr_ != nullptr) return ptr_;
    if (ptr_ != nullptr) SS_COMM_CUDA_CHECK(cudaFree(ptr_));
    ptr_ = nullptr;
    bytes_ = 0;
    const size_t want = bytes < 256 ? 256 : bytes;
    SS_COMM_CUDA_CHECK(cudaMalloc(&ptr_, want));
    bytes_ = want;
    return ptr_;
}

}  // namespace nccl

// ---- the public functions ------------------------------------------------------------

bool nccl_available() { return true; }

void run_nccl(const std::function<void(Comm&)>& body, const CommOptions& opts,
              const std::vector<Group>& groups_to_prepare) {
    mpi::run_rank<NcclBackend>("run_nccl", body, opts, groups_to_prepare);  // mpi_session.h
}

}  // namespace ss
