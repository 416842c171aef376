// test_comm_async_mpi.cpp — the mpi backend's start_* forms against its blocking
// forms, under `mpirun -np 2` and `-np 4` (tests/CMakeLists.txt runs both).
//
// A started call posts the same MPI non-blocking collective on the same data as
// the blocking one (src/comm/mpi/mpi_backend.cpp), so the comparison here is
// memcmp, not a tolerance: every op, f32 and bf16 where it reduces, counts 0, 1,
// odd and large, on groups of every shape. Then several calls in flight at once
// (each with its own scratch), waited out of order across communicators and in
// issue order on one; a handle dropped unwaited; and that a started call really
// is in flight: start returns before a late peer has arrived.
//
// The timeout of a started call whose peer never posts the match ends in
// MPI_Abort, so it runs as a job of its own (mpi_failures_mpi.cpp, mode "start").
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "comm/comm.h"
#include "comm/mpi/mpi_backend.h"
#include "core/dtype.h"
#include "mpi_catch.h"
#include "test_values.h"

using namespace ss;
using ss::test::check_none;
using ss::test::Failures;

namespace {

using ss::test::value;  // test_values.h

// count elements of dt filled with value(rank, i, salt) (i32: whole numbers), plus a spare byte.
std::vector<char> make_buf(DType dt, size_t count, int rank, int salt) {
    std::vector<char> b(count * dtype_size(dt) + 1, 0x5a);
    for (size_t i = 0; i < count; ++i) {
        const float v = value(rank, i, salt);
        if (dt == DType::bf16) {
            const uint16_t h = f32_to_bf16(v);
            std::memcpy(b.data() + 2 * i, &h, 2);
        } else if (dt == DType::i32) {
            const int32_t n = int32_t(v * 1000);
            std::memcpy(b.data() + 4 * i, &n, 4);
        } else {
            std::memcpy(b.data() + 4 * i, &v, 4);
        }
    }
    return b;
}

const std::vector<size_t> kCounts = {0, 1, 7, 1000, 4099};

std::string where(const char* op, const Group& g, DType dt, size_t count, const std::string& more = "") {
    std::ostringstream os;
    os << op << " " << g.axis << " " << ranks_str(g.ranks) << " " << dtype_name(dt) << " count " << count << more;
    return os.str();
}

// Same bytes, the spare byte included (a call that wrote past its end would differ there).
bool same(const std::vector<char>& a, const std::vector<char>& b) { return a == b; }

// The groups of the tests, as partitions of a world of n ranks (n = 2 or 4).
std::vector<std::vector<Group>> partitions(int n) {
    std::vector<int> all, reversed;
    for (int r = 0; r < n; ++r) all.push_back(r), reversed.insert(reversed.begin(), r);
    std::vector<std::vector<Group>> p = {{{"world", all}}, {{"world", reversed}}};
    std::vector<Group> singles;
    for (int r = 0; r < n; ++r) singles.push_back({"tp", {r}});
    p.push_back(singles);
    if (n == 4) {
        p.push_back({{"tp", {0, 1}}, {"tp", {2, 3}}});
        p.push_back({{"dp", {0, 2}}, {"dp", {1, 3}}});
        p.push_back({{"sp", {3, 1, 2}}, {"sp", {0}}});
    }
    return p;
}

std::vector<Group> flat(const std::vector<std::vector<Group>>& parts) {
    std::vector<Group> out;
    for (const auto& groups : parts) out.insert(out.end(), groups.begin(), groups.end());
    return out;
}

// Every collective on g (this rank is a member): blocking into one buffer,
// started and waited into another, the same bytes.
void compare_on_group(Comm& comm, const Group& g, Failures& fails) {
    const int n = g.size(), me = g.index_of(comm.rank());
    const Label label{Payload::grad, 1, Phase::bwd, -1, 0};
    for (DType dt : {DType::f32, DType::bf16}) {
        const size_t es = dtype_size(dt);
        for (size_t count : kCounts) {
            for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg}) {
                const std::string how = std::string(" ") + reduce_op_name(op);
                auto a = make_buf(dt, count, comm.rank(), 1), b = a;
                comm.all_reduce(a.data(), count, dt, g, op, label);
                CommHandle h = comm.start_all_reduce(b.data(), count, dt, g, op, label);
                comm.wait(h);
                if (!same(a, b)) fails.add(where("start_all_reduce", g, dt, count, how) + " differs from all_reduce");

                for (bool in_place : {false, true}) {
                    auto sa = make_buf(dt, n * count, comm.rank(), 2), sb = sa;
                    std::vector<char> ra(count * es + 1, 0x5a), rb = ra;
                    char* recv_a = in_place ? sa.data() + me * count * es : ra.data();
                    char* recv_b = in_place ? sb.data() + me * count * es : rb.data();
                    comm.reduce_scatter(sa.data(), recv_a, count, dt, g, op, label);
                    CommHandle hs = comm.start_reduce_scatter(sb.data(), recv_b, count, dt, g, op, label);
                    comm.wait(hs);
                    if (!same(sa, sb) || !same(ra, rb))
                        fails.add(where("start_reduce_scatter", g, dt, count, how + (in_place ? " in place" : "")) +
                                  " differs from reduce_scatter");
                }
            }
            for (bool in_place : {false, true}) {
                auto send = make_buf(dt, count, comm.rank(), 3);
                std::vector<char> a(n * count * es + 1, 0x5a);
                if (in_place) std::memcpy(a.data() + me * count * es, send.data(), count * es);
                std::vector<char> b = a;
                comm.all_gather(in_place ? a.data() + me * count * es : send.data(), a.data(), count, dt, g, label);
                CommHandle h = comm.start_all_gather(in_place ? b.data() + me * count * es : send.data(), b.data(),
                                                     count, dt, g, label);
                comm.wait(h);
                if (!same(a, b))
                    fails.add(where("start_all_gather", g, dt, count, in_place ? " in place" : "") + " differs");
            }
            {
                auto send = make_buf(dt, n * count, comm.rank(), 4);
                std::vector<char> a(n * count * es + 1, 0x5a), b = a;
                comm.all_to_all(send.data(), a.data(), count, dt, g, label);
                CommHandle h = comm.start_all_to_all(send.data(), b.data(), count, dt, g, label);
                comm.wait(h);
                if (!same(a, b)) fails.add(where("start_all_to_all", g, dt, count) + " differs");
            }
            for (int root = 0; root < n; ++root) {
                auto a = make_buf(dt, count, comm.rank(), 5), b = a;
                comm.broadcast(a.data(), count, dt, root, g, label);
                CommHandle h = comm.start_broadcast(b.data(), count, dt, root, g, label);
                comm.wait(h);
                if (!same(a, b)) fails.add(where("start_broadcast", g, dt, count, " root " + std::to_string(root)));
            }
        }
    }
    // int32 moves as bytes: an all_gather and a broadcast.
    {
        auto send = make_buf(DType::i32, 7, comm.rank(), 6);
        std::vector<char> a(n * 7 * 4 + 1, 0x5a), b = a;
        comm.all_gather(send.data(), a.data(), 7, DType::i32, g, label);
        CommHandle h = comm.start_all_gather(send.data(), b.data(), 7, DType::i32, g, label);
        comm.wait(h);
        if (!same(a, b)) fails.add(where("start_all_gather", g, DType::i32, 7) + " differs");
    }
    // send right, recv from the left, round the group's ring, started (the recv first: it is deferred to wait).
    for (size_t count : {size_t(0), size_t(7), size_t(4099)}) {
        const int right = g.ranks[(me + 1) % n], left = g.ranks[(me + n - 1) % n];
        auto out = make_buf(DType::f32, count, comm.rank(), 7);
        std::vector<char> a(count * 4 + 1, 0x5a), b = a;
        comm.send(out.data(), count, DType::f32, right, label, g.axis);
        comm.recv(a.data(), count, DType::f32, left, label, g.axis);
        CommHandle r = comm.start_recv(b.data(), count, DType::f32, left, label, g.axis);
        CommHandle s = comm.start_send(out.data(), count, DType::f32, right, label, g.axis);
        comm.wait(s);
        comm.wait(r);
        if (!same(a, b)) fails.add(where("start_send/start_recv", g, DType::f32, count) + " differs");
    }
}

}  // namespace

