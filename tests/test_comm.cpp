// test_comm.cpp — the collectives of the threads backend against serial references,
// run-to-run bit-exactness, and the failure reports (desync, a failing rank, mismatches).
//
// Catch2's assertions are not thread-safe, so rank threads never call them:
// each rank writes what went wrong into its own list (Failures) and the test
// thread checks the lists after run_threads returns.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "comm/comm.h"
#include "rank_failures.h"
#include "comm/threads/threads_backend.h"
#include "comm/trace/trace.h"
#include "core/check.h"
#include "core/dtype.h"
#include "test_values.h"

using namespace ss;

namespace {

using ss::test::value;  // test_values.h

// The same value as the dtype holds it (bf16: rounded to bf16).
float held(DType dt, float v) { return dt == DType::bf16 ? bf16_to_f32(f32_to_bf16(v)) : v; }

// A buffer of count elements of dt filled with value(rank, offset + i, salt).
std::vector<char> make_buf(DType dt, size_t count, int rank, int salt, size_t offset = 0) {
    std::vector<char> b(count * dtype_size(dt) + 1);
    for (size_t i = 0; i < count; ++i) {
        float v = value(rank, offset + i, salt);
        if (dt == DType::bf16) {
            uint16_t h = f32_to_bf16(v);
            std::memcpy(b.data() + 2 * i, &h, 2);
        } else {
            std::memcpy(b.data() + 4 * i, &v, 4);
        }
    }
    return b;
}

float get(DType dt, const std::vector<char>& b, size_t i) {
    if (dt == DType::bf16) {
        uint16_t h;
        std::memcpy(&h, b.data() + 2 * i, 2);
        return bf16_to_f32(h);
    }
    float f;
    std::memcpy(&f, b.data() + 4 * i, 4);
    return f;
}

// Tolerance of a reduction over n values in [-1, 1] against the serial sum in double.
// fp32: the ring and a serial sum each make n-1 roundings of at most 2^-24 relative
// on partial sums of magnitude <= n, so they differ by at most ~n*n*2^-24.
// bf16: the fp32 sum is then rounded once to bf16, up to half a bf16 ulp
// (2^-9 relative); we allow a full ulp (2^-8) for the fp32 differences that
// push a value across a rounding boundary.
double tolerance(DType dt, int n, double ref) {
    double fp32 = double(n) * n * std::ldexp(1.0, -24) + 1e-12;
    return dt == DType::bf16 ? fp32 + std::fabs(ref) * std::ldexp(1.0, -8) : fp32;
}

const std::vector<size_t> kCounts = {0, 1, 7, 1000, 4099};

std::string where(const char* op, const Group& g, DType dt, size_t count, int rank) {
    std::ostringstream os;
    os << op << " " << g.axis << " " << ranks_str(g.ranks) << " " << dtype_name(dt) << " count " << count
       << " on rank " << rank;
    return os.str();
}

// Every collective on the group that contains this rank, checked against references.
void exercise_group(Comm& comm, const Group& g, Failures& fails) {
    const int n = g.size(), me = g.index_of(comm.rank());
    const Label label{Payload::grad, 0, Phase::bwd, -1, 0};
    for (DType dt : {DType::f32, DType::bf16}) {
        // all_reduce, sum and avg
        for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg}) {
            for (size_t count : kCounts) {
                auto buf = make_buf(dt, count, comm.rank(), 1);
                comm.all_reduce(buf.data(), count, dt, g, op, label);
                for (size_t i = 0; i < count; ++i) {
                    double ref = 0;
                    for (int r : g.ranks) ref += held(dt, value(r, i, 1));
                    if (op == ReduceOp::avg) ref /= n;
                    double got = get(dt, buf, i);
                    if (std::fabs(got - ref) > tolerance(dt, n, ref)) {
                        fails.add(where("all_reduce", g, dt, count, comm.rank()) + ": [" + std::to_string(i) +
                                  "] = " + std::to_string(got) + ", expected " + std::to_string(ref));
                        break;
                    }
                }
            }
        }
        for (size_t count : kCounts) {
            // reduce_scatter: recv = my block of the sum; also in place
            for (bool in_place : {false, true}) {
                auto send = make_buf(dt, n * count, comm.rank(), 2);
                std::vector<char> recv_buf(count * dtype_size(dt) + 1);
                char* recv = in_place ? send.data() + me * count * dtype_size(dt) : recv_buf.data();
                comm.reduce_scatter(send.data(), recv, count, dt, g, ReduceOp::sum, label);
                std::vector<char> got(recv, recv + count * dtype_size(dt));
                for (size_t i = 0; i < count; ++i) {
                    double ref = 0;
                    for (int r : g.ranks) ref += held(dt, value(r, me * count + i, 2));
                    if (std::fabs(get(dt, got, i) - ref) > tolerance(dt, n, ref)) {
                        fails.add(where("reduce_scatter", g, dt, count, comm.rank()) + (in_place ? " in place" : "") +
                                  ": [" + std::to_string(i) + "] = " + std::to_string(get(dt, got, i)) +
                                  ", expected " + std::to_string(ref));
                        break;
                    }
                }
            }
            // all_gather: exact; also in place
            for (bool in_place : {false, true}) {
                std::vector<char> recv(n * count * dtype_size(dt) + 1);
                auto send = make_buf(dt, count, comm.rank(), 3);
                const void* src = send.data();
                if (in_place) {
                    std::memcpy(recv.data() + me * count * dtype_size(dt), send.data(), count * dtype_size(dt));
                    src = recv.data() + me * count * dtype_size(dt);
                }
                comm.all_gather(src, recv.data(), count, dt, g, label);
                for (int j = 0; j < n; ++j)
                    for (size_t i = 0; i < count; ++i)
                        if (get(dt, recv, j * count + i) != held(dt, value(g.ranks[j], i, 3))) {
                            fails.add(where("all_gather", g, dt, count, comm.rank()) + ": block " + std::to_string(j) +
                                      " [" + std::to_string(i) + "] wrong");
                            j = n;
                            break;
                        }
            }
            // all_to_all: block j of my send is value(me, j * count + i)
            {
                auto send = make_buf(dt, n * count, comm.rank(), 4);
                std::vector<char> recv(n * count * dtype_size(dt) + 1);
                comm.all_to_all(send.data(), recv.data(), count, dt, g, label);
                for (int j = 0; j < n; ++j)
                    for (size_t i = 0; i < count; ++i)
                        if (get(dt, recv, j * count + i) != held(dt, value(g.ranks[j], me * count + i, 4))) {
                            fails.add(where("all_to_all", g, dt, count, comm.rank()) + ": block " +
                                      std::to_string(j) + " wrong");
                            j = n;
                            break;
                        }
            }
        }
        // broadcast from every root
        for (int root = 0; root < n; ++root) {
            const size_t count = 1000;
            auto buf = make_buf(dt, count, comm.rank(), 5);
            comm.broadcast(buf.data(), count, dt, root, g, label);
            for (size_t i = 0; i < count; ++i)
                if (get(dt, buf, i) != held(dt, value(g.ranks[root], i, 5))) {
                    fails.add(where("broadcast", g, dt, count, comm.rank()) + " root " + std::to_string(root));
                    break;
                }
        }
    }
    comm.barrier(g, label);
    // send / recv round the group's ring: send right, then recv from the left
    // (send never waits for its receiver, so this cannot deadlock)
    for (size_t count : {size_t(0), size_t(7), size_t(4099)}) {
        const int right = g.ranks[(me + 1) % n], left = g.ranks[(me + n - 1) % n];
        auto out = make_buf(DType::f32, count, comm.rank(), 6);
        std::vector<char> in(count * 4 + 1);
        comm.send(out.data(), count, DType::f32, right, label, g.axis);
        comm.recv(in.data(), count, DType::f32, left, label, g.axis);
        for (size_t i = 0; i < count; ++i)
            if (get(DType::f32, in, i) != value(left, i, 6)) {
                fails.add(where("send/recv", g, DType::f32, count, comm.rank()));
                break;
            }
    }
}

