// launch_env.cpp — MPI launchers seen through the environment (see launch_env.h).
#include "comm/launch_env.h"

#include <algorithm>
#include <cstdlib>

#include "core/check.h"

namespace ss {

namespace {

// The value of @p name as a non-negative integer, or -1 when unset or not a number.
int env_int(const char* name) {
    const char* v = std::getenv(name);
    if (!v || !*v) return -1;
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    return (*end == '\0' && n >= 0 && n < (1L << 30)) ? int(n) : -1;
}

}  // namespace

MpiLaunch mpi_launch_from_env() {
    struct Known {
        const char* size;
        const char* rank;
    };
    for (const Known& k : {Known{"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"}, Known{"PMI_SIZE", "PMI_RANK"},
                           Known{"MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_RANK"}}) {
        const int n = env_int(k.size);
        if (n >= 0) return MpiLaunch{n, std::max(0, env_int(k.rank)), std::string(k.size) + "=" + std::to_string(n)};
    }
    const int pmix_rank = env_int("PMIX_RANK");
    if (pmix_rank >= 0) return MpiLaunch{-1, pmix_rank, "PMIX_RANK=" + std::to_string(pmix_rank)};
    return {};
}

void check_not_launched_by_mpi(const std::string& backend) {
    if (backend != "threads") return;
    const MpiLaunch l = mpi_launch_from_env();
    // PMIx tells each process its rank but not the size: a rank above 0 proves several.
    const bool several = l.world_size > 1 || (l.world_size < 0 && l.rank > 0);
    SS_CHECK(!several, "launched by mpirun with "
                           << (l.world_size > 0 ? std::to_string(l.world_size) : std::string("several"))
                           << " processes (" << l.variable << ") but --backend threads: each process would train "
                           << "alone, as independent one-rank runs racing for the same files; add --backend mpi "
                           << "(or run without mpirun and choose the ranks with --ranks N)");
}

}  // namespace ss
