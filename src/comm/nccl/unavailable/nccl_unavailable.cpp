// nccl_unavailable.cpp — the nccl backend's functions in a build without it.
//
// CMake builds src/comm/nccl/ only when it finds CUDA (nvcc), NCCL and MPI
// together; without them, it builds this folder instead. These functions stand
// in, so that `shardscope train --backend nccl` can say what to do instead of
// failing to link.
#include "comm/nccl/nccl_backend.h"
#include "core/check.h"

namespace ss {

namespace {
[[noreturn]] void no_nccl() {
    SS_FAIL("this build has no NCCL backend: it needs CUDA (nvcc), NCCL and MPI; rebuild on a machine with "
            "them, or use --backend threads or mpi");
}
}  // namespace

bool nccl_available() { return false; }
int nccl_local_gpu() { no_nccl(); }

void run_nccl(const std::function<void(Comm&)>&, const CommOptions&, const std::vector<Group>&) { no_nccl(); }

}  // namespace ss
