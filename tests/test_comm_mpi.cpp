// test_comm_mpi.cpp — the mpi backend against serial references, under `mpirun -np 4`.
//
// Every process runs every test case, in the same order (mpi_catch.h: each rank
// collects what went wrong, and the job has one report and one exit code);
// assertions come after a test case's last collective, so a failing rank never
// skips a collective the others wait in. The start_* forms are compared with
// these blocking ones in test_comm_async_mpi.cpp.
//
// The failure paths (timeouts, a rank that skips a call or throws) end in
// MPI_Abort, which would end this test too: mpi_failure.sh runs them as jobs
// of their own (mpi_failures_mpi.cpp).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <mpi.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "comm/comm.h"
#include "comm/mpi/mpi_backend.h"
#include "comm/threads/threads_backend.h"
#include "comm/trace/trace.h"
#include "core/check.h"
#include "core/dtype.h"
#include "mesh/process_mesh.h"
#include "mpi_catch.h"
#include "test_values.h"

using namespace ss;
using ss::test::Failures;
using ss::test::check_none;

namespace {

constexpr int kWorld = 4;

using ss::test::value;  // test_values.h

// The same value as the dtype holds it (bf16: rounded to bf16).
float held(DType dt, float v) { return dt == DType::bf16 ? bf16_to_f32(f32_to_bf16(v)) : v; }

// count elements of dt filled with value(rank, offset + i, salt), plus a spare byte.
std::vector<char> make_buf(DType dt, size_t count, int rank, int salt) {
    std::vector<char> b(count * dtype_size(dt) + 1);
    for (size_t i = 0; i < count; ++i) {
        float v = value(rank, i, salt);
        if (dt == DType::bf16) {
            uint16_t h = f32_to_bf16(v);
            std::memcpy(b.data() + 2 * i, &h, 2);
        } else {
            std::memcpy(b.data() + 4 * i, &v, 4);
        }
    }
    return b;
}

float get(DType dt, const char* b, size_t i) {
    if (dt == DType::bf16) {
        uint16_t h;
        std::memcpy(&h, b + 2 * i, 2);
        return bf16_to_f32(h);
    }
    float f;
    std::memcpy(&f, b + 4 * i, 4);
    return f;
}

// Tolerance of a reduction over n values in [-1, 1] against the serial sum in double.
// fp32: MPI adds in its own order (not the threads backend's ring); any order makes
// n-1 roundings of at most 2^-24 relative on partial sums of magnitude <= n, so the
// results differ by at most ~n*n*2^-24. bf16: the fp32 sum is then rounded once,
// up to half a bf16 ulp (2^-9 relative); we allow a full ulp (2^-8) for fp32
// differences that push a value across a rounding boundary.
double tolerance(DType dt, int n, double ref) {
    double fp32 = double(n) * n * std::ldexp(1.0, -24) + 1e-12;
    return dt == DType::bf16 ? fp32 + std::fabs(ref) * std::ldexp(1.0, -8) : fp32;
}

const std::vector<size_t> kCounts = {0, 1, 7, 1000, 4099};

std::string where(const char* op, const Group& g, DType dt, size_t count) {
    std::ostringstream os;
    os << op << " " << g.axis << " " << ranks_str(g.ranks) << " " << dtype_name(dt) << " count " << count;
    return os.str();
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Every collective on group g (this rank is a member), checked against serial references.
void exercise_group(Comm& comm, const Group& g, Failures& fails) {
    const int n = g.size(), me = g.index_of(comm.rank());
    const Label label{Payload::grad, 0, Phase::bwd, -1, 0};
    for (DType dt : {DType::f32, DType::bf16}) {
        const size_t es = dtype_size(dt);
        for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg})
            for (size_t count : kCounts) {
                auto buf = make_buf(dt, count, comm.rank(), 1);
                comm.all_reduce(buf.data(), count, dt, g, op, label);
                for (size_t i = 0; i < count; ++i) {
                    double ref = 0;
                    for (int r : g.ranks) ref += held(dt, value(r, i, 1));
                    if (op == ReduceOp::avg) ref /= n;
                    const double got = get(dt, buf.data(), i);
                    if (std::fabs(got - ref) > tolerance(dt, n, ref)) {
                        fails.add(where("all_reduce", g, dt, count) + " " + reduce_op_name(op) + ": [" +
                                  std::to_string(i) + "] = " + std::to_string(got) + ", expected " + std::to_string(ref));
                        break;
                    }
                }
            }
        for (size_t count : kCounts) {
            // reduce_scatter, sum and avg; also in place (recv = my block of send)
            for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg})
                for (bool in_place : {false, true}) {
                    auto send = make_buf(dt, n * count, comm.rank(), 2);
                    std::vector<char> recv_buf(count * es + 1);
                    char* recv = in_place ? send.data() + me * count * es : recv_buf.data();
                    comm.reduce_scatter(send.data(), recv, count, dt, g, op, label);
                    for (size_t i = 0; i < count; ++i) {
                        double ref = 0;
                        for (int r : g.ranks) ref += held(dt, value(r, me * count + i, 2));
                        if (op == ReduceOp::avg) ref /= n;
                        if (std::fabs(get(dt, recv, i) - ref) > tolerance(dt, n, ref)) {
                            fails.add(where("reduce_scatter", g, dt, count) + (in_place ? " in place" : "") + ": [" +
                                      std::to_string(i) + "] = " + std::to_string(get(dt, recv, i)) + ", expected " +
                                      std::to_string(ref));
                            break;
                        }
                    }
                }
            // all_gather: exact; also in place (send = my block of recv)
            for (bool in_place : {false, true}) {
                std::vector<char> recv(n * count * es + 1);
                auto send = make_buf(dt, count, comm.rank(), 3);
                const void* src = send.data();
                if (in_place) {
                    std::memcpy(recv.data() + me * count * es, send.data(), count * es);
                    src = recv.data() + me * count * es;
                }
                comm.all_gather(src, recv.data(), count, dt, g, label);
                bool ok = true;
                for (int j = 0; j < n && ok; ++j)
                    for (size_t i = 0; i < count && ok; ++i)
                        ok = get(dt, recv.data(), j * count + i) == held(dt, value(g.ranks[j], i, 3));
                if (!ok) fails.add(where("all_gather", g, dt, count) + (in_place ? " in place" : "") + ": wrong");
            }
            // all_to_all: block j of my send (value(me, j*count + i)) goes to member j
            {
                auto send = make_buf(dt, n * count, comm.rank(), 4);
                std::vector<char> recv(n * count * es + 1);
                comm.all_to_all(send.data(), recv.data(), count, dt, g, label);
                bool ok = true;
                for (int j = 0; j < n && ok; ++j)
                    for (size_t i = 0; i < count && ok; ++i)
                        ok = get(dt, recv.data(), j * count + i) == held(dt, value(g.ranks[j], me * count + i, 4));
                if (!ok) fails.add(where("all_to_all", g, dt, count) + ": wrong");
            }
        }
        // broadcast from every root, and an int32 broadcast (bytes only)
        for (int root = 0; root < n; ++root)
            for (size_t count : {size_t(1), size_t(4099)}) {
                auto buf = make_buf(dt, count, comm.rank(), 5);
                comm.broadcast(buf.data(), count, dt, root, g, label);
                for (size_t i = 0; i < count; ++i)
                    if (get(dt, buf.data(), i) != held(dt, value(g.ranks[root], i, 5))) {
                        fails.add(where("broadcast", g, dt, count) + " root " + std::to_string(root));
                        break;
                    }
            }
    }
    std::vector<int32_t> ints(7, comm.rank() * 1000);
    comm.broadcast(ints.data(), ints.size(), DType::i32, n - 1, g, label);
    if (ints != std::vector<int32_t>(7, g.ranks[n - 1] * 1000)) fails.add(where("broadcast", g, DType::i32, 7));
    comm.barrier(g, label);
    // send right, then recv from the left, round the group's ring (cannot deadlock:
    // send never waits for its receiver)
    for (size_t count : {size_t(0), size_t(7), size_t(4099)}) {
        const int right = g.ranks[(me + 1) % n], left = g.ranks[(me + n - 1) % n];
        auto out = make_buf(DType::f32, count, comm.rank(), 6);
        std::vector<char> in(count * 4 + 1);
        comm.send(out.data(), count, DType::f32, right, label, g.axis);
        comm.recv(in.data(), count, DType::f32, left, label, g.axis);
        for (size_t i = 0; i < count; ++i)
            if (get(DType::f32, in.data(), i) != value(left, i, 6)) {
                fails.add(where("send/recv", g, DType::f32, count));
                break;
            }
    }
}

