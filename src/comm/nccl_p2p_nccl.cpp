// nccl_p2p_nccl.cpp — send / recv of the `nccl` backend: over MPI, through the host.
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
// Every wait goes through the Watch, with the timeout and the report of who
// is missing, as the collectives' waits do.
#include <climits>

#include "comm/nccl_detail.h"
#include "core/check.h"

namespace ss {

using mpi::WaitInfo;

namespace {

// The tag carries the label's p2p_key (what recv matches on) and the sender's
// dtype, so recv can check the dtype (the same scheme as the mpi backend's).
constexpr int kSendTagBase = 100;
constexpr int kDTypes = 3;  // f32, bf16, i32
int p2p_tag(const Label& label, DType dt) { return kSendTagBase + int(dt) + kDTypes * p2p_key(label); }

bool test(MPI_Request& req) {
    int done = 0;
    SS_MPI_CHECK(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
    return done != 0;
}

}  // namespace

void NcclBackend::send(const void* buf, size_t count, DType dt, int peer, const std::string& axis,
                       const Label& label) {
    Impl& m = *impl_;
    SS_CHECK(!m.aborted, "send to rank " << peer << ": the nccl backend of rank " << m.rank
                                         << " was aborted after an earlier error");
    SS_CHECK(count <= size_t(INT_MAX), "send to rank " << peer << ": " << count
                                                        << " elements is more than MPI's int count allows");
    // Forget the sends that have completed (oldest first; later ones are rarely done before).
    while (!m.sends.empty() && test(m.sends.front().req)) m.sends.pop_front();
    Impl::PendingSend& s = m.sends.emplace_back();
    s.data.resize(count * dtype_size(dt));
    s.peer = peer;
    s.axis = axis;
    s.label = label;
    s.count = count;
    s.dt = dt;
    // The copy waits for the caller's kernels (they may still be writing buf).
    m.use_gpu();
    m.after_caller();
    m.copy(s.data.data(), buf, s.data.size());
    const int tag = p2p_tag(label, dt);
    if (m.tag_ub < 0) {  // the largest tag this MPI allows (at least 32767 by the standard)
        int* ub = nullptr;
        int flag = 0;
        SS_MPI_CHECK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag));
        m.tag_ub = flag && ub ? *ub : 32767;
    }
    SS_CHECK(tag <= m.tag_ub, "send to rank " << peer << ": message tag " << tag << " (" << label_str(label)
                                              << ") is above this MPI's MPI_TAG_UB " << m.tag_ub);
    SS_MPI_CHECK(MPI_Isend(s.data.data(), int(count), mpi::datatype(dt), peer, tag, m.p2p, &s.req));
    m.last_gpu_seconds = -1;
}

void NcclBackend::recv(void* buf, size_t count, DType dt, int peer, const std::string& axis, const Label& label) {
    Impl& m = *impl_;
    SS_CHECK(!m.aborted, "recv from rank " << peer << ": the nccl backend of rank " << m.rank
                                           << " was aborted after an earlier error");
    WaitInfo info;
    info.op = "recv";
    info.peer = peer;
    info.axis = &axis;
    info.label = &label;
    info.count = count;
    info.dt = dt;
    // Probe first: the message's size and type (in its tag) are checked before it is received.
    MPI_Message msg;
    MPI_Status st;
    m.watch->wait([&] {  // a message with my label's key, in whichever dtype it was sent
        for (int d = 0; d < kDTypes; ++d) {
            int found = 0;
            SS_MPI_CHECK(MPI_Improbe(peer, p2p_tag(label, DType(d)), m.p2p, &found, &msg, &st));
            if (found) return true;
        }
        return false;
    }, info);
    int bytes = 0;
    SS_MPI_CHECK(MPI_Get_count(&st, MPI_BYTE, &bytes));
    const DType sent_dt = DType((st.MPI_TAG - kSendTagBase) % kDTypes);
    const size_t sent_count = size_t(bytes) / dtype_size(sent_dt);
    std::vector<char> host(size_t(bytes) + 1);  // into the host first: buf may be GPU memory
    SS_MPI_CHECK(MPI_Mrecv(host.data(), bytes, MPI_BYTE, &msg, MPI_STATUS_IGNORE));
    SS_CHECK(sent_dt == dt && sent_count == count,
             "mismatched send/recv: rank " << peer << " sent " << sent_count << " x " << dtype_name(sent_dt)
                                           << " on " << axis << " but rank " << m.rank << " expects " << count
                                           << " x " << dtype_name(dt) << " in " << info.what());
    // The copy waits for the caller's kernels (they may still be reading buf).
    m.use_gpu();
    m.after_caller();
    m.copy(buf, host.data(), size_t(bytes));
    m.last_gpu_seconds = -1;
}

void NcclBackend::Impl::complete_sends() {
    while (!sends.empty()) {
        PendingSend& s = sends.front();
        WaitInfo info;
        info.op = "send";
        info.peer = s.peer;
        info.axis = &s.axis;
        info.label = &s.label;
        info.count = s.count;
        info.dt = s.dt;
        watch->wait([&] { return test(s.req); }, info);
        sends.pop_front();
    }
}

}  // namespace ss
