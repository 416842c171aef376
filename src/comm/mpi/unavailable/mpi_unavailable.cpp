// mpi_unavailable.cpp — the mpi backend's functions in a build without MPI.
//
// CMake builds src/comm/mpi/ only when it finds MPI; without it, it builds this
// folder instead. These functions stand in, so that `shardscope train --backend
// mpi` can say what to do instead of failing to link.
#include "comm/mpi/mpi_backend.h"
#include "core/check.h"

namespace ss {

namespace {
[[noreturn]] void no_mpi() {
    SS_FAIL("this build has no MPI: apt-get install libopenmpi-dev openmpi-bin and rebuild, "
            "or use --backend threads");
}
}  // namespace

bool mpi_available() { return false; }
int mpi_world_rank() { no_mpi(); }
int mpi_world_size() { no_mpi(); }

void run_mpi(const std::function<void(Comm&)>&, const CommOptions&, const std::vector<Group>&) { no_mpi(); }

void write_chrome_trace_mpi(const std::string&, const Tracer&, const nlohmann::json&, double) { no_mpi(); }

double mpi_reference_collective(const std::string&, const void*, void*, size_t, DType) { no_mpi(); }

}  // namespace ss
