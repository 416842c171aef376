// bench_comm.h — `shardscope bench comm`: nccl-tests for the comm backends.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace ss::app {

/// What `bench comm` measures.
struct BenchCommOptions {
    std::string backend = "threads";          ///< threads, or mpi (run under mpirun; one process per rank)
    int ranks = 2;                            ///< world size (threads backend; under mpi, mpirun's -np)
    std::vector<std::string> ops = {"all_reduce", "reduce_scatter", "all_gather", "all_to_all", "broadcast"};
    std::string dtype = "fp32";               ///< fp32 or bf16
    double min_bytes = 1024;                  ///< smallest size (bytes as nccl-tests counts them)
    double max_bytes = 64.0 * 1024 * 1024;    ///< largest size; sizes double from min to max
    int iters = 10;                           ///< timed iterations per size (the median is reported)
    int warmup = 3;                           ///< untimed iterations per size
    double timeout_seconds = 60;              ///< per wait, as CommOptions
};

/// Times each op at each size like nccl-tests (size, time, algbw, busbw, #wrong)
/// and prints the table to @p out, beside this machine's memcpy bandwidth; with
/// the mpi backend also beside Open MPI's own blocking collective (fp32), and
/// only rank 0 prints.
/// Throws ss::Error if any element came out wrong.
void run_bench_comm(const BenchCommOptions& opts, std::ostream& out);

/// Adds `comm` with its flags under @p bench (the `shardscope bench` command).
void add_bench_comm_command(CLI::App& bench);

}  // namespace ss::app
