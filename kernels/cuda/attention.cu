// attention.cu — causal attention on the GPU, the straightforward way (twin of
// kernels/cpu/attention.cpp, whose header derives the formulas).
//
// For one (b, h), Q, K, V are [T, hs] views into qkv with row stride 3C:
//
//   forward    S = Q K^T / sqrt(hs),  P = softmax_row(S + causal mask),  O = P V
//   backward   dP = dO V^T,  dS = P (dP - rowsum(P dP)) / sqrt(hs)
//              dQ += dS K,   dK += dS^T Q,   dV += P^T dO
//
// The naive version, labelled as such: every product is a loop in a thread,
// reading global memory (through the caches), and P is written to memory as
// the CPU kernel writes it (B*NH*T*T floats). It is here to be read and to be
// checked against the CPU twin. The fast version (not written yet) is
// FlashAttention (Dao et al. 2022): tiles of Q, K, V in shared memory, the
// online softmax (kernels/cpu/attention_block.h), P never stored.
//
// Who computes what (one row = one (b, h, t)):
//   scores_softmax_kernel   one warp per row: lane j takes keys s = j, j+32, ... <= t,
//                           the row's max and sum by warp butterflies (reduce.cuh)
//   weighted_values_kernel  one thread per out[b, t, c]:  sum over s <= t of P[t, s] V[s, c]
//   softmax_backward_kernel one warp per row: dP[t, s] = dO_t . V_s, then dS in place in scratch
//   dq_kernel               one thread per dQ[b, t, c]:  sum over s <= t of dS[t, s] K[s, c]
//   dkv_kernel              one thread per (b, s, c):    dK += sum over t >= s of dS[t, s] Q[t, c]
//                                                         dV += sum over t >= s of P[t, s] dO[t, c]
// Each element of dqkv has exactly one writer, so there are no atomics and the
// result does not depend on scheduling.
#include "kernels/cuda/attention.h"

#include <cmath>

#include "core/check.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/reduce.cuh"