// Runs exercise_group on a partition of the world into groups (all at once).
void exercise_partition(int world, const std::vector<Group>& groups) {
    Failures fails;
    run_threads(world, [&](Comm& comm) {
        for (const Group& g : groups)
            if (g.index_of(comm.rank()) >= 0) exercise_group(comm, g, fails);
    }, CommOptions{20, {}, {}});
    require_none(fails);
}

Group world_of(int n) {
    Group g{"world", {}};
    for (int r = 0; r < n; ++r) g.ranks.push_back(r);
    return g;
}

}  // namespace

TEST_CASE("every collective is right on the whole world, 1 to 8 ranks", "[comm]") {
    for (int n = 1; n <= 8; ++n) {
        INFO("world " << n);
        exercise_partition(n, {world_of(n)});
    }
}

TEST_CASE("every collective is right on strided, contiguous and permuted groups at once", "[comm]") {
    SECTION("tp-like pairs [0,1] [2,3] [4,5] [6,7]") {
        exercise_partition(8, {{"tp", {0, 1}}, {"tp", {2, 3}}, {"tp", {4, 5}}, {"tp", {6, 7}}});
    }
    SECTION("strided by 2: [0,2,4,6] and [1,3,5,7]") {
        exercise_partition(8, {{"dp", {0, 2, 4, 6}}, {"dp", {1, 3, 5, 7}}});
    }
    SECTION("strided by 4: [0,4] [1,5] [2,6] [3,7]") {
        exercise_partition(8, {{"pp", {0, 4}}, {"pp", {1, 5}}, {"pp", {2, 6}}, {"pp", {3, 7}}});
    }
    SECTION("groups of 3 and 5, in no particular order") {
        exercise_partition(8, {{"sp", {5, 2, 7}}, {"dp", {0, 3, 6, 1, 4}}});
    }
    SECTION("strided by 2 in a world of 6: [0,2,4] and [1,3,5]") {
        exercise_partition(6, {{"dp", {0, 2, 4}}, {"dp", {1, 3, 5}}});
    }
}