Group world_group() { return Group{"world", {0, 1, 2, 3}}; }

// The shapes of group the tests use, as partitions of the 4-rank world.
const std::vector<std::pair<const char*, std::vector<Group>>>& partitions() {
    static const std::vector<std::pair<const char*, std::vector<Group>>> p = {
        {"the world", {world_group()}},
        {"pairs [0,1] [2,3]", {{"tp", {0, 1}}, {"tp", {2, 3}}}},
        {"strided pairs [0,2] [1,3]", {{"dp", {0, 2}}, {"dp", {1, 3}}}},
        {"the world in another order [2,0,3,1]", {{"world", {2, 0, 3, 1}}}},
        {"three and one [3,1,2] [0]", {{"sp", {3, 1, 2}}, {"sp", {0}}}},
        {"single ranks", {{"tp", {0}}, {"tp", {1}}, {"tp", {2}}, {"tp", {3}}}},
    };
    return p;
}

}  // namespace

TEST_CASE("every collective matches a serial reference on groups of every shape", "[comm][mpi]") {
    REQUIRE(mpi_world_size() == kWorld);
    std::vector<Group> all;
    for (const auto& [name, groups] : partitions()) all.insert(all.end(), groups.begin(), groups.end());
    Failures fails;
    run_mpi([&](Comm& comm) {
        if (std::string(comm.backend_name()) != "mpi") fails.add(std::string("backend ") + comm.backend_name());
        for (const auto& [name, groups] : partitions())
            for (const Group& g : groups)
                if (g.index_of(comm.rank()) >= 0) exercise_group(comm, g, fails);
    }, CommOptions{30, {}, {}}, all);
    check_none(fails);
}

