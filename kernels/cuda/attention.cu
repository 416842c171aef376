// attention.cu — causal attention on the GPU: the products through cuBLAS,
// the masked softmax as a kernel (twin of kernels/cpu/attention.cpp, whose
// header derives the formulas; the structure is llm.c's first CUDA attention,
// karpathy/llm.c dev/cuda/attention_forward.cu, kernel 3).
//
// For one (b, h), Q, K, V are [T, hs] blocks of qkv with row stride 3C:
//
//   forward    S = Q K^T / sqrt(hs),  P = softmax_row(S + causal mask),  O = P V
//   backward   dP = dO V^T,  dS = P (dP - rowsum(P dP)) / sqrt(hs)
//              dQ += dS K,   dK += dS^T Q,   dV += P^T dO
//
// Attention, step by step (one stream; every step waits for the one before):
//
//   forward
//     1. split_heads    qkv[B,T,3C] -> q, k, v [B,NH,T,hs]     (each head's block contiguous)
//     2. GEMM           att = scale q k^T                      (B*NH batches, full T x T)
//     3. softmax        att row by row, in place: s <= t kept, s > t set to 0
//     4. GEMM           y = att v
//     5. merge_heads    y[B,NH,T,hs] -> out[B,T,C]
//   backward
//     1. split_heads    q, k, v from qkv; dy from dout[B,T,C]
//     2. GEMM           scratch = dy v^T                       (dP)
//     3. GEMM           dv = att^T dy
//     4. softmax bwd    scratch row by row, in place: dS = scale P (dP - rowsum(P dP)); 0 above the diagonal
//     5. GEMM           dq = dS k
//     6. GEMM           dk = dS^T q
//     7. merge_heads    dqkv[B,T,3C] += [dq | dk | dv]
//
// The GEMMs, row-major, per batch i = b*NH + h (X_i = X + i * stride), with
// gemm_batched's arguments (trans_a, trans_b, M, N, K; A, lda; B, ldb; C, ldc):
//
//   att[T,T]  = scale q[T,hs] k^T   (N, T, T,  T,  hs;  q, hs;    k, hs;    att, T)      strides T*hs, T*hs, T*T
//   y[T,hs]   = att[T,T] v[T,hs]    (N, N, T,  hs, T;   att, T;   v, hs;    y, hs)       strides T*T,  T*hs, T*hs
//   dP[T,T]   = dy[T,hs] v^T        (N, T, T,  T,  hs;  dy, hs;   v, hs;    scratch, T)  strides T*hs, T*hs, T*T
//   dv[T,hs]  = att^T dy            (T, N, T,  hs, T;   att, T;   dy, hs;   dv, hs)      strides T*T,  T*hs, T*hs
//   dq[T,hs]  = dS[T,T] k           (N, N, T,  hs, T;   dS, T;    k, hs;    dq, hs)      strides T*T,  T*hs, T*hs
//   dk[T,hs]  = dS^T q              (T, N, T,  hs, T;   dS, T;    q, hs;    dk, hs)      strides T*T,  T*hs, T*hs
//
// Each is 2 T^2 hs flops per head: 4 B T^2 C forward, 8 B T^2 C backward.
// The row-major to column-major swap is matmul.cu's (its header explains it);
// a batch is one cublasGemmStridedBatchedEx call over all B*NH heads, which
// needs each head's block at a fixed stride: hence the copies of steps 1, 5
// and 7 (B*T*C floats each, small next to the T x T products).
//
// Why this is faster than plain loops. The naive version (one thread per
// output, a length-hs or length-T loop over global memory) reads every K and
// V row once per query: about one load per multiply-add, so it runs at the
// speed of the caches, not of the arithmetic, and its column walks over P
// (stride T) are uncoalesced. cuBLAS tiles each product: blocks of both
// operands are staged in shared memory and registers and each loaded value
// feeds tens of multiply-adds, so the exact-fp32 GEMMs run near the CUDA
// cores' FFMA peak (67 TFLOP/s on an H100/H200 SXM, datasheet; PEDANTIC keeps
// them off the tensor cores) and, with bf16 products, on the tensor cores
// (989 TFLOP/s dense bf16). llm.c measured this structure ~20x faster than
// its naive port (dev/cuda/attention_forward.cu, header: version 3 vs 1).
//
// What it still costs, and what FlashAttention (Dao et al. 2022, arXiv:2205.14135)
// changes: the GEMMs compute the whole T x T, twice the flops the causal mask
// needs (the CPU twin skips the upper blocks); P is written to memory and
// read back (B*NH*T*T floats, 805 MB per layer at B=16, T=1024, NH=12) and
// kept for backward. FlashAttention fuses all steps in one kernel over tiles
// of Q, K, V in shared memory with the online softmax (kernels/cpu/attention_block.h),
// skips the tiles above the diagonal, never stores P (backward recomputes it
// from each row's log-sum-exp), and so moves O(T) instead of O(T^2) per head.
//
// Precision: fp32 in and out. The GEMMs use matmul.cu's compute type:
// CUBLAS_COMPUTE_32F_PEDANTIC (exact fp32 products, no TF32), or
// CUBLAS_COMPUTE_32F_FAST_16BF when this thread asked for bf16 products
// (`--dtype bf16`). The softmax and its backward are fp32 with expf; the
// masked entries above the diagonal add exact zeros to the y, dv, dq and dk
// sums, so only the order of the adds differs from the CPU twin.
//
// Who computes what in the kernels (one row = one (b, h, t)):
//   split_heads_kernel             one thread per element of the [B,NH,T,hs] copy
//   merge_heads_kernel             one thread per element of the [B,NH,T,hs] source; each
//                                  destination element has one writer, so no atomics
//   causal_softmax_kernel          one warp per row: lane j takes s = j, j+32, ... <= t;
//                                  max and sum by warp butterflies (reduce.cuh)
//   causal_softmax_backward_kernel one warp per row, the same way
#include "kernels/cuda/attention.h"

