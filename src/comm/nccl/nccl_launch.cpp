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
#include "comm/trace/trace.h"
#include "core/check.h"

namespace ss {

namespace nccl {

namespace {

// "rank 3" when MPI can tell, for the error messages.
std::string rank_text() {
    int rank = -1, initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
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

namespace {

// The tracer for this rank: one per rank (make_tracers(world) in every process), or just one.
Tracer* pick_tracer(const std::vector<Tracer*>& tracers, int rank, int world) {
    if (tracers.empty()) return nullptr;
    SS_CHECK(tracers.size() == size_t(world) || tracers.size() == 1,
             "run_nccl: opts.tracers has " << tracers.size() << " tracers for a world of " << world
                                           << "; pass one per rank (make_tracers(" << world
                                           << ")) or exactly one, this process's");
    Tracer* t = tracers.size() == 1 ? tracers[0] : tracers[rank];
    SS_CHECK(t != nullptr, "run_nccl: the tracer for rank " << rank << " is null");
    SS_CHECK(t->rank() == rank, "run_nccl: the tracer given to rank " << rank << " records rank " << t->rank()
                                    << "; make it with ss::Tracer(ss::mpi_world_rank())");
    return t;
}

}  // namespace

void run_nccl(const std::function<void(Comm&)>& body, const CommOptions& opts,
              const std::vector<Group>& groups_to_prepare) {
    const int rank = mpi_world_rank(), world = mpi_world_size();
    try {
        Tracer* tracer = pick_tracer(opts.tracers, rank, world);
        auto backend = std::make_unique<NcclBackend>(opts.timeout_seconds);
        NcclBackend& nccl = *backend;
        nccl.prepare(groups_to_prepare);
        Comm comm(rank, world, std::move(backend), tracer);
        body(comm);
        nccl.finish();
    } catch (const std::exception& e) {  // the backend is gone by now: its destructor aborted the communicators
        mpi::abort_world(e.what());
    } catch (...) {
        mpi::abort_world("an exception that is not a std::exception");
    }
}

}  // namespace ss