namespace ss::cuda {

namespace {

constexpr int kRowsPerBlock = kThreads / 32;  // one warp per (b, h, t) row

// row = (b*NH + h)*T + t; P's row is att + row*T
__global__ void scores_softmax_kernel(float* att, const float* qkv, int B, int T, int C, int NH, float scale) {
    const int lane = threadIdx.x % 32;
    const long row = blockIdx.x * long(kRowsPerBlock) + threadIdx.x / 32;
    if (row >= long(B) * NH * T) return;
    const int hs = C / NH;
    const int t = int(row % T);
    const int h = int(row / T % NH);
    const long b = row / T / NH;
    const long C3 = 3L * C;
    const float* q = qkv + (b * T + t) * C3 + long(h) * hs;
    float* p = att + row * T;
    // 1. scores s <= t into p, and their max
    float rmax = -INFINITY;
    for (int s = lane; s <= t; s += 32) {
        const float* k = qkv + (b * T + s) * C3 + C + long(h) * hs;
        float dot = 0.0f;
        for (int i = 0; i < hs; i++) dot += q[i] * k[i];
        p[s] = dot * scale;
        rmax = (p[s] > rmax || p[s] != p[s]) ? p[s] : rmax;
    }
    rmax = warp_max(rmax);
    // 2. exponentials and their sum (each lane rereads only what it wrote)
    float sum = 0.0f;
    for (int s = lane; s <= t; s += 32) {
        p[s] = expf(p[s] - rmax);
        sum += p[s];
    }
    const float inv_sum = 1.0f / warp_sum(sum);
    // 3. normalise; the masked future is 0, as the CPU stores it
    for (int s = lane; s < T; s += 32) p[s] = s <= t ? p[s] * inv_sum : 0.0f;
}

// one thread per out element i = (b*T + t)*C + c, c = h*hs + j
__global__ void weighted_values_kernel(float* out, const float* att, const float* qkv, int B, int T, int C, int NH) {
    const long i = blockIdx.x * long(blockDim.x) + threadIdx.x;
    if (i >= long(B) * T * C) return;
    const int hs = C / NH;
    const int c = int(i % C);
    const int t = int(i / C % T);
    const long b = i / C / T;
    const int h = c / hs;
    const long C3 = 3L * C;
    const float* p = att + ((b * NH + h) * T + t) * T;
    const float* v = qkv + b * T * C3 + 2L * C + c;  // V[s, c] = v[s * C3]
    float acc = 0.0f;
    for (int s = 0; s <= t; s++) acc += p[s] * v[s * C3];
    out[i] = acc;
}

__global__ void softmax_backward_kernel(float* dS, const float* dout, const float* qkv, const float* att, int B,
                                        int T, int C, int NH, float scale) {
    const int lane = threadIdx.x % 32;
    const long row = blockIdx.x * long(kRowsPerBlock) + threadIdx.x / 32;
    if (row >= long(B) * NH * T) return;
    const int hs = C / NH;
    const int t = int(row % T);
    const int h = int(row / T % NH);
    const long b = row / T / NH;
    const long C3 = 3L * C;
    const float* dO = dout + (b * T + t) * C + long(h) * hs;
    const float* p = att + row * T;
    float* d = dS + row * T;
    // 1. dP[s] = dO_t . V_s into d, and sum_s P dP
    float pdp = 0.0f;
    for (int s = lane; s <= t; s += 32) {
        const float* v = qkv + (b * T + s) * C3 + 2L * C + long(h) * hs;
        float dot = 0.0f;
        for (int i = 0; i < hs; i++) dot += dO[i] * v[i];
        d[s] = dot;
        pdp += p[s] * dot;
    }
    pdp = warp_sum(pdp);
    // 2. dS = scale P (dP - pdp); 0 above the diagonal
    for (int s = lane; s < T; s += 32) d[s] = s <= t ? scale * p[s] * (d[s] - pdp) : 0.0f;
}

// one thread per dQ element i = (b*T + t)*C + c
__global__ void dq_kernel(float* dqkv, const float* dS, const float* qkv, int B, int T, int C, int NH) {
    const long i = blockIdx.x * long(blockDim.x) + threadIdx.x;
    if (i >= long(B) * T * C) return;
    const int hs = C / NH;
    const int c = int(i % C);
    const int t = int(i / C % T);
    const long b = i / C / T;
    const int h = c / hs;
    const long C3 = 3L * C;
    const float* d = dS + ((b * NH + h) * T + t) * T;
    const float* k = qkv + b * T * C3 + C + c;  // K[s, c] = k[s * C3]
    float acc = 0.0f;
    for (int s = 0; s <= t; s++) acc += d[s] * k[s * C3];
    dqkv[(b * T + t) * C3 + c] += acc;
}

// one thread per key position and column, i = (b*T + s)*C + c
__global__ void dkv_kernel(float* dqkv, const float* dS, const float* dout, const float* qkv, const float* att, int B,
                           int T, int C, int NH) {
    const long i = blockIdx.x * long(blockDim.x) + threadIdx.x;
    if (i >= long(B) * T * C) return;
    const int hs = C / NH;
    const int c = int(i % C);
    const int s = int(i / C % T);
    const long b = i / C / T;
    const int h = c / hs;
    const long C3 = 3L * C;
    const long head = (b * NH + h) * T * T;  // P and dS of (b, h); column s is [t*T + s]
    const float* q = qkv + b * T * C3 + c;   // Q[t, c] = q[t * C3]
    const float* dO = dout + b * T * C + c;  // dO[t, c] = dO[t * C]
    float dk = 0.0f, dv = 0.0f;
    for (int t = s; t < T; t++) {
        dk += dS[head + long(t) * T + s] * q[t * C3];
        dv += att[head + long(t) * T + s] * dO[long(t) * C];
    }
    dqkv[(b * T + s) * C3 + C + c] += dk;
    dqkv[(b * T + s) * C3 + 2L * C + c] += dv;
}

void check_shape(int C, int NH) {
    SS_CHECK(NH > 0 && C % NH == 0, "attention: C=" << C << " is not divisible by NH=" << NH
                                                    << "; the head size C/NH must be a whole number");
}

}  // namespace

void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH, cudaStream_t stream) {
    check_shape(C, NH);
    const long rows = long(B) * NH * T;
    if (rows == 0) return;
    const float scale = 1.0f / std::sqrt(float(C / NH));  // as the CPU computes it
    scores_softmax_kernel<<<blocks_for(rows, kRowsPerBlock), kThreads, 0, stream>>>(att, qkv, B, T, C, NH, scale);
    SS_CUDA_CHECK_LAUNCH("scores_softmax_kernel");
    weighted_values_kernel<<<blocks_for(long(B) * T * C), kThreads, 0, stream>>>(out, att, qkv, B, T, C, NH);
    SS_CUDA_CHECK_LAUNCH("weighted_values_kernel");
}

void attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv, const float* att, int B,
                        int T, int C, int NH, cudaStream_t stream) {
    check_shape(C, NH);
    const long rows = long(B) * NH * T;
    if (rows == 0) return;
    const float scale = 1.0f / std::sqrt(float(C / NH));
    softmax_backward_kernel<<<blocks_for(rows, kRowsPerBlock), kThreads, 0, stream>>>(scratch, dout, qkv, att, B, T,
                                                                                       C, NH, scale);
    SS_CUDA_CHECK_LAUNCH("softmax_backward_kernel");
    const unsigned blocks = blocks_for(long(B) * T * C);
    dq_kernel<<<blocks, kThreads, 0, stream>>>(dqkv, scratch, qkv, B, T, C, NH);
    SS_CUDA_CHECK_LAUNCH("dq_kernel");
    dkv_kernel<<<blocks, kThreads, 0, stream>>>(dqkv, scratch, dout, qkv, att, B, T, C, NH);
    SS_CUDA_CHECK_LAUNCH("dkv_kernel");
}

}  // namespace ss::cuda