TEST_CASE("one rank sits in several groups: tp and dp of a 2x4 grid, interleaved", "[comm]") {
    // rank = dp * 2 + tp: tp groups [0,1] [2,3] ..., dp groups [0,2,4,6] [1,3,5,7]
    Failures fails;
    run_threads(8, [&](Comm& comm) {
        const int r = comm.rank();
        Group tp{"tp", {r / 2 * 2, r / 2 * 2 + 1}};
        Group dp{"dp", {r % 2, r % 2 + 2, r % 2 + 4, r % 2 + 6}};
        for (int step = 0; step < 20; ++step) {
            float x = float(r), y = float(r);
            comm.all_reduce(&x, 1, tp, ReduceOp::sum, {Payload::act, 0, Phase::fwd, -1, step});
            comm.all_reduce(&y, 1, dp, ReduceOp::sum, {Payload::grad, 0, Phase::bwd, -1, step});
            if (x != float(tp.ranks[0] + tp.ranks[1])) fails.add("tp sum wrong on rank " + std::to_string(r));
            if (y != float(4 * (r % 2) + 12)) fails.add("dp sum wrong on rank " + std::to_string(r));
        }
    });
    require_none(fails);
}

TEST_CASE("reductions are bit-for-bit the same from run to run, and on every rank", "[comm]") {
    const int world = 5;
    const size_t count = 10007;
    auto run = [&](DType dt) {
        std::vector<std::vector<char>> out(world);
        run_threads(world, [&](Comm& comm) {
            auto buf = make_buf(dt, count, comm.rank(), 7);
            comm.all_reduce(buf.data(), count, dt, comm.world_group(), ReduceOp::avg, {});
            out[comm.rank()] = buf;
        });
        return out;
    };
    for (DType dt : {DType::f32, DType::bf16}) {
        INFO(dtype_name(dt));
        auto a = run(dt), b = run(dt);
        for (int r = 0; r < world; ++r) {
            REQUIRE(std::memcmp(a[r].data(), b[r].data(), count * dtype_size(dt)) == 0);
            REQUIRE(std::memcmp(a[r].data(), a[0].data(), count * dtype_size(dt)) == 0);
        }
    }
}

