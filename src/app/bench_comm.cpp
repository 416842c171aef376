// bench_comm.cpp — `shardscope bench comm`: nccl-tests for ShardScope's backends.
//
//   shardscope bench comm                         2 ranks, every op, 1 KiB .. 64 MiB
//   shardscope bench comm --ranks 8 --ops all_reduce --dtype bf16
//
// As nccl-tests does (github.com/NVIDIA/nccl-tests, doc/PERFORMANCE.md):
// for each op and size it checks the result once (#wrong: elements that differ
// from the exact answer; the inputs are small integers so every sum is exact),
// then times `iters` calls after `warmup`, each started together after a
// barrier; a call's time is the slowest rank's, and the median call is shown.
//
//     size   bytes per rank as nccl-tests counts them (docs/trace-format.md)
//     algbw  size / time
//     busbw  algbw * factor: all_reduce 2(n-1)/n; all_gather, reduce_scatter,
//            all_to_all (n-1)/n; broadcast 1
//
// The threads backend moves bytes through this machine's memory, so busbw is
// also shown as a fraction of one thread's memcpy bandwidth.
#include "app/bench.h"
#include "app/bench_comm.h"
#include "app/flag_range.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <sstream>
#include <vector>

#include "comm/comm.h"
#include "comm/mpi/mpi_backend.h"
#include "comm/threads/threads_backend.h"
#include "comm/trace/trace.h"
#include "comm/trace/trace_summary.h"
#include "core/check.h"
#include "core/dtype.h"

namespace ss::app {

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// One thread's memcpy bandwidth on 64 MiB, best of 5 (GB/s).
double memcpy_gbs() {
    const size_t bytes = 64u << 20;
    std::vector<char> a(bytes, 1), b(bytes, 2);
    double best = 1e30;
    for (int k = 0; k < 5; ++k) {
        auto t0 = Clock::now();
        std::memcpy(b.data(), a.data(), bytes);
        best = std::min(best, seconds(t0));
    }
    return bytes / best / 1e9;
}

// Small integers, exact in bf16 and in any sum of up to 8 ranks.
float input(int rank, size_t i) { return float(rank + 1 + int(i % 7)); }

void put(DType dt, void* buf, size_t i, float v) {
    if (dt == DType::bf16) static_cast<uint16_t*>(buf)[i] = f32_to_bf16(v);
    else static_cast<float*>(buf)[i] = v;
}
float get(DType dt, const void* buf, size_t i) {
    return dt == DType::bf16 ? bf16_to_f32(static_cast<const uint16_t*>(buf)[i]) : static_cast<const float*>(buf)[i];
}

// Elements per rank for an op whose nccl-tests size is `bytes`.
size_t count_for(const std::string& op, double bytes, int n, size_t es) {
    const bool per_rank = op == "all_gather" || op == "reduce_scatter" || op == "all_to_all";
    return size_t(bytes / double(es) / (per_rank ? n : 1));
}

// Fills the inputs, calls the op once, and counts the elements that are not exact.
size_t check_once(Comm& comm, const std::string& op, size_t count, DType dt, void* send, void* recv) {
    const Group world = comm.world_group();
    const int n = comm.world_size(), r = comm.rank();
    const Label label{Payload::scalar};
    size_t wrong = 0;
    if (op == "all_reduce") {
        for (size_t i = 0; i < count; ++i) put(dt, send, i, input(r, i));
        comm.all_reduce(send, count, dt, world, ReduceOp::sum, label);
        for (size_t i = 0; i < count; ++i) {
            float want = 0;
            for (int j = 0; j < n; ++j) want += input(j, i);
            wrong += get(dt, send, i) != want;
        }
    } else if (op == "reduce_scatter") {
        for (size_t i = 0; i < n * count; ++i) put(dt, send, i, input(r, i));
        comm.reduce_scatter(send, recv, count, dt, world, ReduceOp::sum, label);
        for (size_t i = 0; i < count; ++i) {
            float want = 0;
            for (int j = 0; j < n; ++j) want += input(j, r * count + i);
            wrong += get(dt, recv, i) != want;
        }
    } else if (op == "all_gather") {
        for (size_t i = 0; i < count; ++i) put(dt, send, i, input(r, i));
        comm.all_gather(send, recv, count, dt, world, label);
        for (int j = 0; j < n; ++j)
            for (size_t i = 0; i < count; ++i) wrong += get(dt, recv, j * count + i) != input(j, i);
    } else if (op == "all_to_all") {
        for (size_t i = 0; i < n * count; ++i) put(dt, send, i, input(r, i));
        comm.all_to_all(send, recv, count, dt, world, label);
        for (int j = 0; j < n; ++j)
            for (size_t i = 0; i < count; ++i) wrong += get(dt, recv, j * count + i) != input(j, r * count + i);
    } else if (op == "broadcast") {
        for (size_t i = 0; i < count; ++i) put(dt, send, i, input(r, i));
        comm.broadcast(send, count, dt, 0, world, label);
        for (size_t i = 0; i < count; ++i) wrong += get(dt, send, i) != input(0, i);
    } else {
        SS_FAIL("bench comm: unknown op \"" << op
                                            << "\"; choose from all_reduce, reduce_scatter, all_gather, all_to_all, broadcast");
    }
    return wrong;
}

void call(Comm& comm, const std::string& op, size_t count, DType dt, void* send, void* recv) {
    const Group world = comm.world_group();
    const Label label{Payload::scalar};
    if (op == "all_reduce") comm.all_reduce(send, count, dt, world, ReduceOp::sum, label);
    else if (op == "reduce_scatter") comm.reduce_scatter(send, recv, count, dt, world, ReduceOp::sum, label);
    else if (op == "all_gather") comm.all_gather(send, recv, count, dt, world, label);
    else if (op == "all_to_all") comm.all_to_all(send, recv, count, dt, world, label);
    else comm.broadcast(send, count, dt, 0, world, label);
}

}  // namespace

