// nccl_setup.cpp — the nccl backend's setting up: a GPU per process, the
// world communicator, one communicator per group, and the end of a run.
//
//     1. GPU        local rank on my node (OMPI_COMM_WORLD_LOCAL_RANK, or an
//                   MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)) % GPUs I see
//     2. world      rank 0: ncclGetUniqueId ──MPI_Bcast──> every rank:
//                   ncclCommInitRankConfig(world, id, rank, {blocking = 0})
//     3. groups     prepare({tp: [0,1] [2,3]})  ->  ncclCommSplit(world, color, key)
//                        color = which group I am in (NCCL_SPLIT_NOCOLOR: none),
//                        key = my index in it
//                   rank 2 gets a communicator {2 -> 0, 3 -> 1}
//
// NCCL's communicator rank i is group.ranks[i], so "index in the group" (a
// broadcast root, an all_gather block) and "rank in the communicator" are the
// same number, as in the mpi backend. Every NCCL call that waits for other
// ranks is non-blocking and waited for through the Watch, with the timeout.
#include <chrono>
#include <cstdlib>
#include <thread>

#include "comm/nccl/nccl_detail.h"
#include "core/check.h"

namespace ss {

using mpi::WaitInfo;

namespace {

int g_local_gpu = -1;  // nccl_local_gpu(): set by the first NcclBackend of this process

const mpi::BackendNames kNames{"nccl", "run_nccl", "NcclBackend", "NCCL", " (ncclCommSplit)"};

// True once @p comm has carried out its last call (creation, split); throws on its error.
bool comm_ready(ncclComm_t comm) {
    if (comm == nullptr) return true;
    ncclResult_t state = ncclSuccess;
    SS_NCCL_CHECK(ncclCommGetAsyncError(comm, &state));
    if (state == ncclInProgress) return false;
    if (state != ncclSuccess) nccl::nccl_fail(state, "ncclCommGetAsyncError(comm) (the communicator's creation)", __FILE__, __LINE__);
    return true;
}

// 1. This process's GPU: its local rank on the node, modulo the GPUs it sees.
void pick_gpu(NcclBackend::Impl& m) {
    const int rank = m.session.rank;
    MPI_Comm node = MPI_COMM_NULL;
    SS_MPI_CHECK(MPI_Comm_split_type(m.session.p2p, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
    SS_MPI_CHECK(MPI_Comm_rank(node, &m.local_rank));
    SS_MPI_CHECK(MPI_Comm_size(node, &m.local_size));
    SS_MPI_CHECK(MPI_Comm_free(&node));
    if (const char* env = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK")) m.local_rank = std::atoi(env);  // mpirun's own
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    SS_CHECK(err == cudaSuccess && count > 0,
             "nccl backend: rank " << rank << " sees no GPU ("
                                   << (err != cudaSuccess ? cudaGetErrorName(err) : "cudaGetDeviceCount returned 0")
                                   << "); the nccl backend needs one GPU per process: check nvidia-smi and "
                                      "CUDA_VISIBLE_DEVICES, or use --backend mpi");
    // More processes than GPUs on a node would put two ranks on one GPU, which
    // NCCL refuses ("Duplicate GPU detected") at ncclCommInitRank: its error says so.
    m.gpu = m.local_rank % count;
}

}  // namespace

int nccl_local_gpu() {
    SS_CHECK(g_local_gpu >= 0, "nccl_local_gpu(): no nccl backend has started in this process yet; "
                               "call it inside run_nccl's body");
    return g_local_gpu;
}

// ---- setting up -----------------------------------------------------------------------

NcclBackend::Impl::Impl(double timeout_seconds) : session(kNames, timeout_seconds) {}

NcclBackend::NcclBackend(double timeout_seconds) : impl_(std::make_unique<Impl>(timeout_seconds)) {
    Impl& m = *impl_;
    mpi::Session& s = m.session;  // MPI is running, with the two copies of the world and the Watch

    // 1. The GPU, the communication stream and its events.
    pick_gpu(m);
    SS_COMM_CUDA_CHECK(cudaSetDevice(m.gpu));
    SS_COMM_CUDA_CHECK(cudaStreamCreateWithFlags(&m.stream, cudaStreamNonBlocking));
    SS_COMM_CUDA_CHECK(cudaEventCreateWithFlags(&m.caller_done, cudaEventDisableTiming));
    SS_COMM_CUDA_CHECK(cudaEventCreate(&m.start));
    SS_COMM_CUDA_CHECK(cudaEventCreate(&m.end));
    g_local_gpu = m.gpu;

    // 2. The world communicator: rank 0's unique id, broadcast over MPI.
    m.config.blocking = 0;  // no NCCL call waits for another rank: the Watch does, with the timeout
    const Group world = s.world_group();
    WaitInfo info;
    info.op = "ncclCommInitRank";
    info.group = &world;
    info.seq = s.prepares++;
    ncclUniqueId id{};
    if (s.rank == 0) SS_NCCL_CHECK(ncclGetUniqueId(&id));
    MPI_Request req;
    SS_MPI_CHECK(MPI_Ibcast(&id, int(sizeof id), MPI_BYTE, 0, s.p2p, &req));
    s.watch->wait([&] { return mpi::test(req); }, info);
    ncclComm_t comm = nullptr;
    SS_NCCL_CHECK(ncclCommInitRankConfig(&comm, s.world, id, s.rank, &m.config));
    s.add(world, s.rank);
    m.comms.push_back(comm);
    try {
        s.watch->wait([&] { return comm_ready(comm); }, info);
    } catch (...) {  // a constructor that throws runs no destructor: abort here
        m.abort_all();
        throw;
    }
}

NcclBackend::~NcclBackend() {
    Impl& m = *impl_;
    // The communicators, groups before the world they were split from. After a
    // clean finish() every rank is here: finalise (flushes, waits for the peers)
    // and destroy. Otherwise (an error is on its way to MPI_Abort) abort, which
    // waits for nobody.
    for (auto it = m.comms.rbegin(); it != m.comms.rend(); ++it) {
        if (*it == nullptr) continue;
        bool clean = false;
        if (m.finished && !m.aborted) {
            const ncclResult_t rc = ncclCommFinalize(*it);
            ncclResult_t state = rc;
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(m.session.timeout);
            while (state == ncclInProgress && std::chrono::steady_clock::now() < deadline) {
                std::this_thread::sleep_for(std::chrono::microseconds(50));
                if (ncclCommGetAsyncError(*it, &state) != ncclSuccess) break;
            }
            clean = state == ncclSuccess;
        }
        if (clean)
            ncclCommDestroy(*it);
        else
            ncclCommAbort(*it);
        *it = nullptr;
    }
    if (m.start) cudaEventDestroy(m.start);
    if (m.end) cudaEventDestroy(m.end);
    if (m.caller_done) cudaEventDestroy(m.caller_done);
    if (m.stream) cudaStreamDestroy(m.stream);
}  // then the session frees its copies of the world (mpi_session.cpp)

int NcclBackend::rank() const { return impl_->session.rank; }
int NcclBackend::world_size() const { return impl_->session.world; }
int NcclBackend::gpu() const { return impl_->gpu; }
double NcclBackend::last_gpu_seconds() const { return impl_->last_gpu_seconds; }

bool NcclBackend::prepared(const Group& group) const { return impl_->session.prepared(group); }

// ---- one communicator per group -------------------------------------------------------

void NcclBackend::prepare(const std::vector<Group>& groups) {
    Impl& m = *impl_;
    mpi::Session& s = m.session;
    SS_CHECK(!m.aborted, "NcclBackend::prepare: the nccl backend of rank " << s.rank
                                                                           << " was aborted after an earlier error");
    // 1, 2. Check the groups, and that every rank passes the same list (mpi_session.cpp).
    const std::vector<const Group*> fresh = s.agree(groups);

    // 3. One ncclCommSplit per batch of groups that share no rank (mpi::split_batches):
    //    color = my group's place in the batch, key = my index in it.
    ncclComm_t parent = m.comms[0];
    const Group world = s.world_group();
    WaitInfo info;
    info.op = "ncclCommSplit";
    info.group = &world;
    for (const mpi::SplitBatch& b : mpi::split_batches(fresh, s.world, s.rank)) {
        ncclComm_t comm = nullptr;
        SS_NCCL_CHECK(ncclCommSplit(parent, b.color < 0 ? NCCL_SPLIT_NOCOLOR : b.color, b.key, &comm, &m.config));
        for (size_t k = b.first; k < b.end; ++k) {  // recorded before the wait, so that an error aborts it
            const bool mine = b.color == int(k - b.first);
            s.add(*fresh[k], mine ? b.key : -1);
            m.comms.push_back(mine ? comm : nullptr);
        }
        info.seq = s.prepares++;
        s.watch->wait([&] { return comm_ready(parent) && comm_ready(comm); }, info);
        if (comm != nullptr) {
            const Group& mine = *fresh[b.first + size_t(b.color)];
            int size = 0;
            SS_NCCL_CHECK(ncclCommCount(comm, &size));
            SS_CHECK(size == mine.size(),
                     "NcclBackend::prepare: the communicator for " << ranks_str(mine.ranks) << " has " << size
                                                                   << " ranks");
        }
    }
}

// ---- the end of a run ------------------------------------------------------------------

void NcclBackend::finish() {
    impl_->session.finish();  // sends received, call counts exchanged (mpi_session.cpp)
    impl_->finished = true;
}

// An injected hang (mpi_session.cpp): the rank that times out waiting for this
// one calls MPI_Abort, which ends this process too.
void NcclBackend::stall(const std::string& why) { impl_->session.stall(why); }

}  // namespace ss