TEST_CASE("bf16 sums round once, from an fp32 sum", "[comm][mpi]") {
    // 1 + 3 * 2^-9: exact in fp32, 0.75 of a bf16 ulp above 1, so it rounds to
    // 1 + 2^-7. Rounding to bf16 after each addition would give 1 every time
    // (1 + 2^-9 is a quarter ulp and rounds back down).
    const float expected = 1.0f + std::ldexp(1.0f, -7);
    Failures fails;
    run_mpi([&](Comm& comm) {
        const uint16_t mine = f32_to_bf16(comm.rank() == 0 ? 1.0f : std::ldexp(1.0f, -9));
        std::vector<uint16_t> x(5, mine);
        comm.all_reduce(x.data(), x.size(), DType::bf16, comm.world_group(), ReduceOp::sum, {});
        for (uint16_t h : x)
            if (bf16_to_f32(h) != expected) fails.add("all_reduce gave " + std::to_string(bf16_to_f32(h)));
        std::vector<uint16_t> send(kWorld * 3, mine), recv(3);
        comm.reduce_scatter(send.data(), recv.data(), 3, DType::bf16, comm.world_group(), ReduceOp::sum, {});
        for (uint16_t h : recv)
            if (bf16_to_f32(h) != expected) fails.add("reduce_scatter gave " + std::to_string(bf16_to_f32(h)));
    });
    check_none(fails);
}

TEST_CASE("reductions give the same bits on every rank, and from run to run", "[comm][mpi]") {
    const size_t count = 4099;
    std::vector<float> first;
    Failures fails;
    for (int run = 0; run < 2; ++run)
        run_mpi([&](Comm& comm) {
            std::vector<float> x(count);
            for (size_t i = 0; i < count; ++i) x[i] = value(comm.rank(), i, 7) * 1e-3f + value(comm.rank(), i, 8);
            comm.all_reduce(x.data(), count, comm.world_group(), ReduceOp::avg, {});
            std::vector<float> everyone(kWorld * count);
            comm.all_gather(x.data(), everyone.data(), count, comm.world_group(), {});
            for (int r = 0; r < kWorld; ++r)
                if (std::memcmp(everyone.data() + r * count, x.data(), count * 4) != 0)
                    fails.add("rank " + std::to_string(r) + "'s all_reduce result differs in its bits");
            if (run == 0) first = x;
            else if (std::memcmp(first.data(), x.data(), count * 4) != 0)
                fails.add("the second run differs in its bits");
        });
    check_none(fails);
}