TEST_CASE("bf16 reductions round once, from an fp32 sum", "[comm]") {
    // 1 + 2^-8 + 2^-8: bf16 has 7 mantissa bits, so rounding after each add
    // would give 1 + 2^-8 -> 1 (ties to even) twice, i.e. 1. One rounding of the
    // exact fp32 sum 1 + 2^-7 gives 1 + 2^-7.
    std::vector<float> got(3);
    run_threads(3, [&](Comm& comm) {
        float v = comm.rank() == 0 ? 1.0f : std::ldexp(1.0f, -8);
        uint16_t h = f32_to_bf16(v);
        comm.all_reduce(&h, 1, DType::bf16, comm.world_group(), ReduceOp::sum, {});
        got[comm.rank()] = bf16_to_f32(h);
    });
    for (float g : got) REQUIRE(g == 1.0f + std::ldexp(1.0f, -7));
}

TEST_CASE("point to point: messages keep their order and their sizes are checked", "[comm]") {
    Failures fails;
    run_threads(2, [&](Comm& comm) {
        if (comm.rank() == 0) {
            for (int k = 0; k < 5; ++k) {
                float v = float(k);
                comm.send(&v, 1, 1, {Payload::act, -1, Phase::fwd, k}, "pp");
            }
        } else {
            for (int k = 0; k < 5; ++k) {
                float v = -1;
                comm.recv(&v, 1, 0, {Payload::act, -1, Phase::fwd, k}, "pp");
                if (v != float(k)) fails.add("message " + std::to_string(k) + " arrived as " + std::to_string(v));
            }
        }
    });
    require_none(fails);

    try {
        run_threads(2, [&](Comm& comm) {
            std::vector<float> v(8);
            if (comm.rank() == 0) comm.send(v.data(), 8, 1, {}, "pp");
            else comm.recv(v.data(), 4, 0, {}, "pp");
        });
        FAIL("a size mismatch must throw");
    } catch (const Error& e) {
        std::string m = e.what();
        INFO(m);
        REQUIRE(m.find("mismatched send/recv") != std::string::npos);
        REQUIRE(m.find("sent 8 x fp32") != std::string::npos);
        REQUIRE(m.find("expects 4 x fp32") != std::string::npos);
    }
}

// ---- failures: nothing hangs, and the message says what happened ------------------------

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
std::string run_and_catch(int world, const std::function<void(Comm&)>& body, double timeout) {
    try {
        run_threads(world, body, CommOptions{timeout, {}, {}});
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}
bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
}  // namespace

TEST_CASE("desync: a rank that skips a collective and returns is named at once", "[comm][failure]") {
    auto t0 = std::chrono::steady_clock::now();
    std::string m = run_and_catch(4, [](Comm& comm) {
        float x = 1;
        const Label label{Payload::grad, 2, Phase::bwd, -1, 3};
        if (comm.rank() != 1) comm.all_reduce(&x, 1, comm.world_group(), ReduceOp::sum, label);
    }, 60);
    INFO(m);
    REQUIRE(seconds_since(t0) < 5);  // not the 60 s timeout: rank 1 is known to have returned
    REQUIRE(has(m, "desync: all_reduce on world group [0,1,2,3] (grad, step 3, layer 2, bwd)"));
    REQUIRE(has(m, "rank 1 did not arrive"));
}

