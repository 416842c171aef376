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
#include <set>
#include <thread>

#include "comm/nccl/nccl_detail.h"
#include "core/check.h"

namespace ss {

using mpi::WaitInfo;

namespace {

int g_local_gpu = -1;  // nccl_local_gpu(): set by the first NcclBackend of this process


bool test(MPI_Request& req) {
    int done = 0;
    SS_MPI_CHECK(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
    return done != 0;
}

// True once @p comm has carried out its last call (creation, split); throws on its error.
bool comm_ready(ncclComm_t comm) {
    if (comm == nullptr) return true;
    ncclResult_t state = ncclSuccess;
    SS_NCCL_CHECK(ncclCommGetAsyncError(comm, &state));
    if (state == ncclInProgress) return false;
    if (state != ncclSuccess) nccl::nccl_fail(state, "ncclCommGetAsyncError(comm) (the communicator's creation)", __FILE__, __LINE__);
    return true;
}

Group world_group(int world) {
    Group g{"world", {}};
    for (int r = 0; r < world; ++r) g.ranks.push_back(r);
    return g;
}

// 1. This process's GPU: its local rank on the node, modulo the GPUs it sees.
void pick_gpu(NcclBackend::Impl& m) {
    MPI_Comm node = MPI_COMM_NULL;
    SS_MPI_CHECK(MPI_Comm_split_type(m.p2p, MPI_COMM_TYPE_SHARED, m.rank, MPI_INFO_NULL, &node));
    SS_MPI_CHECK(MPI_Comm_rank(node, &m.local_rank));
    SS_MPI_CHECK(MPI_Comm_size(node, &m.local_size));
    SS_MPI_CHECK(MPI_Comm_free(&node));
    if (const char* env = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK")) m.local_rank = std::atoi(env);  // mpirun's own
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    SS_CHECK(err == cudaSuccess && count > 0,
             "nccl backend: rank " << m.rank << " sees no GPU ("
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

NcclBackend::NcclBackend(double timeout_seconds) : impl_(std::make_unique<Impl>()) {
    SS_CHECK(timeout_seconds > 0, "nccl backend: timeout " << timeout_seconds << " s must be positive");
    mpi::ensure_initialized();
    Impl& m = *impl_;
    m.timeout = timeout_seconds;
    SS_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &m.rank));
    SS_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &m.world));
    // Non-blocking dups, so that a rank that never starts the backend is a timeout, not a hang.
    MPI_Request reqs[2];
    SS_MPI_CHECK(MPI_Comm_idup(MPI_COMM_WORLD, &m.p2p, &reqs[0]));
    SS_MPI_CHECK(MPI_Comm_idup(MPI_COMM_WORLD, &m.ctl, &reqs[1]));
    for (MPI_Request& r : reqs)
        SS_CHECK(mpi::wait_for(r, timeout_seconds),
                 "nccl backend: rank " << m.rank << " waited " << timeout_seconds
                                       << " s for the other ranks to start the nccl backend (MPI_Comm_idup); "
                                          "does every process of the job call run_nccl?");
    m.watch = std::make_unique<mpi::Watch>(m.ctl, m.rank, m.world, timeout_seconds);
    m.pt.comm = m.p2p;
    m.pt.rank = m.rank;

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
    const Group world = world_group(m.world);
    WaitInfo info;
    info.op = "ncclCommInitRank";
    info.group = &world;
    info.seq = m.prepares++;
    ncclUniqueId id{};
    if (m.rank == 0) SS_NCCL_CHECK(ncclGetUniqueId(&id));
    MPI_Request req;
    SS_MPI_CHECK(MPI_Ibcast(&id, int(sizeof id), MPI_BYTE, 0, m.p2p, &req));
    m.watch->wait([&] { return test(req); }, info);
    ncclComm_t comm = nullptr;
    SS_NCCL_CHECK(ncclCommInitRankConfig(&comm, m.world, id, m.rank, &m.config));
    m.groups.push_back({comm, m.rank, 0});
    m.prepared_index[world.ranks] = 0;
    try {
        m.watch->wait([&] { return comm_ready(comm); }, info);
    } catch (...) {  // a constructor that throws runs no destructor: abort here
        m.abort_all();
        throw;
    }
}

NcclBackend::~NcclBackend() {
    Impl& m = *impl_;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) {
        m.watch.reset();
        m.pt.release();  // the sends in flight complete in the background
        if (m.p2p != MPI_COMM_NULL) MPI_Comm_free(&m.p2p);
        if (m.ctl != MPI_COMM_NULL) MPI_Comm_free(&m.ctl);
    }
    // The communicators, groups before the world they were split from. After a
    // clean finish() every rank is here: finalise (flushes, waits for the peers)
    // and destroy. Otherwise (an error is on its way to MPI_Abort) abort, which
    // waits for nobody.
    for (auto it = m.groups.rbegin(); it != m.groups.rend(); ++it) {
        if (it->comm == nullptr) continue;
        bool clean = false;
        if (m.finished && !m.aborted) {
            const ncclResult_t rc = ncclCommFinalize(it->comm);
            ncclResult_t state = rc;
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(m.timeout);
            while (state == ncclInProgress && std::chrono::steady_clock::now() < deadline) {
                std::this_thread::sleep_for(std::chrono::microseconds(50));
                if (ncclCommGetAsyncError(it->comm, &state) != ncclSuccess) break;
            }
            clean = state == ncclSuccess;
        }
        if (clean)
            ncclCommDestroy(it->comm);
        else
            ncclCommAbort(it->comm);
        it->comm = nullptr;
    }
    if (m.start) cudaEventDestroy(m.start);
    if (m.end) cudaEventDestroy(m.end);
    if (m.caller_done) cudaEventDestroy(m.caller_done);
    if (m.stream) cudaStreamDestroy(m.stream);
}

int NcclBackend::rank() const { return impl_->rank; }
int NcclBackend::world_size() const { return impl_->world; }
int NcclBackend::gpu() const { return impl_->gpu; }
double NcclBackend::last_gpu_seconds() const { return impl_->last_gpu_seconds; }

bool NcclBackend::prepared(const Group& group) const { return impl_->prepared_index.count(group.ranks) > 0; }

// ---- one communicator per group -------------------------------------------------------

void NcclBackend::prepare(const std::vector<Group>& groups) {
    Impl& m = *impl_;
    SS_CHECK(!m.aborted, "NcclBackend::prepare: the nccl backend of rank " << m.rank
                                                                           << " was aborted after an earlier error");
    // 1. Check the groups, and find the rank lists not prepared yet.
    const std::vector<const Group*> fresh = mpi::fresh_groups(groups, m.world, m.prepared_index, "NcclBackend::prepare");

    // 2. ncclCommSplit is collective over the world: first check (with a timeout)
    //    that every rank is here with the same list: max(h) == h and max(~h) == ~h
    //    on every rank iff all the h are equal.
    const uint64_t h = mpi::hash_groups(groups);
    uint64_t both[2] = {h, ~h};
    MPI_Request req;
    SS_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, both, 2, MPI_UINT64_T, MPI_MAX, m.p2p, &req));
    const Group world = world_group(m.world);
    WaitInfo info;
    info.op = "prepare";
    info.group = &world;
    info.seq = m.prepares++;
    m.watch->wait([&] { return test(req); }, info);
    SS_CHECK(both[0] == h && both[1] == ~h,
             "NcclBackend::prepare: the ranks passed different lists of groups (rank "
                 << m.rank << " passed " << groups.size()
                 << "); every rank must prepare the same groups in the same order, e.g. mesh_groups(mesh)");

    // 3. One ncclCommSplit per batch of groups that share no rank (mpi::split_batches):
    //    color = my group's place in the batch, key = my index in it.
    ncclComm_t parent = m.groups[0].comm;
    for (const mpi::SplitBatch& b : mpi::split_batches(fresh, m.world, m.rank)) {
        ncclComm_t comm = nullptr;
        SS_NCCL_CHECK(ncclCommSplit(parent, b.color < 0 ? NCCL_SPLIT_NOCOLOR : b.color, b.key, &comm, &m.config));
        for (size_t k = b.first; k < b.end; ++k) {  // recorded before the wait, so that an error aborts it
            m.prepared_index[fresh[k]->ranks] = int(m.groups.size());
            Impl::GroupComm gc;
            if (b.color == int(k - b.first)) gc.comm = comm, gc.me = b.key;
            m.groups.push_back(gc);
        }
        info.op = "ncclCommSplit";
        info.seq = m.prepares++;
        m.watch->wait([&] { return comm_ready(parent) && comm_ready(comm); }, info);
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
    Impl& m = *impl_;
    // 1. Every send has been received (a send nobody receives is a bug: say so).
    m.pt.complete(*m.watch);
    // 2. Tell the others how many calls I made on each group, and wait for theirs.
    std::vector<uint64_t> calls;
    for (const auto& g : m.groups) calls.push_back(g.calls);
    m.watch->finish(calls);
    m.finished = true;
}

// An injected hang: sleep, answering nobody, as a rank stuck in its own code
// would. The rank that times out waiting for this one calls MPI_Abort, which
// ends this process too.
void NcclBackend::stall(const std::string& why) {
    const double backstop = stall_backstop_seconds(impl_->timeout);
    std::this_thread::sleep_for(std::chrono::duration<double>(backstop));
    SS_FAIL(why << ": still stalled after " << backstop << " s and no other rank timed out waiting for it");
}

}  // namespace ss