TEST_CASE("every start_* gives the bytes of its blocking call, on groups of every shape", "[comm][mpi][async]") {
    const auto parts = partitions(mpi_world_size());
    Failures fails;
    run_mpi([&](Comm& comm) {
        for (const auto& groups : parts)
            for (const Group& g : groups)
                if (g.index_of(comm.rank()) >= 0) compare_on_group(comm, g, fails);
    }, CommOptions{30, {}, {}}, flat(parts));
    check_none(fails);
}

TEST_CASE("several calls in flight: each has its own scratch; waited out of order across communicators",
          "[comm][mpi][async]") {
    const int n = mpi_world_size();
    std::vector<int> all;
    for (int r = 0; r < n; ++r) all.push_back(r);
    const Group world{"world", all};
    // Pairs [0,1] [2,3]; on 2 ranks [1,0], so that the pair is another communicator than the world.
    std::vector<Group> pairs;
    for (int r = 0; r + 1 < n; r += 2) pairs.push_back({"tp", n == 2 ? std::vector<int>{1, 0} : std::vector<int>{r, r + 1}});
    Failures fails;
    run_mpi([&](Comm& comm) {
        const int me = comm.rank();
        const Group& pair = pairs[size_t(me / 2)];
        const size_t count = 4099;
        const Label label{Payload::grad, 2, Phase::bwd, -1, 1};
        // The references, blocking, one at a time.
        auto x1 = make_buf(DType::bf16, count, me, 11), x2 = make_buf(DType::bf16, count, me, 12);
        auto rs_in = make_buf(DType::bf16, n * count, me, 13);
        auto ag_in = make_buf(DType::f32, count, me, 14);
        auto bc = make_buf(DType::f32, count, me, 15);
        auto f1 = make_buf(DType::f32, 1001, me, 16);
        auto ref1 = x1, ref2 = x2, ref_bc = bc, ref_f1 = f1;
        std::vector<char> ref_rs(count * 2 + 1, 0x5a), ref_ag(2 * count * 4 + 1, 0x5a);
        comm.all_reduce(ref1.data(), count, DType::bf16, world, ReduceOp::sum, label);
        comm.all_reduce(ref2.data(), count, DType::bf16, world, ReduceOp::avg, label);
        comm.reduce_scatter(rs_in.data(), ref_rs.data(), count, DType::bf16, world, ReduceOp::sum, label);
        comm.all_gather(ag_in.data(), ref_ag.data(), count, DType::f32, pair, label);
        comm.broadcast(ref_bc.data(), count, DType::f32, 1, pair, label);
        comm.all_reduce(ref_f1.data(), 1001, DType::f32, world, ReduceOp::avg, label);

        // The same calls, all in flight at once (two bf16 reductions on one group: a
        // shared fp32 scratch would mix them), one blocking call among them.
        std::vector<char> rs(count * 2 + 1, 0x5a), ag(2 * count * 4 + 1, 0x5a);
        CommHandle h1 = comm.start_all_reduce(x1.data(), count, DType::bf16, world, ReduceOp::sum, label);
        CommHandle h2 = comm.start_all_reduce(x2.data(), count, DType::bf16, world, ReduceOp::avg, label);
        CommHandle h3 = comm.start_reduce_scatter(rs_in.data(), rs.data(), count, DType::bf16, world, ReduceOp::sum,
                                                  label);
        CommHandle h4 = comm.start_all_gather(ag_in.data(), ag.data(), count, DType::f32, pair, label);
        CommHandle h5 = comm.start_broadcast(bc.data(), count, DType::f32, 1, pair, label);
        comm.all_reduce(f1.data(), 1001, DType::f32, world, ReduceOp::avg, label);  // blocking, after them
        if (comm.in_flight() != 5) fails.add("in_flight() = " + std::to_string(comm.in_flight()) + ", expected 5");
        // Out of order: the pair's calls (another communicator) first, the world's after, in issue order.
        comm.wait(h5);
        comm.wait(h4);
        comm.wait(h1);
        comm.wait(h2);
        comm.wait(h3);
        if (!same(x1, ref1)) fails.add("bf16 all_reduce sum in flight with others differs");
        if (!same(x2, ref2)) fails.add("bf16 all_reduce avg in flight with others differs");
        if (!same(rs, ref_rs)) fails.add("bf16 reduce_scatter in flight with others differs");
        if (!same(ag, ref_ag)) fails.add("all_gather on the pair differs");
        if (!same(bc, ref_bc)) fails.add("broadcast on the pair differs");
        if (!same(f1, ref_f1)) fails.add("the blocking all_reduce among started ones differs");

        // wait_all takes what is left, oldest first; a handle dropped unwaited finishes its call.
        auto y = make_buf(DType::f32, 7, me, 17), ref_y = y;
        auto z = make_buf(DType::bf16, 7, me, 18), ref_z = z;
        comm.all_reduce(ref_y.data(), 7, DType::f32, world, ReduceOp::sum, label);
        comm.all_reduce(ref_z.data(), 7, DType::bf16, pair, ReduceOp::sum, label);
        CommHandle hy = comm.start_all_reduce(y.data(), 7, DType::f32, world, ReduceOp::sum, label);
        { CommHandle dropped = comm.start_all_reduce(z.data(), 7, DType::bf16, pair, ReduceOp::sum, label); }
        if (!same(z, ref_z)) fails.add("a dropped handle's all_reduce did not finish with the right bytes");
        comm.wait_all();
        if (comm.in_flight() != 0) fails.add("wait_all left calls in flight");
        if (!same(y, ref_y)) fails.add("an all_reduce ended by wait_all differs");
        comm.wait(hy);  // already taken by wait_all: returns at once
    }, CommOptions{30, {}, {}}, pairs);
    check_none(fails);
}