TEST_CASE("desync: a rank that never arrives is named after the timeout", "[comm][failure]") {
    auto t0 = std::chrono::steady_clock::now();
    std::atomic<bool> release{false};
    std::string m = run_and_catch(2, [&](Comm& comm) {
        float x = 1;
        const Group tp{"tp", {0, 1}};
        const Label label{Payload::act, 2, Phase::bwd, -1, 3};
        if (comm.rank() == 1) {  // stuck "computing" until rank 0 has given up
            while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(5));
            return;
        }
        try {
            comm.all_reduce(&x, 1, tp, ReduceOp::sum, label);
        } catch (...) {
            release = true;
            throw;
        }
    }, 1.0);
    INFO(m);
    const double took = seconds_since(t0);
    REQUIRE(took >= 0.9);
    REQUIRE(took < 5);
    REQUIRE(has(m, "rank 0: desync: all_reduce on tp group [0,1] (act, step 3, layer 2, bwd): rank 1 did not arrive within 1 s"));
    REQUIRE(has(m, "rank 1 is not waiting in any collective"));
}

TEST_CASE("desync: the report says where the missing rank is waiting instead", "[comm][failure]") {
    // Rank 1 skips the tp all_reduce and goes on to the world barrier; rank 0
    // waits in the all_reduce and times out first (the others start waiting
    // 0.3 s later), naming rank 1 and where it is. The timeout leaves rank 1
    // 3.7 s to reach the barrier: 1.7 s was once too little on a machine
    // loaded with two builds and a fuzzer beside the tests.
    std::string m = run_and_catch(4, [](Comm& comm) {
        float x = 1;
        if (comm.rank() == 0) comm.all_reduce(&x, 1, Group{"tp", {0, 1}}, ReduceOp::sum, {Payload::grad, 5});
        if (comm.rank() != 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
        comm.barrier(comm.world_group(), {Payload::scalar, -1, Phase::step});
    }, 4.0);
    INFO(m);
    REQUIRE(has(m, "rank 0: desync: all_reduce on tp group [0,1] (grad, layer 5)"));
    REQUIRE(has(m, "rank 1 did not arrive within 4 s; rank 1 is waiting in barrier on world group [0,1,2,3] (scalar, step)"));
}

TEST_CASE("a rank that throws stops every other rank at once, with its message", "[comm][failure]") {
    std::vector<std::string> others(4);
    auto t0 = std::chrono::steady_clock::now();
    std::string m = run_and_catch(4, [&](Comm& comm) {
        std::vector<float> x(100, 1.0f);
        for (int step = 0; step < 10; ++step) {
            if (comm.rank() == 2 && step == 3) throw Error("loss is NaN at step 3");
            try {
                comm.all_reduce(x.data(), x.size(), comm.world_group(), ReduceOp::sum, {Payload::grad, -1, Phase::bwd, -1, step});
            } catch (const Error& e) {
                others[comm.rank()] = e.what();
                throw;
            }
        }
    }, 60);
    INFO(m);
    REQUIRE(seconds_since(t0) < 5);  // promptly, not after the 60 s timeout
    REQUIRE(m == "rank 2: loss is NaN at step 3");
    for (int r : {0, 1, 3}) {
        INFO(others[r]);
        REQUIRE(has(others[r], "all_reduce on world group [0,1,2,3] (grad, step 3, bwd): stopped because rank 2 failed: loss is NaN at step 3"));
    }
}

TEST_CASE("a rank waiting in recv is stopped too", "[comm][failure]") {
    std::string m = run_and_catch(2, [](Comm& comm) {
        float x;
        if (comm.rank() == 0) throw Error("bad batch");
        comm.recv(&x, 1, 0, {}, "pp");
    }, 60);
    REQUIRE(m == "rank 0: bad batch");
}

TEST_CASE("desync in point to point: a recv whose sender never sends", "[comm][failure]") {
    std::atomic<bool> release{false};
    std::string m = run_and_catch(2, [&](Comm& comm) {
        float x;
        if (comm.rank() == 1) {  // busy until rank 0 gives up
            while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(5));
            return;
        }
        try {
            comm.recv(&x, 1, 1, {Payload::act, 4, Phase::fwd, 2, 9}, "pp");
        } catch (...) {
            release = true;
            throw;
        }
    }, 0.5);
    INFO(m);
    REQUIRE(m == "rank 0: desync: recv on pp from rank 1 (act, step 9, microbatch 2, layer 4, fwd): "
                 "rank 1 did not send within 0.5 s; rank 1 is not waiting in any collective");
}

