// launch_env.h — what the environment says about who started this process.
//
// `mpirun -np 4 shardscope train ...` starts four processes. With --backend
// mpi they join one MPI world; with the default --backend threads each would
// train alone, as four independent one-rank runs that race for the same
// files. MPI launchers say what they did in the environment of every process
// they start, which this reads without MPI (the threads build needs none):
//
//   Open MPI   OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_RANK
//   MPICH, Intel MPI (Hydra)   PMI_SIZE, PMI_RANK
//   MVAPICH2   MV2_COMM_WORLD_SIZE
//   PMIx launchers (prterun, Open MPI 5)   PMIX_RANK (no size)
#pragma once

#include <string>

namespace ss {

/// What an MPI launcher told this process.
struct MpiLaunch {
    int world_size = 0;    ///< processes it started (0: none known; -1: some, PMIx gives no size)
    int rank = 0;          ///< this process's rank among them
    std::string variable;  ///< the variable that said so ("OMPI_COMM_WORLD_SIZE=4"); empty: not launched by MPI
};

/// Reads the launcher variables above from the environment.
MpiLaunch mpi_launch_from_env();

/// Throws ss::Error when an MPI launcher started several processes but @p backend is
/// "threads": "launched by mpirun with 4 processes but --backend threads; add --backend mpi".
void check_not_launched_by_mpi(const std::string& backend);

}  // namespace ss