TEST_CASE("send never waits for the receiver; messages keep their order; sizes are checked", "[comm][mpi]") {
    Failures fails;
    std::string mismatch;
    run_mpi([&](Comm& comm) {
        const int me = comm.rank(), right = (me + 1) % kWorld, left = (me + kWorld - 1) % kWorld;
        // 1. A ring of 4 MiB messages: every rank sends before it receives. A blocking
        //    MPI_Send this large waits for the matching receive, which would deadlock.
        const size_t big = size_t(1) << 20;
        std::vector<float> out(big), in(big);
        for (size_t i = 0; i < big; ++i) out[i] = float(me * 10 + int(i % 7));
        comm.send(out.data(), big, right, {Payload::act, -1, Phase::fwd}, "sp");
        out.assign(big, -1.0f);  // send copied the data: reusing the buffer at once is allowed
        comm.recv(in.data(), big, left, {Payload::act, -1, Phase::fwd}, "sp");
        for (size_t i = 0; i < big; ++i)
            if (in[i] != float(left * 10 + int(i % 7))) {
                fails.add("ring: element " + std::to_string(i) + " from rank " + std::to_string(left) + " is wrong");
                break;
            }
        // 2. Everyone sends 5 messages to everyone (itself included), then receives them: in order.
        for (int k = 0; k < 5; ++k)
            for (int to = 0; to < kWorld; ++to) {
                float v = float(me * 100 + k);
                comm.send(&v, 1, to, {Payload::act, -1, Phase::fwd, k}, "pp");
            }
        for (int from = 0; from < kWorld; ++from)
            for (int k = 0; k < 5; ++k) {
                float v = -1;
                comm.recv(&v, 1, from, {Payload::act, -1, Phase::fwd, k}, "pp");
                if (v != float(from * 100 + k))
                    fails.add("message " + std::to_string(k) + " from rank " + std::to_string(from) + " arrived as " +
                              std::to_string(v));
            }
        // 3. bf16 moves as 16-bit words.
        std::vector<uint16_t> h(5, f32_to_bf16(float(me) + 0.5f)), got(5);
        comm.send(h.data(), 5, DType::bf16, right, {}, "pp");
        comm.recv(got.data(), 5, DType::bf16, left, {}, "pp");
        if (got != std::vector<uint16_t>(5, f32_to_bf16(float(left) + 0.5f))) fails.add("bf16 send/recv wrong");
        // 4. A size mismatch is reported (and the message is taken off the wire, so the job goes on).
        std::vector<float> v(8, 1.0f);
        if (me == 0) comm.send(v.data(), 8, 1, {Payload::act, 3, Phase::fwd}, "pp");
        if (me == 1) {
            try {
                comm.recv(v.data(), 4, 0, {Payload::act, 3, Phase::fwd}, "pp");
                fails.add("a size mismatch did not throw");
            } catch (const Error& e) {
                mismatch = e.what();
            }
        }
        comm.barrier(comm.world_group(), {});
    });
    check_none(fails);
    if (mpi_world_rank() == 1) {
        INFO(mismatch);
        CHECK(has(mismatch, "mismatched send/recv: rank 0 sent 8 x fp32 on pp but rank 1 expects 4 x fp32"));
    }
}

TEST_CASE("every group of a mesh can be used once run_mpi has prepared mesh_groups", "[comm][mpi]") {
    Failures fails;
    for (MeshShape shape : {MeshShape{1, 1, 2, 1, 2}, MeshShape{2, 1, 1, 1, 2}, MeshShape{1, 2, 1, 2, 1}}) {
        const ProcessMesh mesh(kWorld, shape);
        run_mpi([&](Comm& comm) {
            for (GroupKind kind : all_group_kinds()) {
                const Group g = mesh.group(kind, comm.rank());
                float x = float(1 << comm.rank()), expected = 0;
                for (int r : g.ranks) expected += float(1 << r);
                comm.all_reduce(&x, 1, g, ReduceOp::sum, {});
                if (x != expected) fails.add(std::string(group_kind_name(kind)) + " group " + ranks_str(g.ranks));
            }
        }, {}, mesh_groups(mesh));
    }
    check_none(fails);
}