TEST_CASE("mismatched collectives are reported with both calls", "[comm][failure]") {
    SECTION("different ops") {
        std::string m = run_and_catch(2, [](Comm& comm) {
            std::vector<float> x(8), y(16);
            const Group tp{"tp", {0, 1}};
            if (comm.rank() == 0) comm.all_reduce(x.data(), 8, tp, ReduceOp::sum, {Payload::grad, 1});
            else comm.all_gather(x.data(), y.data(), 8, tp, {Payload::param, 1});
        }, 10);
        INFO(m);
        REQUIRE(has(m, "mismatched collectives on group [0,1]: rank 0 called all_reduce on tp (8 x fp32, sum; grad, layer 1)"));
        REQUIRE(has(m, "but rank 1 called all_gather on tp (8 x fp32; param, layer 1)"));
    }
    SECTION("different counts") {
        std::string m = run_and_catch(3, [](Comm& comm) {
            std::vector<float> x(100);
            comm.all_reduce(x.data(), comm.rank() == 2 ? 99 : 100, comm.world_group(), ReduceOp::sum, {});
        }, 10);
        INFO(m);
        REQUIRE(has(m, "rank 0 called all_reduce on world (100 x fp32"));
        REQUIRE(has(m, "rank 2 called all_reduce on world (99 x fp32"));
    }
    SECTION("different roots") {
        std::string m = run_and_catch(2, [](Comm& comm) {
            float x = 0;
            comm.broadcast(&x, 1, comm.rank(), comm.world_group(), {});
        }, 10);
        REQUIRE(has(m, "root index 0"));
        REQUIRE(has(m, "root index 1"));
    }
}

TEST_CASE("bad arguments are refused with a clear message", "[comm]") {
    std::vector<std::string> msgs(4);
    run_threads(4, [&](Comm& comm) {
        if (comm.rank() != 0) return;
        float x[8] = {};
        auto expect = [&](int k, const std::function<void()>& f) {
            try {
                f();
            } catch (const Error& e) {
                msgs[k] = e.what();
            }
        };
        expect(0, [&] { comm.all_reduce(x, 1, Group{"tp", {1, 2}}, ReduceOp::sum, {}); });
        expect(1, [&] { comm.all_reduce(x, 1, Group{"tp", {0, 0}}, ReduceOp::sum, {}); });
        expect(2, [&] { comm.broadcast(x, 1, 2, Group{"tp", {0, 1}}, {}); });
        expect(3, [&] { comm.all_reduce(x, 1, DType::i32, Group{"tp", {0, 9}}, ReduceOp::sum, {}); });
    });
    REQUIRE(msgs[0] == "all_reduce on tp group [1,2]: rank 0 called it but is not a member of the group");
    REQUIRE(msgs[1] == "all_reduce on tp group [0,0]: rank 0 appears twice");
    REQUIRE(has(msgs[2], "root index 2 is not an index into the group (0..1)"));
    REQUIRE(msgs[3] == "all_reduce on tp group [0,9]: rank 9 is outside the world [0, 4)");

    std::string m = run_and_catch(1, [](Comm& comm) {
        int32_t v = 1;
        comm.all_reduce(&v, 1, DType::i32, comm.world_group(), ReduceOp::sum, {});
    }, 10);
    REQUIRE(m == "rank 0: all_reduce: reductions take fp32 or bf16, not int32");
    m = run_and_catch(2, [](Comm& comm) {
        float x[4];
        comm.all_to_all(x, x + 1, 1, comm.world_group(), {});
    }, 10);
    REQUIRE(has(m, "send and recv overlap"));
}

