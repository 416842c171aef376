// mpi_session.cpp — one process's MPI session (mpi_session.h): set up, the
// prepared groups and their calls, and the end of a run, for the mpi and nccl
// backends alike.
//
// prepare() is collective over the world and a communicator split cannot time
// out, so before any split every rank checks, with a timeout, that all of them
// are here with the same list of groups:
//
//     h = hash(my groups)      all-reduce max over (h, ~h)      max(h) == h and max(~h) == ~h
//                              ───────────────────────────>     on every rank iff all the h are equal
//
// Then split_batches cuts the new groups into batches that share no rank, one
// split each (MPI_Comm_split or ncclCommSplit, in the backend).
#include "comm/mpi/mpi_session.h"

#include <chrono>
#include <set>
#include <thread>

#include "comm/trace/trace.h"
#include "core/check.h"

namespace ss::mpi {

namespace {

// FNV-1a over the rank lists of @p groups: equal on every rank iff they prepare the same groups.
uint64_t hash_groups(const std::vector<Group>& groups) {
    uint64_t h = 1469598103934665603ull;
    auto mix = [&](uint64_t v) {
        h ^= v;
        h *= 1099511628211ull;
    };
    for (const Group& g : groups) {
        mix(uint64_t(g.ranks.size()) | (1ull << 63));
        for (int r : g.ranks) mix(uint64_t(uint32_t(r)));
    }
    return h;
}

// Checks @p groups for prepare() in a world of @p world ranks (none empty, every rank in
// range, none twice; errors begin with @p who, e.g. "MpiBackend::prepare") and returns
// the groups whose rank list is neither in @p prepared nor earlier in @p groups.
std::vector<const Group*> fresh_groups(const std::vector<Group>& groups, int world,
                                       const std::map<std::vector<int>, int>& prepared, const std::string& who) {
    std::vector<const Group*> fresh;
    std::set<std::vector<int>> seen;
    for (size_t i = 0; i < groups.size(); ++i) {
        const Group& g = groups[i];
        SS_CHECK(!g.ranks.empty(), who << ": group " << i << " (" << g.axis << ") is empty");
        std::vector<char> in(size_t(world), 0);
        for (int r : g.ranks) {
            SS_CHECK(r >= 0 && r < world, who << ": group " << i << " (" << g.axis << " " << ranks_str(g.ranks)
                                              << ") has rank " << r << ", outside the world [0, " << world << ")");
            SS_CHECK(!in[size_t(r)], who << ": group " << i << " (" << g.axis << " " << ranks_str(g.ranks)
                                         << ") lists rank " << r << " twice");
            in[size_t(r)] = 1;
        }
        if (!prepared.count(g.ranks) && seen.insert(g.ranks).second) fresh.push_back(&g);
    }
    return fresh;
}

}  // namespace

// ---- set up and tear down ----------------------------------------------------------

Session::Session(const BackendNames& names_, double timeout_seconds) : names(names_), timeout(timeout_seconds) {
    SS_CHECK(timeout_seconds > 0, names.backend << " backend: timeout " << timeout_seconds << " s must be positive");
    ensure_initialized();
    SS_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    SS_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &world));
    // Non-blocking dups, so that a rank that never starts the backend is a timeout, not a hang.
    MPI_Request reqs[2];
    SS_MPI_CHECK(MPI_Comm_idup(MPI_COMM_WORLD, &p2p, &reqs[0]));
    SS_MPI_CHECK(MPI_Comm_idup(MPI_COMM_WORLD, &ctl, &reqs[1]));
    for (MPI_Request& r : reqs)
        SS_CHECK(wait_for(r, timeout_seconds),
                 names.backend << " backend: rank " << rank << " waited " << timeout_seconds
                               << " s for the other ranks to start the " << names.backend
                               << " backend (MPI_Comm_idup); does every process of the job call " << names.launcher
                               << "?");
    watch = std::make_unique<Watch>(ctl, rank, world, timeout_seconds);
    pt.comm = p2p;
    pt.rank = rank;
}

Session::~Session() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;  // too late to free anything; the process is ending
    watch.reset();
    pt.release();  // the sends in flight complete in the background
    if (p2p != MPI_COMM_NULL) MPI_Comm_free(&p2p);
    if (ctl != MPI_COMM_NULL) MPI_Comm_free(&ctl);
}

Group Session::world_group() const {
    Group g{"world", {}};
    for (int r = 0; r < world; ++r) g.ranks.push_back(r);
    return g;
}

// ---- the prepared groups -----------------------------------------------------------