TEST_CASE("a group that was not prepared is refused with a message that says what to do", "[comm][mpi]") {
    std::string m;
    run_mpi([&](Comm& comm) {
        float x = 1;
        if (comm.rank() == 0 || comm.rank() == 3) {
            try {  // thrown before any MPI call, so the job can go on
                comm.all_reduce(&x, 1, Group{"dp", {0, 3}}, ReduceOp::sum, {Payload::grad, 2});
            } catch (const Error& e) {
                m = e.what();
            }
        }
    });
    if (mpi_world_rank() == 0 || mpi_world_rank() == 3) {
        INFO(m);
        CHECK(has(m, "all_reduce on dp group [0,3] (grad, layer 2): this group has no MPI communicator"));
        CHECK(has(m, "mesh_groups(mesh)"));
    }
}

TEST_CASE("prepare refuses lists that differ between ranks, on every rank", "[comm][mpi]") {
    std::string m;
    {
        MpiBackend backend(30);
        const std::vector<Group> mine = mpi_world_rank() == 2 ? std::vector<Group>{{"tp", {0, 1}}}
                                                               : std::vector<Group>{{"tp", {2, 3}}};
        try {
            backend.prepare(mine);
        } catch (const Error& e) {
            m = e.what();
        }
        backend.finish();
    }
    INFO(m);
    CHECK(has(m, "the ranks passed different lists of groups"));
}

// ---- the trace ---------------------------------------------------------------------

namespace {

// A fixed script of calls on several groups, every op, with labels.
void scripted(Comm& comm) {
    const int me = comm.rank();
    const Group world = comm.world_group();
    const Group tp{"tp", {me / 2 * 2, me / 2 * 2 + 1}};
    const Group dp{"dp", {me % 2, me % 2 + 2}};
    std::vector<float> x(12, 1.0f), y(48);
    std::vector<uint16_t> h(12, f32_to_bf16(1.0f));
    comm.all_reduce(x.data(), 12, dp, ReduceOp::avg, {Payload::grad, 1, Phase::bwd, 0, 5});
    comm.all_reduce(h.data(), 12, DType::bf16, tp, ReduceOp::sum, {Payload::act, 0, Phase::fwd, 1, 5});
    comm.all_gather(x.data(), y.data(), 6, tp, {Payload::param, 2, Phase::fwd, -1, 5});
    comm.reduce_scatter(y.data(), x.data(), 3, world, ReduceOp::sum, {Payload::grad, 2, Phase::bwd, -1, 5});
    comm.all_to_all(y.data(), y.data() + 24, 12, tp, {Payload::act, 3, Phase::fwd});
    comm.broadcast(x.data(), 12, 1, dp, {Payload::param});
    comm.send(x.data(), 3, (me + 1) % kWorld, {Payload::act, -1, Phase::fwd, 2}, "pp");
    comm.recv(y.data(), 3, (me + kWorld - 1) % kWorld, {Payload::act, -1, Phase::fwd, 2}, "pp");
    comm.barrier(world, {Payload::scalar, -1, Phase::step, -1, 5});
}

std::string show(const TraceEvent& e) {
    std::ostringstream os;
    os << e.name << " " << e.axis << " " << ranks_str(e.group) << " bytes=" << e.bytes << " count=" << e.count << " "
       << e.dtype << " peer=" << e.peer << " tid=" << e.tid << " (" << label_str(e.label) << ")";
    return os.str();
}

}  // namespace

TEST_CASE("the tracer records the same events under mpi as under threads", "[comm][mpi][trace]") {
    const std::vector<Group> groups = {{"tp", {0, 1}}, {"tp", {2, 3}}, {"dp", {0, 2}}, {"dp", {1, 3}}};
    auto on_threads = make_tracers(kWorld);
    std::vector<Tracer*> ptrs;
    for (auto& t : on_threads) ptrs.push_back(t.get());
    run_threads(kWorld, scripted, CommOptions{30, ptrs});  // the same script, in this process alone

    Tracer on_mpi(mpi_world_rank());
    run_mpi(scripted, CommOptions{30, {&on_mpi}}, groups);

    std::vector<std::string> expected, got;
    for (const auto& e : on_threads[mpi_world_rank()]->events()) expected.push_back(show(e));
    for (const auto& e : on_mpi.events()) got.push_back(show(e));
    CHECK(got.size() == 9);
    CHECK(got == expected);
}