TEST_CASE("the threads backend measures no device time: its traced calls have gpu_us = -1", "[comm][trace]") {
    // Only a backend that times calls with CUDA events (nccl) reports
    // last_gpu_seconds() >= 0; Comm copies it into the event as gpu_us.
    auto tracers = make_tracers(2, 0);
    CommOptions opts{10, {tracers[0].get(), tracers[1].get()}};
    run_threads(2, [](Comm& comm) {
        float x[4] = {1, 2, 3, 4}, y[8];
        comm.all_reduce(x, 4, comm.world_group(), ReduceOp::sum, {});
        comm.all_gather(x, y, 4, comm.world_group(), {});
        if (comm.rank() == 0) comm.send(x, 4, 1, {}, "pp");
        if (comm.rank() == 1) comm.recv(x, 4, 0, {}, "pp");
        comm.barrier(comm.world_group());
    }, opts);
    for (int r = 0; r < 2; ++r) {
        const auto events = tracers[r]->events();
        REQUIRE(events.size() == 4);  // all_reduce, all_gather, send or recv, barrier
        for (const TraceEvent& ev : events) {
            INFO("rank " << r << ": " << ev.name);
            REQUIRE(ev.kind == TraceEvent::Kind::collective);
            REQUIRE(ev.gpu_us == -1);
        }
    }
}

namespace {

// A one-rank backend that moves nothing and says each call took 250 µs on the
// device, as NcclBackend says from its CUDA events: what Comm does with it.
class DeviceTimedBackend final : public Backend {
public:
    const char* name() const override { return "device-timed"; }
    void all_reduce(void*, size_t, DType, const Group&, ReduceOp, const Label&) override {}
    void all_gather(const void*, void*, size_t, DType, const Group&, const Label&) override {}
    void reduce_scatter(const void*, void*, size_t, DType, const Group&, ReduceOp, const Label&) override {}
    void all_to_all(const void*, void*, size_t, DType, const Group&, const Label&) override {}
    void broadcast(void*, size_t, DType, int, const Group&, const Label&) override {}
    void send(const void*, size_t, DType, int, const std::string&, const Label&) override {}
    void recv(void*, size_t, DType, int, const std::string&, const Label&) override {}
    void barrier(const Group&, const Label&) override {}
    void stall(const std::string&) override {}
    double last_gpu_seconds() const override { return 250e-6; }
};

}  // namespace

TEST_CASE("a backend's device time goes into the trace event as gpu_us", "[comm][trace]") {
    Tracer tracer(0, TraceClock::now(), 0);
    Comm comm(0, 1, std::make_unique<DeviceTimedBackend>(), &tracer);
    float x[2] = {1, 2};
    comm.all_reduce(x, 2, comm.world_group(), ReduceOp::sum, {});
    comm.broadcast(x, 2, 0, comm.world_group(), {});
    const auto events = tracer.events();
    REQUIRE(events.size() == 2);
    for (const TraceEvent& ev : events) REQUIRE(ev.gpu_us == Approx(250));  // seconds -> µs
}

namespace {

// A one-rank backend whose every collective reports its own device time (the
// n-th call: n * 100 µs) and whose send/recv report none (-1), as NcclBackend's
// CUDA events do; it keeps the default start(), as nccl does, so a started
// call runs at once.
class PerCallTimedBackend final : public Backend {
public:
    const char* name() const override { return "per-call-timed"; }
    void all_reduce(void*, size_t, DType, const Group&, ReduceOp, const Label&) override { timed(); }
    void all_gather(const void*, void*, size_t, DType, const Group&, const Label&) override { timed(); }
    void reduce_scatter(const void*, void*, size_t, DType, const Group&, ReduceOp, const Label&) override { timed(); }
    void all_to_all(const void*, void*, size_t, DType, const Group&, const Label&) override { timed(); }
    void broadcast(void*, size_t, DType, int, const Group&, const Label&) override { timed(); }
    void send(const void*, size_t, DType, int, const std::string&, const Label&) override { last_ = -1; }
    void recv(void*, size_t, DType, int, const std::string&, const Label&) override { last_ = -1; }
    void barrier(const Group&, const Label&) override { timed(); }
    void stall(const std::string&) override {}
    double last_gpu_seconds() const override { return last_; }

private:
    void timed() { last_ = 100e-6 * ++calls_; }
    int calls_ = 0;
    double last_ = -1;
};

}  // namespace

