// mpi_catch.h — Catch2 inside an MPI job, for the tests that run under mpirun
// (test_*_mpi.cpp): what each rank collects, and one report and exit code per job.
//
// Every process runs every test case, in the same order, because they call
// collectives together. Inside a run_mpi body nothing may throw (a throw there
// ends the whole job through MPI_Abort), so each rank collects what went wrong
// in a Failures list and CHECKs it after run_mpi returns. Only rank 0 prints
// Catch's report, unless another rank fails; the job's exit code is non-zero
// if any rank failed.
#pragma once

#include <catch2/catch.hpp>
#include <mpi.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "comm/mpi/mpi_backend.h"

namespace ss::test {

/// What went wrong on this rank, checked after run_mpi returns (the first 20).
struct Failures {
    std::vector<std::string> list;  ///< "rank R: what"
    /// Records @p s, prefixed with this rank.
    void add(const std::string& s) {
        if (list.size() < 20) list.push_back("rank " + std::to_string(mpi_world_rank()) + ": " + s);
    }
};

/// The Catch assertion over a rank's Failures: passes when there were none.
inline void check_none(const Failures& f) {
    for (const auto& s : f.list) UNSCOPED_INFO(s);
    CHECK(f.list.empty());
}

/// The main of an mpirun test: runs the Catch session on every rank (ranks
/// other than 0 write their report to test_out/@p name/rankR.log, printed only
/// if they fail) and returns the same exit code on every rank: 1 if any failed.
/// Call it after checking the world size.
inline int run_catch_on_every_rank(int argc, char** argv, const std::string& name) {
    const int rank = mpi_world_rank(), world = mpi_world_size();
    Catch::Session session;
    if (int rc = session.applyCommandLine(argc, argv)) return rc;
    std::string log;
    if (rank != 0) {
        log = std::string(SS_BINARY_DIR) + "/test_out/" + name + "/np" + std::to_string(world) + "_rank" +
              std::to_string(rank) + ".log";
        std::filesystem::create_directories(std::filesystem::path(log).parent_path());
        session.configData().outputFilename = log;
    }
    const int failed = session.run();
    int any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (failed && rank != 0) {
        std::ifstream in(log);
        std::stringstream text;
        text << in.rdbuf();
        std::fprintf(stderr, "---- rank %d failed ----\n%s\n", rank, text.str().c_str());
    }
    if (rank == 0 && any && !failed) std::fprintf(stderr, "another rank failed (its report follows)\n");
    return any ? 1 : 0;
}

}  // namespace ss::test