#include <cmath>

#include "core/check.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/matmul.h"
#include "kernels/cuda/reduce.cuh"

namespace ss::cuda {

namespace {

constexpr int kRowsPerBlock = kThreads / 32;  // one warp per (b, h, t) row

// dst[b, h, t, j] = src[(b*T + t)*ld + h*hs + j]: each head's [T, hs] block made contiguous
__global__ void split_heads_kernel(float* dst, const float* src, long ld, int B, int T, int NH, int hs) {
    const long i = blockIdx.x * long(blockDim.x) + threadIdx.x;
    if (i >= long(B) * NH * T * hs) return;
    const int j = int(i % hs);
    const int t = int(i / hs % T);
    const int h = int(i / hs / T % NH);
    const long b = i / hs / T / NH;
    dst[i] = src[(b * T + t) * ld + long(h) * hs + j];
}

// dst[(b*T + t)*ld + h*hs + j] = (or +=) src[b, h, t, j]: the heads back side by side
__global__ void merge_heads_kernel(float* dst, long ld, const float* src, int B, int T, int NH, int hs,
                                   bool accumulate) {
    const long i = blockIdx.x * long(blockDim.x) + threadIdx.x;
    if (i >= long(B) * NH * T * hs) return;
    const int j = int(i % hs);
    const int t = int(i / hs % T);
    const int h = int(i / hs / T % NH);
    const long b = i / hs / T / NH;
    float* d = dst + (b * T + t) * ld + long(h) * hs + j;
    *d = accumulate ? *d + src[i] : src[i];
}

// att holds the scaled scores of `rows` rows of length T (row = (b*NH + h)*T + t);
// in place: P[t, s] = exp(S[t, s] - max) / sum for s <= t, and 0 for s > t, as the CPU stores it
__global__ void causal_softmax_kernel(float* att, long rows, int T) {
    const int lane = threadIdx.x % 32;
    const long row = blockIdx.x * long(kRowsPerBlock) + threadIdx.x / 32;
    if (row >= rows) return;  // the whole warp leaves together: the butterflies below see 32 lanes
    const int t = int(row % T);
    float* p = att + row * T;
    // 1. the row's max (a NaN wins, as the CPU's lane_max)
    float rmax = -INFINITY;
    for (int s = lane; s <= t; s += 32) rmax = (p[s] > rmax || p[s] != p[s]) ? p[s] : rmax;
    rmax = warp_max(rmax);
    // 2. the sum of the exponentials
    float sum = 0.0f;
    for (int s = lane; s <= t; s += 32) sum += expf(p[s] - rmax);
    const float inv_sum = 1.0f / warp_sum(sum);
    // 3. normalise (each lane rewrites only what it read); the masked future is 0
    for (int s = lane; s < T; s += 32) p[s] = s <= t ? expf(p[s] - rmax) * inv_sum : 0.0f;
}

// dS holds dP (rows as above); in place: dS[t, s] = scale P[t, s] (dP[t, s] - sum_s' P dP) for s <= t, 0 above
__global__ void causal_softmax_backward_kernel(float* dS, const float* att, long rows, int T, float scale) {
    const int lane = threadIdx.x % 32;
    const long row = blockIdx.x * long(kRowsPerBlock) + threadIdx.x / 32;
    if (row >= rows) return;
    const int t = int(row % T);
    const float* p = att + row * T;
    float* d = dS + row * T;
    float pdp = 0.0f;
    for (int s = lane; s <= t; s += 32) pdp += p[s] * d[s];
    pdp = warp_sum(pdp);
    for (int s = lane; s < T; s += 32) d[s] = s <= t ? scale * p[s] * (d[s] - pdp) : 0.0f;
}

// Row-major, for each i < batch: C_i[M,N] = alpha op(A_i) op(B_i) + beta C_i, X_i = X + i * stride_x.
// matmul.cu's gemm() with a batch: the same swap to column-major, the same compute type.
void gemm_batched(cublasHandle_t blas, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
                  int lda, long stride_a, const float* Bm, int ldb, long stride_b, float beta, float* Cm, int ldc,
                  long stride_c, int batch, cudaStream_t stream) {
    const cublasComputeType_t compute =
        fp32_gemm_bf16_products() ? CUBLAS_COMPUTE_32F_FAST_16BF : CUBLAS_COMPUTE_32F_PEDANTIC;
    SS_CUBLAS_CHECK(cublasSetStream(blas, stream));
    // row-major C = op(A) op(B)  <=>  column-major C^T = op(B)^T op(A)^T: B first, N and M swapped
    SS_CUBLAS_CHECK(cublasGemmStridedBatchedEx(blas, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                               trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &alpha, Bm, CUDA_R_32F,
                                               ldb, stride_b, A, CUDA_R_32F, lda, stride_a, &beta, Cm, CUDA_R_32F, ldc,
                                               stride_c, batch, compute, CUBLAS_GEMM_DEFAULT));
}

// Temporary device memory in stream order: cudaMallocAsync now, cudaFreeAsync
// after the kernels queued before it (neither synchronises the device).
// release() frees through the check; the destructor frees without one, for
// when an error unwinds past it (a destructor must not throw).
struct StreamFloats {
    float* ptr = nullptr;
    cudaStream_t stream;
    StreamFloats(long n, cudaStream_t s) : stream(s) { SS_CUDA_CHECK(cudaMallocAsync(&ptr, sizeof(float) * n, s)); }
    ~StreamFloats() {
        if (ptr != nullptr) cudaFreeAsync(ptr, stream);
    }
    StreamFloats(const StreamFloats&) = delete;
    StreamFloats& operator=(const StreamFloats&) = delete;
    void release() {
        SS_CUDA_CHECK(cudaFreeAsync(ptr, stream));
        ptr = nullptr;
    }
};

void split_heads(float* dst, const float* src, long ld, int B, int T, int NH, int hs, cudaStream_t stream) {
    split_heads_kernel<<<blocks_for(long(B) * NH * T * hs), kThreads, 0, stream>>>(dst, src, ld, B, T, NH, hs);
    SS_CUDA_CHECK_LAUNCH("split_heads_kernel");
}

void merge_heads(float* dst, long ld, const float* src, int B, int T, int NH, int hs, bool accumulate,
                 cudaStream_t stream) {
    merge_heads_kernel<<<blocks_for(long(B) * NH * T * hs), kThreads, 0, stream>>>(dst, ld, src, B, T, NH, hs,
                                                                                   accumulate);
    SS_CUDA_CHECK_LAUNCH("merge_heads_kernel");
}

void check_shape(int C, int NH) {
    SS_CHECK(NH > 0 && C % NH == 0, "attention: C=" << C << " is not divisible by NH=" << NH
                                                    << "; the head size C/NH must be a whole number");
}

}  // namespace

void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH, cublasHandle_t blas,
                       cudaStream_t stream) {
    check_shape(C, NH);
    const long rows = long(B) * NH * T;
    if (rows == 0) return;
    const int hs = C / NH, heads = B * NH;
    const long C3 = 3L * C, n = long(B) * T * C, TT = long(T) * T, Ths = long(T) * hs;
    const float scale = 1.0f / std::sqrt(float(hs));  // as the CPU computes it
    StreamFloats tmp(4 * n, stream);
    float *q = tmp.ptr, *k = q + n, *v = k + n, *y = v + n;  // each [B,NH,T,hs]
    // 1. each head's q, k, v contiguous
    split_heads(q, qkv, C3, B, T, NH, hs, stream);
    split_heads(k, qkv + C, C3, B, T, NH, hs, stream);
    split_heads(v, qkv + 2L * C, C3, B, T, NH, hs, stream);
    // 2. att[T,T] = scale q k^T, every head at once
    gemm_batched(blas, false, true, T, T, hs, scale, q, hs, Ths, k, hs, Ths, 0.0f, att, T, TT, heads, stream);
    // 3. masked softmax in place
    causal_softmax_kernel<<<blocks_for(rows, kRowsPerBlock), kThreads, 0, stream>>>(att, rows, T);
    SS_CUDA_CHECK_LAUNCH("causal_softmax_kernel");
    // 4. y[T,hs] = att v
    gemm_batched(blas, false, false, T, hs, T, 1.0f, att, T, TT, v, hs, Ths, 0.0f, y, hs, Ths, heads, stream);
    // 5. out[B,T,C]: heads side by side
    merge_heads(out, C, y, B, T, NH, hs, false, stream);
    tmp.release();
}

void attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv, const float* att, int B,
                        int T, int C, int NH, cublasHandle_t blas, cudaStream_t stream) {
    check_shape(C, NH);
    const long rows = long(B) * NH * T;
    if (rows == 0) return;
    const int hs = C / NH, heads = B * NH;
    const long C3 = 3L * C, n = long(B) * T * C, TT = long(T) * T, Ths = long(T) * hs;
    const float scale = 1.0f / std::sqrt(float(hs));
    StreamFloats tmp(7 * n, stream);
    float *q = tmp.ptr, *k = q + n, *v = k + n, *dy = v + n;  // each [B,NH,T,hs]
    float *dq = dy + n, *dk = dq + n, *dv = dk + n;
    // 1. each head's q, k, v and dy contiguous
    split_heads(q, qkv, C3, B, T, NH, hs, stream);
    split_heads(k, qkv + C, C3, B, T, NH, hs, stream);
    split_heads(v, qkv + 2L * C, C3, B, T, NH, hs, stream);
    split_heads(dy, dout, C, B, T, NH, hs, stream);
    // 2. dP[T,T] = dy v^T, into scratch
    gemm_batched(blas, false, true, T, T, hs, 1.0f, dy, hs, Ths, v, hs, Ths, 0.0f, scratch, T, TT, heads, stream);
    // 3. dv[T,hs] = att^T dy
    gemm_batched(blas, true, false, T, hs, T, 1.0f, att, T, TT, dy, hs, Ths, 0.0f, dv, hs, Ths, heads, stream);
    // 4. softmax backward in place: scratch becomes dS (scaled, 0 above the diagonal)
    causal_softmax_backward_kernel<<<blocks_for(rows, kRowsPerBlock), kThreads, 0, stream>>>(scratch, att, rows, T,
                                                                                             scale);
    SS_CUDA_CHECK_LAUNCH("causal_softmax_backward_kernel");
    // 5. dq[T,hs] = dS k;  6. dk[T,hs] = dS^T q
    gemm_batched(blas, false, false, T, hs, T, 1.0f, scratch, T, TT, k, hs, Ths, 0.0f, dq, hs, Ths, heads, stream);
    gemm_batched(blas, true, false, T, hs, T, 1.0f, scratch, T, TT, q, hs, Ths, 0.0f, dk, hs, Ths, heads, stream);
    // 7. dqkv[B,T,3C] += [dq | dk | dv]
    merge_heads(dqkv, C3, dq, B, T, NH, hs, true, stream);
    merge_heads(dqkv + C, C3, dk, B, T, NH, hs, true, stream);
    merge_heads(dqkv + 2L * C, C3, dv, B, T, NH, hs, true, stream);
    tmp.release();
}

}  // namespace ss::cuda