void run_bench_comm(const BenchCommOptions& o, std::ostream& out) {
    SS_CHECK(o.ranks >= 1, "bench comm: --ranks " << o.ranks << " must be at least 1");
    SS_CHECK(o.iters >= 1 && o.warmup >= 0, "bench comm: --iters must be >= 1 and --warmup >= 0");
    SS_CHECK(o.min_bytes >= 1 && o.max_bytes >= o.min_bytes, "bench comm: need 1 <= --min-bytes <= --max-bytes");
    const DType dt = parse_dtype(o.dtype);
    const size_t es = dtype_size(dt);
    SS_CHECK(o.backend == "threads" || o.backend == "mpi",
             "bench comm: --backend " << o.backend << " is not a backend; use threads or mpi");
    const bool mpi = o.backend == "mpi";
    const int n = mpi ? mpi_world_size() : o.ranks;
    std::ostringstream discard;
    std::ostream& print = !mpi || mpi_world_rank() == 0 ? out : discard;  // under mpirun, rank 0 speaks
    for (const auto& op : o.ops)  // refuse a bad name before allocating anything
        SS_CHECK(op == "all_reduce" || op == "reduce_scatter" || op == "all_gather" || op == "all_to_all" ||
                     op == "broadcast",
                 "bench comm: unknown op \"" << op << "\"; choose from all_reduce, reduce_scatter, all_gather, "
                                                   "all_to_all, broadcast");

    // Every rank sends whole elements: a size under one element per rank would time calls that move
    // nothing, so it is refused; a size between whole elements is rounded down, and the header says so.
    uint64_t smallest = 0;    // the smallest size every op can move: one element per rank
    std::string smallest_op;  // the op that needs it
    for (const auto& op : o.ops)
        if (collective_bytes(op, 1, es, n) > smallest) {
            smallest = collective_bytes(op, 1, es, n);
            smallest_op = op;
        }
    SS_CHECK(o.min_bytes >= double(smallest),
             "bench comm: --min-bytes " << o.min_bytes << " is under one element per rank: " << smallest_op << " of "
                 << dtype_name(dt) << " on " << n << " ranks moves at least " << smallest << " bytes (" << es
                 << " bytes an element" << (smallest > es ? " x " + std::to_string(n) + " ranks" : "")
                 << "); give --min-bytes " << smallest << " or more");
    std::string rounded;  // the first size that is rounded down, as the header's note shows it
    for (const auto& op : o.ops)
        for (double b = o.min_bytes; b <= o.max_bytes && rounded.empty(); b *= 2) {
            const uint64_t moved = collective_bytes(op, count_for(op, b, n, es), es, n);
            if (double(moved) == b) continue;
            std::ostringstream note;
            note << "note: sizes are rounded down to whole " << dtype_name(dt) << " elements per rank, so the "
                 << "size column may show less than asked (" << op << ": " << b << " bytes moves " << moved << " on "
                 << n << " ranks)\n";
            rounded = note.str();
        }

    const double memcpy_bw = memcpy_gbs();
    const bool reference = mpi && dt == DType::f32;  // Open MPI's own collective beside ours
    char line[256];
    std::snprintf(line, sizeof line,
                  "bench comm: %s backend, %s, %s; median of %s after %d warm-up, slowest rank\n"
                  "memcpy on this machine: %.2f GB/s (64 MiB, one thread)\n%s",
                  o.backend.c_str(), count_of(n, "rank").c_str(), dtype_name(dt), count_of(o.iters, "call").c_str(),
                  o.warmup, memcpy_bw,
                  reference ? "MPI (us): Open MPI's own blocking collective on the same buffers, for comparison\n" : "");
    print << line << rounded << "\n";
    std::snprintf(line, sizeof line, "%-15s %10s %11s %11s %13s %13s %9s %7s%s\n", "op", "size", "count", "time (us)",
                  "algbw (GB/s)", "busbw (GB/s)", "/memcpy", "#wrong", reference ? "   MPI (us)" : "");
    print << line;

    size_t total_wrong = 0;
    for (const auto& op : o.ops) {
        std::vector<double> sizes;
        for (double b = o.min_bytes; b <= o.max_bytes; b *= 2) sizes.push_back(b);
        // times[size][iter][rank], wrong[size][rank]: each rank writes its own entries
        std::vector<std::vector<std::vector<double>>> times(
            sizes.size(), std::vector<std::vector<double>>(size_t(o.iters), std::vector<double>(size_t(n))));
        std::vector<std::vector<size_t>> wrong(sizes.size(), std::vector<size_t>(size_t(n)));
        std::vector<std::vector<double>> ref_times(sizes.size());  // [size][iter], slowest rank
        auto body = [&](Comm& comm) {
            const size_t max_elems = size_t(o.max_bytes / double(es)) + size_t(n);
            std::vector<char> send(max_elems * es + 64), recv(max_elems * es + 64);
            for (size_t s = 0; s < sizes.size(); ++s) {
                const size_t count = count_for(op, sizes[s], n, es);
                wrong[s][comm.rank()] = check_once(comm, op, count, dt, send.data(), recv.data());
                std::memset(send.data(), 0, send.size());  // zeros: repeated sums stay finite
                std::vector<float> mine(size_t(o.iters)), ref(size_t(o.iters));
                for (int k = 0; k < o.warmup + o.iters; ++k) {
                    comm.barrier(comm.world_group());
                    auto t0 = Clock::now();
                    call(comm, op, count, dt, send.data(), recv.data());
                    if (k >= o.warmup) mine[size_t(k - o.warmup)] = float(seconds(t0));
                }
                for (int k = 0; reference && k < o.warmup + o.iters; ++k) {
                    comm.barrier(comm.world_group());
                    double t = mpi_reference_collective(op, send.data(), recv.data(), count, dt);
                    if (k >= o.warmup) ref[size_t(k - o.warmup)] = float(t);
                }
                // Every rank learns every rank's times (one process per rank under mpi).
                std::vector<float> all(mine.size() * size_t(n)), all_ref(all.size());
                const Label label{Payload::scalar};
                comm.all_gather(mine.data(), all.data(), mine.size(), comm.world_group(), label);
                comm.all_gather(ref.data(), all_ref.data(), ref.size(), comm.world_group(), label);
                float w = float(wrong[s][comm.rank()]);
                std::vector<float> all_wrong(static_cast<size_t>(n));
                comm.all_gather(&w, all_wrong.data(), 1, comm.world_group(), label);
                if (comm.rank() != 0) continue;
                ref_times[s].assign(size_t(o.iters), 0.0);
                for (int r = 0; r < n; ++r) {
                    wrong[s][size_t(r)] = size_t(all_wrong[size_t(r)]);
                    for (int k = 0; k < o.iters; ++k) {
                        times[s][size_t(k)][size_t(r)] = all[size_t(r) * o.iters + size_t(k)];
                        ref_times[s][size_t(k)] = std::max(ref_times[s][size_t(k)], double(all_ref[size_t(r) * o.iters + size_t(k)]));
                    }
                }
            }
        };
        if (mpi)
            run_mpi(body, CommOptions{o.timeout_seconds, {}, {}});
        else
            run_threads(n, body, CommOptions{o.timeout_seconds, {}, {}});
        if (mpi && mpi_world_rank() != 0) continue;  // rank 0 gathered every rank's times and reports
        for (size_t s = 0; s < sizes.size(); ++s) {
            const size_t count = count_for(op, sizes[s], n, es);
            const double bytes = double(collective_bytes(op, count, es, n));
            std::vector<double> slowest;
            for (const auto& per_rank : times[s]) slowest.push_back(*std::max_element(per_rank.begin(), per_rank.end()));
            std::sort(slowest.begin(), slowest.end());
            const double t = slowest[slowest.size() / 2];
            const double algbw = t > 0 ? bytes / t / 1e9 : 0, busbw = algbw * busbw_factor(op, n);
            size_t w = 0;
            for (size_t x : wrong[s]) w += x;
            total_wrong += w;
            std::snprintf(line, sizeof line, "%-15s %10s %11zu %11.1f %13.3f %13.3f %9.2f %7zu", op.c_str(),
                          bytes_str(bytes).c_str(), count, t * 1e6, algbw, busbw, busbw / memcpy_bw, w);
            print << line;
            if (reference) {
                std::vector<double> r = ref_times[s];
                std::sort(r.begin(), r.end());
                std::snprintf(line, sizeof line, " %10.1f", r[r.size() / 2] * 1e6);
                print << line;
            }
            print << "\n";
        }
    }
    print << "\nsize: bytes per rank as nccl-tests counts them; busbw = algbw x (all_reduce 2(n-1)/n;\n"
           "all_gather, reduce_scatter, all_to_all (n-1)/n; broadcast 1); #wrong: elements not exact.\n";
    SS_CHECK(total_wrong == 0, "bench comm: " << total_wrong << " elements came out wrong (see #wrong)");
}

