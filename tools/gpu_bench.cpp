// gpu_bench.cpp — how fast is the cuBLAS path at GPT-2 124M's training shapes?
//
//   build-gpu/gpu_bench            (scripts/gpu-check runs it; exits 77 without a GPU)
//
// Times every GEMM of one GPT-2 124M training step at B = 16, T = 1024 in
// bf16 with fp32 accumulation, through the same functions the model will call
// (kernels/cuda/matmul.h), and sets each against the card's *measured* bf16
// peak: the best of large square GEMMs, which is what cuBLAS can reach on this
// card, not the datasheet number (H100/H200 SXM: 989 dense bf16 TFLOP/s).
//
// N = B*T = 16384 rows, C = 768, V = 50257. The GEMMs of one step (forward,
// then backward's dinp and dweight for each):
//
//   layer (x 12)   c_attn   [N,C]  @ [C,3C]       attn.c_proj [N,C]  @ [C,C]
//                  c_fc     [N,C]  @ [C,4C]       mlp.c_proj  [N,4C] @ [4C,C]
//   lm_head (x 1)  [N,C] @ wte[V,C]^T
//
// Each GEMM costs 2 M N K flops. TFLOP/s = flops / time; time is the median
// of kRounds rounds of kReps calls (after kWarmup calls), timed with CUDA
// events on one stream. The "step" row adds the times of all 12 * 4 * 3 + 3
// GEMMs of a step, weighted by how often each runs: it is the GEMM share of
// a step at this card's cuBLAS speed, the upper bound on what the model can
// reach before attention, LayerNorm, GELU and the optimizer are counted.
//
// Every shape is also checked (the #wrong column, as nccl-tests does): a few
// outputs of its forward GEMM against a double-precision dot product on the
// host, within 1e-2 of the output's scale (bf16 output, test_cuda_kernels.cpp).
// The program exits 1 if any is wrong.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/dtype.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/matmul.h"

namespace {

constexpr int kWarmup = 3, kReps = 10, kRounds = 5;
constexpr int kB = 16, kT = 1024, kN = kB * kT, kC = 768, kV = 50257, kLayers = 12;

// Device memory of n bf16 values, uniform in [-1, 1) (an LCG, as the tests), or uninitialised.
struct Bf16Buffer {
    uint16_t* ptr = nullptr;
    std::vector<uint16_t> host;  // the values, kept for the check (empty if uninitialised)

    Bf16Buffer(long n, uint64_t seed) {
        SS_CUDA_CHECK(cudaMalloc(&ptr, size_t(n) * 2));
        if (seed == 0) return;
        host.resize(n);
        uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
        for (auto& h : host) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            h = ss::f32_to_bf16(-1.0f + 2.0f * float((s >> 40) * (1.0 / 16777216.0)));
        }
        SS_CUDA_CHECK(cudaMemcpy(ptr, host.data(), size_t(n) * 2, cudaMemcpyHostToDevice));
    }
    ~Bf16Buffer() { cudaFree(ptr); }
    Bf16Buffer(const Bf16Buffer&) = delete;
    Bf16Buffer& operator=(const Bf16Buffer&) = delete;
};

// Median milliseconds per call of fn over kRounds rounds of kReps calls.
template <typename Fn>
double time_ms(Fn fn, cudaStream_t stream) {
    for (int i = 0; i < kWarmup; i++) fn();
    cudaEvent_t start, stop;
    SS_CUDA_CHECK(cudaEventCreate(&start));
    SS_CUDA_CHECK(cudaEventCreate(&stop));
    std::vector<double> rounds;
    for (int r = 0; r < kRounds; r++) {
        SS_CUDA_CHECK(cudaEventRecord(start, stream));
        for (int i = 0; i < kReps; i++) fn();
        SS_CUDA_CHECK(cudaEventRecord(stop, stream));
        SS_CUDA_CHECK(cudaEventSynchronize(stop));
        float ms = 0.0f;
        SS_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
        rounds.push_back(double(ms) / kReps);
    }
    SS_CUDA_CHECK(cudaEventDestroy(start));
    SS_CUDA_CHECK(cudaEventDestroy(stop));
    std::sort(rounds.begin(), rounds.end());
    return rounds[rounds.size() / 2];
}

double tflops(double M, double N, double K, double ms) { return 2.0 * M * N * K / (ms * 1e-3) / 1e12; }

