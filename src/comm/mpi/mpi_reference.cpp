// mpi_reference.cpp — Open MPI's own blocking collectives, timed, as the
// yardstick for the mpi backend in `shardscope bench comm --backend mpi`.
//
// The backend uses the non-blocking forms (MPI_Iallreduce ...) and polls them
// against a deadline, so that nothing hangs (docs/backends.md). These are the
// plain blocking calls Open MPI tunes hardest: the difference is the price of
// the timeouts.
#include "comm/mpi/mpi_backend.h"
#include "comm/mpi/mpi_detail.h"
#include "core/check.h"

namespace ss {

double mpi_reference_collective(const std::string& op, const void* send, void* recv, size_t count, DType dt) {
    mpi::ensure_initialized();
    int n = 1;
    SS_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &n));
    SS_CHECK(count <= size_t(INT32_MAX), "mpi_reference_collective: count " << count << " does not fit an int");
    const int c = int(count);
    const MPI_Datatype type = mpi::datatype(dt);
    const bool reduces = op == "all_reduce" || op == "reduce_scatter";
    SS_CHECK(!reduces || dt == DType::f32, "mpi_reference_collective: MPI has no bf16 sum; use fp32");
    const double t0 = mpi::now_seconds();
    if (op == "all_reduce")
        SS_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, recv, c, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
    else if (op == "reduce_scatter")
        SS_MPI_CHECK(MPI_Reduce_scatter_block(send, recv, c, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
    else if (op == "all_gather")
        SS_MPI_CHECK(MPI_Allgather(send, c, type, recv, c, type, MPI_COMM_WORLD));
    else if (op == "all_to_all")
        SS_MPI_CHECK(MPI_Alltoall(send, c, type, recv, c, type, MPI_COMM_WORLD));
    else if (op == "broadcast")
        SS_MPI_CHECK(MPI_Bcast(recv, c, type, 0, MPI_COMM_WORLD));
    else
        SS_FAIL("mpi_reference_collective: unknown op " << op);
    return mpi::now_seconds() - t0;
}

}  // namespace ss
