// matmul_rate.h — how fast this CPU multiplies matrices, with the model's own kernel.
//
// `--emulate PRESET` slows every emulated link by r = GPU peak / this rate, so
// that a CPU run keeps the cluster's compute-to-communication ratio
// (comm/links.h). The rate is the one a rank of a threads run gets: one thread,
// fp32, the forward matmul of the model's layers (matmul_forward, OpenBLAS
// sgemm), 2 FLOPs per multiply-add.
#pragma once

namespace ss::cpu {

/// This CPU's fp32 matmul rate in GFLOP/s (1e9 FLOP/s) on one thread:
/// matmul_forward at N x C x OC = 256 x 256 x 1024 (B*T = 256 tokens through a
/// C = 256 model's c_fc), 2 N C OC FLOPs a call, the best of repeated timings
/// that take about @p seconds in all. OpenBLAS is set to one thread for the
/// measurement and restored after (process-wide: call it before rank threads
/// start computing). A positive, finite number; it varies from
/// run to run with the machine's load.
double measure_cpu_matmul_gflops(double seconds = 0.2);

}  // namespace ss::cpu