void add_bench_comm_command(CLI::App& bench) {
    auto o = std::make_shared<BenchCommOptions>();
    CLI::App* cmd = bench.add_subcommand("comm", "Collectives of the threads backend, timed and checked like nccl-tests");
    cmd->add_option("--backend", o->backend, "threads, or mpi (under mpirun: -np sets the ranks)")->capture_default_str();
    cmd->add_option("--ranks", o->ranks, "World size (threads backend)")->capture_default_str();
    cmd->add_option("--ops", o->ops, "Ops to time")->delimiter(',')->capture_default_str();
    cmd->add_option("--dtype", o->dtype, "fp32 or bf16")->capture_default_str();
    cmd->add_option("--min-bytes", o->min_bytes, "Smallest size, bytes")->capture_default_str();
    cmd->add_option("--max-bytes", o->max_bytes, "Largest size, bytes (sizes double)")->capture_default_str();
    cmd->add_option("--iters", o->iters, "Timed calls per size")->capture_default_str();
    cmd->add_option("--warmup", o->warmup, "Untimed calls per size")->capture_default_str();
    cmd->add_option("--comm-timeout", o->timeout_seconds, "Seconds a rank waits for another")->capture_default_str();
    limit_bench_flags(*cmd);
    for (const char* n : {"--min-bytes", "--max-bytes"})
        limit(*cmd, n, at_least(1, kMaxBenchBytes), "bytes per rank; every rank holds two buffers of it");
    cmd->callback([o, cmd] {
        // Under mpirun the world is -np; a --ranks that says otherwise is refused, as `train` refuses it.
        if (o->backend == "mpi" && cmd->get_option("--ranks")->count() > 0)
            SS_CHECK(o->ranks == mpi_world_size(),
                     "bench comm: --ranks " << o->ranks << " but mpirun started " << mpi_world_size()
                                            << " processes; with --backend mpi, mpirun's -np sets the ranks: "
                                            << "leave --ranks out");
        run_bench_comm(*o, std::cout);
    });
}

}  // namespace ss::app
