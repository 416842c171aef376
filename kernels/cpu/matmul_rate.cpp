// matmul_rate.cpp — time matmul_forward, sgemm and the tiles on one thread and keep the best rate
// (the best, not the mean: the other builds and ranks sharing the cores only
// ever slow a timing down).
#include "kernels/cpu/matmul_rate.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "core/check.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/tile.h"

namespace ss::cpu {

namespace {

/// The best rate, in FLOP/s, of @p call (@p flops a call): one call that warms the
/// caches, then at least 3 timings of repeated calls, each about @p seconds / 8
/// long, until about @p seconds have passed.
template <class Call>
double best_flops_per_s(double seconds, double flops, Call call) {
    using clock = std::chrono::steady_clock;
    auto elapsed = [](clock::time_point t0) { return std::chrono::duration<double>(clock::now() - t0).count(); };
    call();
    double best = 0;
    const auto start = clock::now();
    for (int rep = 0; rep < 3 || elapsed(start) < seconds; ++rep) {
        int calls = 0;
        const auto t0 = clock::now();
        do {
            call();
            ++calls;
        } while (elapsed(t0) < seconds / 8);
        best = std::max(best, calls * flops / elapsed(t0));
    }
    return best;
}

}  // namespace

double measure_cpu_matmul_gflops(double seconds) {
    constexpr int N = 256, C = 256, OC = 1024;
    constexpr double flops = 2.0 * N * C * OC;
    std::vector<float> inp(size_t(N) * C, 0.5f), weight(size_t(C) * OC, 0.25f), bias(OC, 1.0f),
        out(size_t(N) * OC);

    const int threads = openblas_get_num_threads();
    openblas_set_num_threads(1);
    const double best = best_flops_per_s(seconds, flops, [&] {
        matmul_forward(out.data(), inp.data(), weight.data(), bias.data(), N, C, OC);
    });
    openblas_set_num_threads(threads);
    // Every output element is the bias plus C products of 0.5 x 0.25: a wrong
    // kernel is not timed as a fast one.
    SS_CHECK(out[0] == 1.0f + 0.125f * C && out.back() == out[0],
             "measure_cpu_matmul_gflops: matmul_forward gave " << out[0] << ", expected " << 1.0f + 0.125f * C);
    return best / 1e9;
}

namespace {

void check_shape(const SgemmShape& s, const char* what) {
    SS_CHECK(s.M > 0 && s.N > 0 && s.K > 0, what << ": " << s.M << " x " << s.N << " x " << s.K
                                                 << " is not a product; every size must be positive");
}

/// The best rate of @p call (2 M N K FLOPs) over timings of about @p seconds in
/// all, after one call that warms the caches; then checks C: every element is K
/// products of 0.5 x 0.25 (exact in fp32 for these sizes).
template <class Call>
double best_rate(const SgemmShape& s, double seconds, const std::vector<float>& c, const char* what, Call call) {
    const double best = best_flops_per_s(seconds, 2.0 * s.M * s.N * s.K, call);
    SS_CHECK(c[0] == 0.125f * float(s.K) && c.back() == c[0],
             what << ": the product gave " << c[0] << ", expected " << 0.125f * float(s.K));
    return best / 1e9;
}

}  // namespace

double measure_sgemm_gflops(const SgemmShape& s, double seconds) {
    check_shape(s, "measure_sgemm_gflops");
    std::vector<float> a(size_t(s.M) * s.K, 0.5f), b(size_t(s.K) * s.N, 0.25f), c(size_t(s.M) * s.N);
    const int lda = s.trans_a ? s.M : s.K, ldb = s.trans_b ? s.K : s.N;
    return best_rate(s, seconds, c, "measure_sgemm_gflops", [&] {
        cblas_sgemm(CblasRowMajor, s.trans_a ? CblasTrans : CblasNoTrans, s.trans_b ? CblasTrans : CblasNoTrans, s.M,
                    s.N, s.K, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c.data(), s.N);
    });
}

double measure_tile_gemm_gflops(const SgemmShape& s, double seconds) {
    check_shape(s, "measure_tile_gemm_gflops");
    std::vector<float> a(size_t(s.M) * s.K, 0.5f), b(size_t(s.K) * s.N, 0.25f), c(size_t(s.M) * s.N);
    // The same operands as sgemm's: A stored [K,M] when trans_a, B stored [N,K] when trans_b.
    const MatrixView A = s.trans_a ? MatrixView{a.data(), 1, s.M} : MatrixView{a.data(), s.K, 1};
    const MatrixView B = s.trans_b ? MatrixView{b.data(), 1, s.K} : MatrixView{b.data(), s.N, 1};
    return best_rate(s, seconds, c, "measure_tile_gemm_gflops",
                     [&] { gemm(s.M, s.N, s.K, A, B, c.data(), s.N, TileStart::zero); });
}

double measure_fma_peak_gflops(double seconds) {
    using detail::TileVec;
    constexpr int kSteps = 4096;  // multiply-adds a chain per timed call of the loop below
    volatile float scale = 0.999999f, shift = 1e-6f;  // read at run time: nothing to fold at compile time
    TileVec x, y, one, acc[kFmaPeakChains];
    for (int i = 0; i < kVecFloats; ++i) {
        x[i] = scale;
        y[i] = shift;
        one[i] = 1.0f;
    }
    // Each chain starts at the map's fixed point, y / (1 - x) = 1, and stays near it however
    // many steps a slow build times (from 0 it would take millions to get there): no
    // overflow, no denormal, a result to check.
    for (TileVec& a : acc) a = one;
    auto run = [&] {  // acc = acc x + y
        for (int step = 0; step < kSteps; ++step)
#pragma GCC unroll kFmaPeakChains
            for (int c = 0; c < kFmaPeakChains; ++c) acc[c] = acc[c] * x + y;
    };
    const double best = best_flops_per_s(seconds, 2.0 * kVecFloats * kFmaPeakChains * kSteps, run);
    float sum = 0;  // the chains' results are used, so the loop is kept; each is near 1
    for (const TileVec& a : acc) sum += a[0];
    SS_CHECK(sum > 0.5f * kFmaPeakChains && sum < 1.5f * kFmaPeakChains,
             "measure_fma_peak_gflops: the chains ended at " << sum / kFmaPeakChains << ", expected about 1");
    return best / 1e9;
}

}  // namespace ss::cpu