std::vector<const Group*> Session::agree(const std::vector<Group>& groups) {
    const std::string who = std::string(names.cls) + "::prepare";
    // 1. Check the groups, and find the rank lists not prepared yet.
    std::vector<const Group*> fresh = fresh_groups(groups, world, prepared_index, who);

    // 2. Every rank is here with the same list (the file comment), within the timeout.
    const uint64_t h = hash_groups(groups);
    uint64_t both[2] = {h, ~h};
    MPI_Request req;
    SS_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, both, 2, MPI_UINT64_T, MPI_MAX, p2p, &req));
    const Group everyone = world_group();
    WaitInfo info;
    info.op = "prepare";
    info.group = &everyone;
    info.seq = prepares++;
    watch->wait([&] { return test(req); }, info);
    SS_CHECK(both[0] == h && both[1] == ~h,
             who << ": the ranks passed different lists of groups (rank " << rank << " passed " << groups.size()
                 << "); every rank must prepare the same groups in the same order, e.g. mesh_groups(mesh)");
    return fresh;
}

void Session::add(const Group& group, int me) {
    prepared_index[group.ranks] = int(groups.size());
    groups.push_back({me, 0});
}

int Session::begin_call(WaitInfo& info, const char* op, const Group& group, const Label& label, size_t count,
                        DType dt, const char* reduce) {
    auto it = prepared_index.find(group.ranks);
    SS_CHECK(it != prepared_index.end(),
             describe_call(op, group, label)
                 << ": this group has no " << names.library << " communicator. " << names.library
                 << " makes communicators collectively over the whole world" << names.split
                 << ", so every group must be prepared up front, on every rank: pass it to " << names.launcher
                 << " (" << names.launcher << "(body, opts, mesh_groups(mesh))) or " << names.cls << "::prepare()");
    Seat& seat = groups[size_t(it->second)];
    SS_CHECK(seat.me >= 0, describe_call(op, group, label) << ": rank " << rank << " is not a member");
    info.op = op;
    info.group = &group;
    info.label = &label;
    info.count = count;
    info.dt = dt;
    info.reduce = reduce;
    info.group_index = it->second;
    info.seq = seat.calls++;
    return it->second;
}

std::vector<SplitBatch> split_batches(const std::vector<const Group*>& fresh, int world, int rank) {
    std::vector<SplitBatch> batches;
    for (size_t first = 0; first < fresh.size();) {
        std::vector<char> used(size_t(world), 0);
        SplitBatch b;
        b.first = first;
        for (b.end = first; b.end < fresh.size(); ++b.end) {
            bool clash = false;
            for (int r : fresh[b.end]->ranks) clash |= used[size_t(r)] != 0;
            if (clash) break;
            for (int r : fresh[b.end]->ranks) used[size_t(r)] = 1;
        }
        for (size_t k = b.first; k < b.end; ++k) {
            const int me = fresh[k]->index_of(rank);
            if (me >= 0) b.color = int(k - b.first), b.key = me;
        }
        batches.push_back(b);
        first = b.end;
    }
    return batches;
}

// ---- the end of a run --------------------------------------------------------------

void Session::finish() {
    // 1. Every send has been received (a send nobody receives is a bug: say so).
    pt.complete(*watch);
    // 2. Tell the others how many calls I made on each group, and wait for theirs.
    std::vector<uint64_t> calls;
    for (const Seat& g : groups) calls.push_back(g.calls);
    watch->finish(calls);
}

// Sleep, answering nobody (not even the side channel's "where are you?"), as a
// rank stuck in its own code would. The rank that times out waiting for this
// one calls MPI_Abort, which ends this process too.
void Session::stall(const std::string& why) const {
    const double backstop = stall_backstop_seconds(timeout);
    std::this_thread::sleep_for(std::chrono::duration<double>(backstop));
    SS_FAIL(why << ": still stalled after " << backstop << " s and no other rank timed out waiting for it");
}

// ---- run_mpi and run_nccl ----------------------------------------------------------

Tracer* pick_tracer(const std::vector<Tracer*>& tracers, int rank, int world, const char* launcher) {
    if (tracers.empty()) return nullptr;
    SS_CHECK(tracers.size() == size_t(world) || tracers.size() == 1,
             launcher << ": opts.tracers has " << tracers.size() << " tracers for a world of " << world
                      << "; pass one per rank (make_tracers(" << world << ")) or exactly one, this process's");
    Tracer* t = tracers.size() == 1 ? tracers[0] : tracers[rank];
    SS_CHECK(t != nullptr, launcher << ": the tracer for rank " << rank << " is null");
    SS_CHECK(t->rank() == rank, launcher << ": the tracer given to rank " << rank << " records rank " << t->rank()
                                         << "; make it with ss::Tracer(ss::mpi_world_rank())");
    return t;
}

}  // namespace ss::mpi