// Row-major Cm[M,N] = op(A)[M,K] op(B)[K,N] in bf16 (fp32 sum), checked at a few outputs against
// a double dot product of the same bf16 values. Returns the number of wrong outputs.
int check_gemm(bool trans_a, bool trans_b, int M, int N, int K, const Bf16Buffer& A, long lda, const Bf16Buffer& B,
               long ldb, const uint16_t* Cm, long ldc) {
    int wrong = 0;
    uint64_t s = 12345;
    for (int k = 0; k < 8; k++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        const long i = long((s >> 33) % uint64_t(M)), j = long((s >> 13) % uint64_t(N));
        double want = 0.0;
        for (long p = 0; p < K; p++) {
            const float a = ss::bf16_to_f32(A.host[trans_a ? p * lda + i : i * lda + p]);
            const float b = ss::bf16_to_f32(B.host[trans_b ? j * ldb + p : p * ldb + j]);
            want += double(a) * b;
        }
        uint16_t got_bits = 0;
        SS_CUDA_CHECK(cudaMemcpy(&got_bits, Cm + i * ldc + j, 2, cudaMemcpyDeviceToHost));
        const double got = ss::bf16_to_f32(got_bits);
        // uniform [-1,1) inputs: a dot product of K terms has scale sqrt(K)/3
        const double scale = std::max(std::fabs(want), std::sqrt(double(K)) / 3.0);
        if (!(std::fabs(got - want) <= 1e-2 * scale)) wrong++;
    }
    return wrong;
}

struct Row {
    std::string name;
    int M, N, K;
    int per_step;  // how many times one training step runs it
    double ms;
    int wrong;     // -1: not checked
};

void print_row(const Row& r, double peak) {
    const double tf = tflops(r.M, r.N, r.K, r.ms);
    std::printf("  %-26s %6d %6d %6d %9.3f %9.1f %7.0f%%  %s\n", r.name.c_str(), r.M, r.N, r.K, r.ms, tf,
                peak > 0 ? 100.0 * tf / peak : 0.0, r.wrong < 0 ? "" : std::to_string(r.wrong).c_str());
}

