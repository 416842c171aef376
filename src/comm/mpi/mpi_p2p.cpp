// mpi_p2p.cpp — send / recv over MPI (mpi::PointToPoint, mpi_detail.h), for the
// mpi and nccl backends alike.
//
//     send: copy the data (add) ──MPI_Isend, tag = label's p2p_key + dtype (post)──> returns at once
//     recv: MPI_Improbe on that tag, through the Watch (probe) ──checks count and dtype──> MPI_Mrecv
//     end:  every send received (complete), with the timeout
#include <climits>

#include "comm/comm.h"
#include "comm/mpi/mpi_detail.h"
#include "core/check.h"

namespace ss::mpi {

namespace {

// The tag: the label's p2p_key (what recv matches on) and the sender's dtype (what it checks).
constexpr int kSendTagBase = 100;
constexpr int kDTypes = 3;  // f32, bf16, i32
int p2p_tag(const Label& label, DType dt) { return kSendTagBase + int(dt) + kDTypes * p2p_key(label); }

}  // namespace

PendingSend& PointToPoint::add(size_t count, DType dt, int peer, const std::string& axis, const Label& label) {
    SS_CHECK(count <= size_t(INT_MAX), "send to rank " << peer << ": " << count
                                                        << " elements is more than MPI's int count allows");
    // Forget the sends that have completed (oldest first; later ones are rarely done before).
    while (!sends.empty() && test(sends.front().req)) sends.pop_front();
    sends.push_back({MPI_REQUEST_NULL, std::vector<char>(count * dtype_size(dt)), peer, axis, label, count, dt});
    return sends.back();
}

void PointToPoint::post() {
    PendingSend& s = sends.back();
    const int tag = p2p_tag(s.label, s.dt);
    if (tag_ub < 0) {  // the largest tag this MPI allows (at least 32767 by the standard)
        int* ub = nullptr;
        int flag = 0;
        SS_MPI_CHECK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag));
        tag_ub = flag && ub ? *ub : 32767;
    }
    SS_CHECK(tag <= tag_ub, "send to rank " << s.peer << ": message tag " << tag << " (" << label_str(s.label)
                                            << ") is above this MPI's MPI_TAG_UB " << tag_ub);
    // A copy + MPI_Isend returns whether or not the receiver is ready, for any size
    // (a plain MPI_Send of a large message would wait for the matching receive).
    SS_MPI_CHECK(MPI_Isend(s.data.data(), int(s.count), datatype(s.dt), s.peer, tag, comm, &s.req));
}

MPI_Message PointToPoint::probe(Watch& watch, int peer, size_t count, DType dt, const std::string& axis,
                                const Label& label) {
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
    watch.wait([&] {  // a message with my label's key, in whichever dtype it was sent
        for (int d = 0; d < kDTypes; ++d) {
            int found = 0;
            SS_MPI_CHECK(MPI_Improbe(peer, p2p_tag(label, DType(d)), comm, &found, &msg, &st));
            if (found) return true;
        }
        return false;
    }, info);
    int bytes = 0;
    SS_MPI_CHECK(MPI_Get_count(&st, MPI_BYTE, &bytes));
    const DType sent_dt = DType((st.MPI_TAG - kSendTagBase) % kDTypes);
    const size_t sent_count = size_t(bytes) / dtype_size(sent_dt);
    if (sent_dt != dt || sent_count != count) {
        std::vector<char> sink(size_t(bytes) + 1);  // take it off the wire before reporting
        SS_MPI_CHECK(MPI_Mrecv(sink.data(), bytes, MPI_BYTE, &msg, MPI_STATUS_IGNORE));
        SS_FAIL("mismatched send/recv: rank " << peer << " sent " << sent_count << " x " << dtype_name(sent_dt)
                                              << " on " << axis << " but rank " << rank << " expects " << count
                                              << " x " << dtype_name(dt) << " in " << info.what());
    }
    return msg;
}

void PointToPoint::complete(Watch& watch) {
    while (!sends.empty()) {
        PendingSend& s = sends.front();
        WaitInfo info;
        info.op = "send";
        info.peer = s.peer;
        info.axis = &s.axis;
        info.label = &s.label;
        info.count = s.count;
        info.dt = s.dt;
        watch.wait([&] { return test(s.req); }, info);
        sends.pop_front();
    }
}

void PointToPoint::release() {
    for (PendingSend& s : sends) MPI_Request_free(&s.req);
    sends.clear();
}

}  // namespace ss::mpi