TEST_CASE("a started call is in flight until wait: start returns before a late peer arrives", "[comm][mpi][async]") {
    Failures fails;
    double start_s = 0, wait_s = 0;
    run_mpi([&](Comm& comm) {
        const double late = 0.5;  // every rank but 0 arrives this late
        std::vector<float> x(1000, 1.0f);
        if (comm.rank() != 0) std::this_thread::sleep_for(std::chrono::duration<double>(late));
        const auto t0 = std::chrono::steady_clock::now();
        CommHandle h = comm.start_all_reduce(x.data(), x.size(), DType::f32, comm.world_group(), ReduceOp::sum, {});
        const auto t1 = std::chrono::steady_clock::now();
        comm.wait(h);
        const auto t2 = std::chrono::steady_clock::now();
        start_s = std::chrono::duration<double>(t1 - t0).count();
        wait_s = std::chrono::duration<double>(t2 - t1).count();
        for (float v : x)
            if (v != float(comm.world_size())) {
                fails.add("all_reduce gave " + std::to_string(v));
                break;
            }
    });
    check_none(fails);
    if (mpi_world_rank() == 0) {
        // start posts and returns (well under the peers' delay, on a loaded 2-core machine
        // too); the wait covers the rest of their 0.5 s.
        INFO("start took " << start_s << " s, wait " << wait_s << " s");
        CHECK(start_s < 0.2);
        CHECK(wait_s > 0.25);
    }
}

int main(int argc, char** argv) {
    const int rank = mpi_world_rank(), world = mpi_world_size();  // initialises MPI
    if (world != 2 && world != 4) {
        if (rank == 0)
            std::fprintf(stderr, "test_comm_async_mpi runs on 2 or 4 processes: mpirun -np 4 %s\n", argv[0]);
        return 2;
    }
    return test::run_catch_on_every_rank(argc, argv, "comm_async_mpi");
}