int run() {
    int devices = 0;
    const cudaError_t err = cudaGetDeviceCount(&devices);
    if (err != cudaSuccess || devices == 0) {
        std::printf("gpu_bench: no CUDA device visible (%s): SKIPPED, nothing was measured (exit 77)\n",
                    err != cudaSuccess ? cudaGetErrorName(err) : "cudaGetDeviceCount returned 0");
        return 77;
    }
    cudaDeviceProp prop{};
    SS_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    int cublas_version = 0;
    cublasHandle_t blas = ss::cuda::blas_create();
    SS_CUBLAS_CHECK(cublasGetVersion(blas, &cublas_version));
    cudaStream_t stream;
    SS_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    std::printf("gpu_bench: %s (sm_%d%d, %d SMs, %.0f GiB), cuBLAS %d\n", prop.name, prop.major, prop.minor,
                prop.multiProcessorCount, double(prop.totalGlobalMem) / double(1L << 30), cublas_version);
    std::printf("  bf16 in, fp32 accumulation (CUBLAS_COMPUTE_32F); median of %d rounds of %d calls\n\n", kRounds,
                kReps);

    // ---- 1. the measured peak: large square bf16 GEMMs ----
    double peak = 0.0;
    std::vector<Row> peak_rows;
    for (int n : {4096, 8192, 16384}) {
        Bf16Buffer A(long(n) * n, 1), B(long(n) * n, 2), Cm(long(n) * n, 0);
        const double ms = time_ms(
            [&] {
                ss::cuda::gemm(blas, false, false, n, n, n, 1.0f, A.ptr, n, B.ptr, n, 0.0f, Cm.ptr, n, ss::DType::bf16,
                               ss::DType::bf16, stream);
            },
            stream);
        const int wrong = check_gemm(false, false, n, n, n, A, n, B, n, Cm.ptr, n);
        peak_rows.push_back({"square " + std::to_string(n), n, n, n, 0, ms, wrong});
        peak = std::max(peak, tflops(n, n, n, ms));
    }

    // ---- 2. GPT-2 124M's GEMMs at B=16, T=1024 ----
    // One set of buffers big enough for every shape: activations [N, 4C], weights [4C, C] or wte [V, C].
    Bf16Buffer x(long(kN) * 4 * kC, 3), dy(long(kN) * 4 * kC, 4), w(long(kV) * kC, 5), out(long(kN) * kV, 0);
    float* dw = nullptr;  // fp32 weight gradient, [V, C] at most
    SS_CUDA_CHECK(cudaMalloc(&dw, size_t(kV) * kC * sizeof(float)));
    SS_CUDA_CHECK(cudaMemset(dw, 0, size_t(kV) * kC * sizeof(float)));
    uint16_t* dx = nullptr;  // bf16 input gradient, [N, 4C] at most
    SS_CUDA_CHECK(cudaMalloc(&dx, size_t(kN) * 4 * kC * 2));
    SS_CUDA_CHECK(cudaMemset(dx, 0, size_t(kN) * 4 * kC * 2));

    struct Linear {
        const char* name;
        int C, OC;
    };
    const Linear linears[] = {{"c_attn", kC, 3 * kC}, {"attn.c_proj", kC, kC}, {"c_fc", kC, 4 * kC},
                              {"mlp.c_proj", 4 * kC, kC}};
    std::vector<Row> rows;
    for (const Linear& l : linears) {  // matmul.h: forward, dinp, dweight
        const int C = l.C, OC = l.OC;
        Row fwd{std::string(l.name) + " fwd", kN, OC, C, kLayers, 0.0, 0};
        fwd.ms = time_ms(
            [&] { ss::cuda::matmul_forward_bf16(out.ptr, x.ptr, w.ptr, nullptr, kN, C, OC, blas, stream); }, stream);
        fwd.wrong = check_gemm(false, false, kN, OC, C, x, C, w, OC, out.ptr, OC);
        Row dinp{std::string(l.name) + " dinp", kN, C, OC, kLayers, 0.0, -1};
        dinp.ms = time_ms(
            [&] {
                ss::cuda::matmul_backward_bf16(dx, nullptr, nullptr, dy.ptr, x.ptr, w.ptr, kN, C, OC, blas, stream);
            },
            stream);
        Row dweight{std::string(l.name) + " dweight", C, OC, kN, kLayers, 0.0, -1};
        dweight.ms = time_ms(
            [&] {
                ss::cuda::matmul_backward_bf16(nullptr, dw, nullptr, dy.ptr, x.ptr, w.ptr, kN, C, OC, blas, stream);
            },
            stream);
        rows.push_back(fwd);
        rows.push_back(dinp);
        rows.push_back(dweight);
    }
    {  // lm_head.h's three GEMMs, in bf16 through gemm() (lm_head.h itself is fp32 for now)
        Row fwd{"lm_head fwd", kN, kV, kC, 1, 0.0, 0};
        fwd.ms = time_ms(
            [&] {
                ss::cuda::gemm(blas, false, true, kN, kV, kC, 1.0f, x.ptr, kC, w.ptr, kC, 0.0f, out.ptr, kV,
                               ss::DType::bf16, ss::DType::bf16, stream);
            },
            stream);
        fwd.wrong = check_gemm(false, true, kN, kV, kC, x, kC, w, kC, out.ptr, kV);
        // dlogits [N, V] is `out` here: its values do not change the time
        Row dx_row{"lm_head dx", kN, kC, kV, 1, 0.0, -1};
        dx_row.ms = time_ms(
            [&] {
                ss::cuda::gemm(blas, false, false, kN, kC, kV, 1.0f, out.ptr, kV, w.ptr, kC, 1.0f, dx, kC,
                               ss::DType::bf16, ss::DType::bf16, stream);
            },
            stream);
        Row dwte{"lm_head dwte", kV, kC, kN, 1, 0.0, -1};
        dwte.ms = time_ms(
            [&] {
                ss::cuda::gemm(blas, true, false, kV, kC, kN, 1.0f, out.ptr, kV, x.ptr, kC, 1.0f, dw, kC,
                               ss::DType::bf16, ss::DType::f32, stream);
            },
            stream);
        rows.push_back(fwd);
        rows.push_back(dx_row);
        rows.push_back(dwte);
    }

    // ---- 3. the table ----
    std::printf("  %-26s %6s %6s %6s %9s %9s %8s  %s\n", "GEMM (row-major M x N, K)", "M", "N", "K", "ms", "TFLOP/s",
                "of peak", "#wrong");
    for (const Row& r : peak_rows) print_row(r, peak);
    std::printf("  measured peak (best square): %.1f TFLOP/s\n\n", peak);
    double step_flops = 0.0, step_ms = 0.0;
    int wrong = 0;
    for (const Row& r : peak_rows) wrong += std::max(r.wrong, 0);
    for (const Row& r : rows) {
        print_row(r, peak);
        step_flops += 2.0 * r.M * r.N * r.K * r.per_step;
        step_ms += r.ms * r.per_step;
        wrong += std::max(r.wrong, 0);
    }
    const double step_tf = step_flops / (step_ms * 1e-3) / 1e12;
    std::printf("  %-26s %20s %9.3f %9.1f %7.0f%%\n", "step (all GEMMs, weighted)", "", step_ms, step_tf,
                100.0 * step_tf / peak);
    std::printf("\ngpu_bench: matmul %.1f TFLOP/s over a GPT-2 124M step's GEMMs, %.0f%% of the measured peak "
                "%.1f TFLOP/s; %d wrong\n",
                step_tf, 100.0 * step_tf / peak, peak, wrong);

    SS_CUDA_CHECK(cudaFree(dw));
    SS_CUDA_CHECK(cudaFree(dx));
    SS_CUDA_CHECK(cudaStreamDestroy(stream));
    ss::cuda::blas_destroy(blas);
    return wrong == 0 ? 0 : 1;
}

}  // namespace

int main() {
    try {
        return run();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gpu_bench: error: %s\n", e.what());
        return 1;
    }
}
