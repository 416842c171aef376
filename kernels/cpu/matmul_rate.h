// matmul_rate.h — how fast this CPU multiplies matrices, with the model's own kernel.
//
// `--emulate PRESET` slows every emulated link by r = GPU peak / this rate, so
// that a CPU run keeps the cluster's compute-to-communication ratio
// (comm/links.h). The rate is the one a rank of a threads run gets: one thread,
// fp32, the forward matmul of the model's layers (matmul_forward, the
// register tiles of gemm.h), 2 FLOPs per multiply-add.
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

/// One sgemm as the model calls it: C[M,N] = op(A)[M,K] op(B)[K,N], row-major,
/// op = transpose where trans_a / trans_b (matmul.cpp and lm_head.cpp list theirs).
struct SgemmShape {
    int M = 0;             ///< rows of C
    int N = 0;             ///< columns of C
    int K = 0;             ///< the summed dimension
    bool trans_a = false;  ///< A is stored [K,M] and read transposed
    bool trans_b = false;  ///< B is stored [N,K] and read transposed
};

/// The fp32 rate of cblas_sgemm at @p s in GFLOP/s, 2 M N K FLOPs a call, on
/// the threads OpenBLAS has now (the caller sets them: cpu::set_blas_threads):
/// the best of at least 3 timings that take about @p seconds in all, after one
/// call that warms the caches. beta = 0 (the model's backward adds with beta = 1,
/// one more pass over C, small beside the K-long sums). A positive, finite number;
/// throws ss::Error if the product it timed is wrong.
double measure_sgemm_gflops(const SgemmShape& s, double seconds = 0.1);

/// The same product as measure_sgemm_gflops, on gemm.h's register tiles (one
/// thread, the build's vector width): what the engine's linear layers run on.
/// Same timing, same check of the result.
double measure_tile_gemm_gflops(const SgemmShape& s, double seconds = 0.1);

/// Independent chains of multiply-adds measure_fma_peak_gflops runs: a chain waits
/// for its last FMA, and a 4-cycle FMA on two pipes needs 8 to keep both busy;
/// 12, and the two operands, fit AVX2's 16 vector registers.
constexpr int kFmaPeakChains = 12;

/// Whether the build's vector multiply-add is one fused instruction (FMA3 or
/// AVX-512F). Without it (a baseline x86-64 build: the sanitizer stages) the
/// chains below are a multiply and an add on SSE halves, and what
/// measure_fma_peak_gflops returns is that build's multiply-add rate, not the
/// core's FMA peak (and slower than sgemm): `bench` says it did not measure the peak.
#if defined(__FMA__) || defined(__AVX512F__)
constexpr bool kFusedMultiplyAdd = true;
#else
constexpr bool kFusedMultiplyAdd = false;
#endif

/// This core's fp32 FMA peak in GFLOP/s on one thread, for the build's vector
/// width (tile.h's kVecFloats): kFmaPeakChains independent chains of vector
/// multiply-adds on registers, no memory operand, 2 FLOPs per lane per
/// multiply-add. No product of matrices runs faster on this core, so it says
/// how close a GEMM rate, and the limit `bench` takes from it, already is to
/// what the core can do at all (where kFusedMultiplyAdd; else the build's
/// multiply-add rate). The best of repeated timings that take about @p seconds
/// in all; a positive, finite number.
double measure_fma_peak_gflops(double seconds = 0.05);

}  // namespace ss::cpu