TEST_CASE("a started call's trace event has its own device time, not the last call's", "[comm][trace]") {
    // The default start() runs the call at once; the event is recorded at wait,
    // after later calls have overwritten last_gpu_seconds(). Each must keep its own.
    Tracer tracer(0, TraceClock::now(), 0);
    Comm comm(0, 1, std::make_unique<PerCallTimedBackend>(), &tracer);
    float x[2] = {1, 2};
    CommHandle a = comm.start_all_reduce(x, 2, DType::f32, comm.world_group(), ReduceOp::sum, {});  // 100 µs
    CommHandle b = comm.start_broadcast(x, 2, DType::f32, 0, comm.world_group(), {});               // 200 µs
    comm.all_gather(x, x, 2, comm.world_group(), {});                                               // 300 µs
    comm.send(x, 2, 0, {}, "pp");  // no device time: -1 (nccl's p2p)
    comm.wait(b);
    comm.wait(a);
    const auto events = tracer.events();
    REQUIRE(events.size() == 4);
    auto gpu_us = [&](const std::string& op) {
        for (const TraceEvent& ev : events)
            if (ev.name == op) return ev.gpu_us;
        FAIL("no " << op << " event");
        return 0.0;
    };
    REQUIRE(gpu_us("all_reduce") == Approx(100));
    REQUIRE(gpu_us("broadcast") == Approx(200));
    REQUIRE(gpu_us("all_gather") == Approx(300));
    REQUIRE(gpu_us("send") == -1);
}

// ---- speed (hidden: run with ./test_comm "[.bench]") ----------------------------------

TEST_CASE("64 MiB all_reduce at 2 ranks against memcpy", "[.bench]") {
    const size_t count = (64u << 20) / 4;
    std::vector<float> a(count, 1.0f), b(count, 2.0f);
    double memcpy_s = 1e9;
    for (int k = 0; k < 5; ++k) {
        auto t0 = std::chrono::steady_clock::now();
        std::memcpy(b.data(), a.data(), count * 4);
        memcpy_s = std::min(memcpy_s, seconds_since(t0));
    }
    std::vector<double> best(2, 1e9);
    run_threads(2, [&](Comm& comm) {
        std::vector<float> x(count, 1.0f);
        for (int k = 0; k < 8; ++k) {
            comm.barrier(comm.world_group());
            auto t0 = std::chrono::steady_clock::now();
            comm.all_reduce(x.data(), count, comm.world_group(), ReduceOp::sum, {});
            best[comm.rank()] = std::min(best[comm.rank()], seconds_since(t0));
        }
    });
    const double bytes = count * 4.0, t = std::max(best[0], best[1]);
    const double memcpy_bw = bytes / memcpy_s / 1e9, busbw = bytes / t / 1e9 * 2 * (2 - 1) / 2;
    WARN("memcpy 64 MiB: " << memcpy_s * 1e3 << " ms = " << memcpy_bw << " GB/s; all_reduce 64 MiB x 2 ranks: "
                           << t * 1e3 << " ms, busbw " << busbw << " GB/s = " << busbw / memcpy_bw << " x memcpy");
}

TEST_CASE("small all_reduce latency", "[.bench]") {
    for (int n : {2, 4, 8}) {
        const int iters = 2000;
        std::vector<double> took(n);
        run_threads(n, [&](Comm& comm) {
            float x = 1;
            comm.barrier(comm.world_group());
            auto t0 = std::chrono::steady_clock::now();
            for (int k = 0; k < iters; ++k) comm.all_reduce(&x, 1, comm.world_group(), ReduceOp::sum, {});
            took[comm.rank()] = seconds_since(t0);
        });
        WARN(n << " ranks: " << took[0] / iters * 1e6 << " us per 1-float all_reduce");
    }
}
