// comm.cpp — argument checks and tracing around the backend's collectives.
#include "comm/comm.h"

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <utility>

#include "comm/trace/trace.h"
#include "core/check.h"

namespace ss {

std::string ranks_str(const std::vector<int>& ranks) {
    std::ostringstream os;
    os << "[";
    for (size_t i = 0; i < ranks.size(); ++i) os << (i ? "," : "") << ranks[i];
    os << "]";
    return os.str();
}

std::string describe_call(const char* op, const Group& group, const Label& label) {
    std::ostringstream os;
    os << op << " on " << (group.axis.empty() ? "?" : group.axis) << " group " << ranks_str(group.ranks)
       << " (" << label_str(label) << ")";
    return os.str();
}

Comm::Comm(int rank, int world_size, std::unique_ptr<Backend> backend, Tracer* tracer)
    : rank_(rank), world_size_(world_size), backend_(std::move(backend)), tracer_(tracer) {
    SS_CHECK(world_size >= 1, "Comm: world size " << world_size << " must be at least 1");
    SS_CHECK(rank >= 0 && rank < world_size, "Comm: rank " << rank << " is outside the world [0, " << world_size << ")");
    SS_CHECK(backend_ != nullptr, "Comm: no backend given");
}

Comm::~Comm() = default;

Group Comm::world_group() const {
    Group g{"world", {}};
    for (int r = 0; r < world_size_; ++r) g.ranks.push_back(r);
    return g;
}

// ---- checks shared by every backend ----------------------------------------------

void Comm::check_group(const char* op, const Group& group) const {
    SS_CHECK(!group.ranks.empty(), op << " on " << group.axis << ": the group is empty");
    bool member = false;
    for (int r : group.ranks) {
        SS_CHECK(r >= 0 && r < world_size_, op << " on " << group.axis << " group " << ranks_str(group.ranks)
                                               << ": rank " << r << " is outside the world [0, " << world_size_ << ")");
        member |= (r == rank_);
    }
    SS_CHECK(member, op << " on " << group.axis << " group " << ranks_str(group.ranks) << ": rank " << rank_
                        << " called it but is not a member of the group");
    if (group.ranks.size() > 1) {
        std::vector<int> sorted = group.ranks;
        std::sort(sorted.begin(), sorted.end());
        auto dup = std::adjacent_find(sorted.begin(), sorted.end());
        SS_CHECK(dup == sorted.end(), op << " on " << group.axis << " group " << ranks_str(group.ranks)
                                         << ": rank " << *dup << " appears twice");
    }
}

void Comm::check_peer(const char* op, int peer) const {
    SS_CHECK(peer >= 0 && peer < world_size_,
             op << ": peer rank " << peer << " is outside the world [0, " << world_size_ << ")");
}

namespace {

void check_reducible(const char* op, DType dt) {
    SS_CHECK(dt == DType::f32 || dt == DType::bf16,
             op << ": reductions take fp32 or bf16, not " << dtype_name(dt));
}

void check_buffer(const char* op, const char* which, const void* p, size_t count) {
    SS_CHECK(p != nullptr || count == 0, op << ": " << which << " buffer is null but count is " << count);
}

// Do the byte ranges [a, a+na) and [b, b+nb) overlap?
bool overlap(const void* a, size_t na, const void* b, size_t nb) {
    auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
    return na && nb && pa < pb + nb && pb < pa + na;
}

}  // namespace

void Comm::trace(const char* op, const Group& group, size_t count, DType dt, const Label& label,
                 double start_us, int peer) {
    TraceEvent ev;
    ev.kind = TraceEvent::Kind::collective;
    ev.tid = kCommLane;
    ev.name = op;
    ev.cat = "comm";
    ev.ts_us = start_us;
    ev.dur_us = tracer_->now_us() - start_us;
    ev.axis = group.axis;
    ev.group = group.ranks;
    ev.count = count;
    ev.dtype = dtype_name(dt);
    ev.bytes = collective_bytes(op, count, dtype_size(dt), group.size());
    ev.label = label;
    ev.peer = peer;
    // The backend's own timing of the call on the device, where it has one (nccl's
    // CUDA events); asked right after the call, before anything else can run on it.
    const double gpu_seconds = backend_->last_gpu_seconds();
    if (gpu_seconds >= 0) ev.gpu_us = gpu_seconds * 1e6;
    tracer_->record(std::move(ev));
}

void Comm::run_hook(const char* op, const Group& group, const Label& label) {
    if (!next_call_hook_) return;
    auto hook = std::move(next_call_hook_);  // once: cleared before it runs (it may throw)
    next_call_hook_ = nullptr;
    hook(describe_call(op, group, label));
}

// ---- the collectives: check, call the backend, trace -------------------------------

void Comm::begin(const char* op, const Group& group, const Label& label) {
    run_hook(op, group, label);
    check_group(op, group);
}

namespace {

// all_gather and reduce_scatter: @p block (count_per_rank elements, mine) may sit
// in @p whole (n blocks) only at my index, in place; anywhere else they must not overlap.
void check_block_in(const char* op, const Group& group, const Label& label, int rank, const void* block,
                    const char* block_name, const void* whole, const char* whole_name, size_t count_per_rank,
                    DType dt) {
    const size_t bytes = count_per_rank * dtype_size(dt), n = group.size();
    const void* in_place = static_cast<const char*>(whole) + group.index_of(rank) * bytes;
    SS_CHECK(block == in_place || !overlap(block, bytes, whole, n * bytes),
             describe_call(op, group, label) << ": " << block_name << " overlaps " << whole_name
                                             << "; in place is allowed only with " << block_name << " = "
                                             << whole_name << " + my_index * count_per_rank");
}

}  // namespace

template <class Call>
void Comm::timed(const char* op, const Group& group, size_t count, DType dt, const Label& label, Call&& call,
                 int peer) {
    const double t0 = tracer_ ? tracer_->now_us() : 0;
    call();
    if (tracer_) trace(op, group, count, dt, label, t0, peer);
}

void Comm::all_reduce(void* buf, size_t count, DType dt, const Group& group, ReduceOp op, const Label& label) {
    begin("all_reduce", group, label);
    check_reducible("all_reduce", dt);
    check_buffer("all_reduce", "the", buf, count);
    timed("all_reduce", group, count, dt, label, [&] { backend_->all_reduce(buf, count, dt, group, op, label); });
}

void Comm::all_gather(const void* send, void* recv, size_t count_per_rank, DType dt, const Group& group,
                      const Label& label) {
    begin("all_gather", group, label);
    check_buffer("all_gather", "send", send, count_per_rank);
    check_buffer("all_gather", "recv", recv, count_per_rank);
    check_block_in("all_gather", group, label, rank_, send, "send", recv, "recv", count_per_rank, dt);
    timed("all_gather", group, count_per_rank, dt, label,
          [&] { backend_->all_gather(send, recv, count_per_rank, dt, group, label); });
}

void Comm::reduce_scatter(const void* send, void* recv, size_t count_per_rank, DType dt, const Group& group,
                          ReduceOp op, const Label& label) {
    begin("reduce_scatter", group, label);
    check_reducible("reduce_scatter", dt);
    check_buffer("reduce_scatter", "send", send, count_per_rank);
    check_buffer("reduce_scatter", "recv", recv, count_per_rank);
    check_block_in("reduce_scatter", group, label, rank_, recv, "recv", send, "send", count_per_rank, dt);
    timed("reduce_scatter", group, count_per_rank, dt, label,
          [&] { backend_->reduce_scatter(send, recv, count_per_rank, dt, group, op, label); });
}

void Comm::all_to_all(const void* send, void* recv, size_t count_per_rank, DType dt, const Group& group,
                      const Label& label) {
    begin("all_to_all", group, label);
    check_buffer("all_to_all", "send", send, count_per_rank);
    check_buffer("all_to_all", "recv", recv, count_per_rank);
    const size_t bytes = group.size() * count_per_rank * dtype_size(dt);
    SS_CHECK(!overlap(send, bytes, recv, bytes),
             describe_call("all_to_all", group, label) << ": send and recv overlap; all_to_all cannot run in place");
    timed("all_to_all", group, count_per_rank, dt, label,
          [&] { backend_->all_to_all(send, recv, count_per_rank, dt, group, label); });
}

void Comm::broadcast(void* buf, size_t count, DType dt, int root_index, const Group& group, const Label& label) {
    begin("broadcast", group, label);
    check_buffer("broadcast", "the", buf, count);
    SS_CHECK(root_index >= 0 && root_index < group.size(),
             describe_call("broadcast", group, label) << ": root index " << root_index
                 << " is not an index into the group (0.." << group.size() - 1 << "); it is the root's "
                 << "position in group.ranks, not its global rank");
    timed("broadcast", group, count, dt, label,
          [&] { backend_->broadcast(buf, count, dt, root_index, group, label); });
}

void Comm::send(const void* buf, size_t count, DType dt, int peer, const Label& label, const std::string& axis) {
    const Group pair{axis, {rank_, peer}};
    run_hook("send", pair, label);
    check_peer("send", peer);
    check_buffer("send", "the", buf, count);
    timed("send", pair, count, dt, label, [&] { backend_->send(buf, count, dt, peer, axis, label); }, peer);
}

void Comm::recv(void* buf, size_t count, DType dt, int peer, const Label& label, const std::string& axis) {
    const Group pair{axis, {peer, rank_}};
    run_hook("recv", pair, label);
    check_peer("recv", peer);
    check_buffer("recv", "the", buf, count);
    timed("recv", pair, count, dt, label, [&] { backend_->recv(buf, count, dt, peer, axis, label); }, peer);
}

void Comm::barrier(const Group& group, const Label& label) {
    begin("barrier", group, label);
    timed("barrier", group, 0, DType::f32, label, [&] { backend_->barrier(group, label); });
}

}  // namespace ss
