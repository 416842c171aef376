// namespaces.h — Doxygen's page for each namespace (docs only; nothing includes it).
// Documenting the namespaces makes Doxygen check every public symbol inside them.

/// ShardScope: the engine (tensors, collectives, the rank grid, GPT-2, the strategies, the planner).
namespace ss {
/// The `shardscope` command's subcommands (src/app).
namespace app {}
/// The CPU kernels: the math of GPT-2, forward and backward (kernels/cpu).
namespace cpu {}
/// The pictures `shardscope diagram` draws from the engine's own data, and their SVG writer (src/diagram).
namespace diagram {}
/// Each kernel on the calling rank's device (kernels/dispatch.h), and the per-thread kernel profile (kernels/profile.h).
namespace kern {}
/// The CUDA twins of the CPU kernels and the cuBLAS matmul (kernels/cuda).
namespace cuda {}
/// The MPI side of the mpi and nccl backends (src/comm/mpi/mpi_detail.h, mpi_session.h).
namespace mpi {}
/// Reductions shared by the backends (src/comm/reduce_kernels.h).
namespace reduce {}
/// The threads backend's shared world: inboxes, waiting ranks, failure (src/comm/threads/threads_world.h).
namespace threads {}
}  // namespace ss