TEST_CASE("write_chrome_trace_mpi: one file with every rank, on one clock", "[comm][mpi][trace]") {
    const int rank = mpi_world_rank();
    // Each process's tracer starts 10 s apart: only the alignment puts their lanes together.
    Tracer tracer(rank, TraceClock::now() - std::chrono::seconds(10 * rank));
    run_mpi([&](Comm& comm) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20 * comm.rank()));
        { ScopedSpan span(&tracer, "h.0 forward", "fwd"); }
        // A started call: its event carries issued_us and exposed_us, which must survive the merge.
        std::vector<float> x(256, 1.0f);
        CommHandle h = comm.start_all_reduce(x.data(), x.size(), DType::f32, comm.world_group(), ReduceOp::sum,
                                             {Payload::grad, -1, Phase::bwd, -1, 0});
        comm.wait(h);
        comm.barrier(comm.world_group(), {Payload::scalar, -1, Phase::step, -1, 0});
    }, CommOptions{30, {&tracer}});
    const std::string path = std::string(SS_BINARY_DIR) + "/test_out/comm_mpi/trace.json";
    write_chrome_trace_mpi(path, tracer, {{"backend", "mpi"}});

    std::string unwritable;
    try {
        write_chrome_trace_mpi("/proc/self/no/such/dir/trace.json", tracer);
    } catch (const Error& e) {
        unwritable = e.what();
    }
    INFO(unwritable);
    CHECK(has(unwritable, rank == 0 ? "cannot" : "rank 0 could not write the trace: "));

    if (rank != 0) return;
    const Trace t = read_chrome_trace(path);
    CHECK(t.world() == kWorld);
    CHECK(t.other_data.value("backend", "") == "mpi");
    std::vector<int> spans(kWorld), barriers(kWorld);
    std::vector<double> barrier_end(kWorld);
    for (const auto& e : t.events) {
        if (e.kind == TraceEvent::Kind::span) ++spans[e.rank];
        if (e.name == "barrier") {
            ++barriers[e.rank];
            barrier_end[e.rank] = e.ts_us + e.dur_us;
        }
    }
    CHECK(spans == std::vector<int>(kWorld, 1));
    CHECK(barriers == std::vector<int>(kWorld, 1));
    // The started all-reduce's overlap fields, on rank 0's clock like ts (the tracers are
    // 10 s apart: an issued_us left unshifted would be 10 s per rank from its ts).
    int started = 0;
    for (const auto& e : t.events)
        if (e.name == "all_reduce") {
            ++started;
            INFO("rank " << e.rank << ": issued " << e.issued_us << " us, ts " << e.ts_us << " us, exposed "
                         << e.exposed_us << " of " << e.dur_us << " us");
            CHECK(e.issued_us >= 0);
            CHECK(e.issued_us <= e.ts_us + 1);
            CHECK(e.ts_us - e.issued_us < 5e6);
            CHECK(e.exposed_us >= 0);
            CHECK(e.exposed_us <= e.dur_us + 1);
        }
    CHECK(started == kWorld);
    // Every rank leaves the barrier at about the same moment. Without the shift the
    // ends would be 10 s apart; with it they agree to the barrier's exit skew, which
    // on an oversubscribed machine (4 ranks on 2 cores) can be a scheduler slice or two.
    for (int r = 1; r < kWorld; ++r) {
        INFO("rank " << r << " leaves the barrier at " << barrier_end[r] << " us, rank 0 at " << barrier_end[0]);
        CHECK(std::fabs(barrier_end[r] - barrier_end[0]) < 200e3);
    }
}

// ---- main: MPI around Catch, one report, one exit code for the job -----------------------

int main(int argc, char** argv) {
    const int rank = mpi_world_rank();  // initialises MPI; MPI_Finalize runs at exit
    if (mpi_world_size() != kWorld) {
        if (rank == 0)
            std::fprintf(stderr, "test_comm_mpi needs %d processes: mpirun --allow-run-as-root --oversubscribe -np %d %s\n",
                         kWorld, kWorld, argv[0]);
        return 2;
    }
    return test::run_catch_on_every_rank(argc, argv, "comm_mpi");
}
