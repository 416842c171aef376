// nccl_p2p.cpp — send / recv of the `nccl` backend: over MPI, through the host.
//
// Why not ncclSend / ncclRecv (nccl_backend.h has the long form): the contract
// wants a send that returns before its receiver is ready, and a recv that takes
// messages by their label's key in any order. NCCL matches a pair's messages in
// the order they were posted, and a send's kernel does not finish until the
// receiver has posted its recv. So the bytes go the mpi backend's way:
//
//     send: after the caller's kernels, copy buf to the host ──MPI_Isend──> returns at once
//     recv: MPI_Improbe (the tag carries key and dtype: checked) ──MPI_Mrecv──> host
//           ──copy──> buf (device, managed or host memory)
//
// Both halves are the mpi backend's (mpi::PointToPoint, mpi_p2p.cpp);
// this file adds the copies between the caller's buffer and the host. Every
// wait goes through the Watch, with the timeout and the report of who is
// missing, as the collectives' waits do.
#include <vector>

#include "comm/nccl/nccl_detail.h"
#include "core/check.h"

namespace ss {

void NcclBackend::send(const void* buf, size_t count, DType dt, int peer, const std::string& axis,
                       const Label& label) {
    Impl& m = *impl_;
    mpi::PointToPoint& pt = m.session.pt;
    SS_CHECK(!m.aborted, "send to rank " << peer << ": the nccl backend of rank " << m.session.rank
                                         << " was aborted after an earlier error");
    mpi::PendingSend& s = pt.add(count, dt, peer, axis, label);
    // The copy waits for the caller's kernels (they may still be writing buf).
    m.use_gpu();
    m.after_caller();
    m.copy(s.data.data(), buf, s.data.size());
    pt.post();
    m.last_gpu_seconds = -1;
}

void NcclBackend::recv(void* buf, size_t count, DType dt, int peer, const std::string& axis, const Label& label) {
    Impl& m = *impl_;
    SS_CHECK(!m.aborted, "recv from rank " << peer << ": the nccl backend of rank " << m.session.rank
                                           << " was aborted after an earlier error");
    MPI_Message msg = m.session.pt.probe(*m.session.watch, peer, count, dt, axis, label);
    std::vector<char> host(count * dtype_size(dt) + 1);  // into the host first: buf may be GPU memory
    SS_MPI_CHECK(MPI_Mrecv(host.data(), int(count), mpi::datatype(dt), &msg, MPI_STATUS_IGNORE));
    // The copy waits for the caller's kernels (they may still be reading buf).
    m.use_gpu();
    m.after_caller();
    m.copy(buf, host.data(), count * dtype_size(dt));
    m.last_gpu_seconds = -1;
}

}  // namespace ss
