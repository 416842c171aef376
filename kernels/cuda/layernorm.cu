// layernorm.cu — LayerNorm on the GPU (twin of kernels/cpu/layernorm.cpp, which derives the formulas).
//
// Forward and the dinp part of backward: one warp (32 threads) per row. Lane
// j reads x[j], x[j+32], ... (consecutive lanes, consecutive addresses) and
// the row's sums are warp_sum butterflies (reduce.cuh). The variance takes
// two passes, mean first, as the CPU does (no E[x^2] - mean^2 cancellation).
//
//   dx_i = rstd ( g_i - mean_j(g_j) - n_i mean_j(g_j n_j) ),   g = w dout, n = (x - mean) rstd
//
// dweight[c] += sum_n n[n,c] dout[n,c] and dbias[c] += sum_n dout[n,c] are
// sums down the columns. A thread per column would give only C (768) threads
// for N (16K) rows; instead a 2-D grid gives each thread a column and a chunk
// of kRowsPerChunk rows, and the chunks' partial sums meet with atomicAdd
// (N / kRowsPerChunk adds per element, order not fixed: rounding may differ
// between runs).
#include "kernels/cuda/layernorm.h"

#include "kernels/cpu/layernorm.h"  // kLayerNormEps, the same epsilon as the CPU twin
#include "kernels/cuda/check.h"
#include "kernels/cuda/reduce.cuh"

namespace ss::cuda {

namespace {

constexpr int kRowsPerBlock = kThreads / 32;  // one warp per row
constexpr int kRowsPerChunk = 64;             // rows summed by one thread of the dweight/dbias kernel

__global__ void layernorm_forward_kernel(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                                         const float* bias, int N, int C) {
    const int lane = threadIdx.x % 32;
    const long n = blockIdx.x * long(kRowsPerBlock) + threadIdx.x / 32;
    if (n >= N) return;  // the whole warp leaves together: n is the same for its 32 lanes
    const float* x = inp + n * C;
    float sum = 0.0f;
    for (int i = lane; i < C; i += 32) sum += x[i];
    const float m = warp_sum(sum) / C;
    float sq = 0.0f;
    for (int i = lane; i < C; i += 32) sq += (x[i] - m) * (x[i] - m);
    const float s = 1.0f / sqrtf(warp_sum(sq) / C + ::ss::cpu::kLayerNormEps);
    float* y = out + n * C;
    for (int i = lane; i < C; i += 32) y[i] = (x[i] - m) * s * weight[i] + bias[i];
    if (lane == 0) {
        mean[n] = m;
        rstd[n] = s;
    }
}

__global__ void layernorm_backward_dinp_kernel(float* dinp, const float* dout, const float* inp, const float* weight,
                                               const float* mean, const float* rstd, int N, int C) {
    const int lane = threadIdx.x % 32;
    const long n = blockIdx.x * long(kRowsPerBlock) + threadIdx.x / 32;
    if (n >= N) return;
    const float* x = inp + n * C;
    const float* dy = dout + n * C;
    float* dx = dinp + n * C;
    const float m = mean[n], s = rstd[n];
    float sum_g = 0.0f, sum_gn = 0.0f;
    for (int i = lane; i < C; i += 32) {
        const float g = weight[i] * dy[i];
        sum_g += g;
        sum_gn += g * ((x[i] - m) * s);
    }
    const float mean_g = warp_sum(sum_g) / C;
    const float mean_gn = warp_sum(sum_gn) / C;
    for (int i = lane; i < C; i += 32) {
        const float norm = (x[i] - m) * s;
        dx[i] += s * (weight[i] * dy[i] - mean_g - norm * mean_gn);
    }
}

// grid (ceil(C / kThreads), ceil(N / kRowsPerChunk)): thread = (column c, chunk of rows)
__global__ void layernorm_backward_params_kernel(float* dweight, float* dbias, const float* dout, const float* inp,
                                                 const float* mean, const float* rstd, int N, int C) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    const long n0 = long(blockIdx.y) * kRowsPerChunk;
    const long n1 = n0 + kRowsPerChunk < N ? n0 + kRowsPerChunk : N;
    float dw = 0.0f, db = 0.0f;
    for (long n = n0; n < n1; n++) {
        const float dy = dout[n * C + c];
        dw += (inp[n * C + c] - mean[n]) * rstd[n] * dy;
        db += dy;
    }
    if (dweight != nullptr) atomicAdd(&dweight[c], dw);
    if (dbias != nullptr) atomicAdd(&dbias[c], db);
}

}  // namespace

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int N, int C, cudaStream_t stream) {
    if (N == 0) return;
    layernorm_forward_kernel<<<blocks_for(N, kRowsPerBlock), kThreads, 0, stream>>>(out, mean, rstd, inp, weight,
                                                                                     bias, N, C);
    SS_CUDA_CHECK_LAUNCH("layernorm_forward_kernel");
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int N, int C,
                        cudaStream_t stream) {
    if (N == 0) return;
    layernorm_backward_dinp_kernel<<<blocks_for(N, kRowsPerBlock), kThreads, 0, stream>>>(dinp, dout, inp, weight,
                                                                                           mean, rstd, N, C);
    SS_CUDA_CHECK_LAUNCH("layernorm_backward_dinp_kernel");
    if (dweight == nullptr && dbias == nullptr) return;
    const dim3 grid(blocks_for(C), blocks_for(N, kRowsPerChunk));
    layernorm_backward_params_kernel<<<grid, kThreads, 0, stream>>>(dweight, dbias, dout, inp, mean, rstd, N, C);
    SS_CUDA_CHECK_LAUNCH("layernorm_backward_params_kernel");
}

}  // namespace ss::cuda
