// crossentropy.cu — softmax cross-entropy on the GPU (twin of kernels/cpu/crossentropy.cpp,
// which derives the formulas).
//
// Forward: one block of kRowThreads threads per row of Vp logits, of which the
// first V are words (V = 50257 for GPT-2: ~100 per thread; the padding columns
// V..Vp-1 get probability 0). Three passes over the V words, each thread taking
// v = tid, tid + kRowThreads, ...:
//
//   1. zmax = max_v z_v                      (block_max, reduce.cuh)
//   2. p_v = e^(z_v - zmax),  S = sum_v p_v  (block_sum)
//   3. p_v /= S;  loss = log S - (z_y - zmax)   (log-sum-exp form, finite when p_y underflows)
//
// Backward: one thread per element of the V word columns of dlogits, in the
// CPU's order of operations: dz += p dloss, then dz -= dloss at the target.
// The padding columns are not touched (no gradient).
#include "kernels/cuda/crossentropy.h"

#include "kernels/cuda/check.h"
#include "kernels/cuda/reduce.cuh"

namespace ss::cuda {

namespace {

constexpr int kRowThreads = 512;

__global__ void crossentropy_forward_kernel(float* losses, float* probs, const float* logits, const int* targets,
                                            int V, int Vp) {
    __shared__ float shared[32];
    const long n = blockIdx.x;
    const float* z = logits + n * Vp;
    float* p = probs + n * Vp;
    float zmax = -INFINITY;
    for (int v = threadIdx.x; v < V; v += blockDim.x) zmax = (z[v] > zmax || z[v] != z[v]) ? z[v] : zmax;
    zmax = block_max(zmax, shared);
    float sum = 0.0f;
    for (int v = threadIdx.x; v < V; v += blockDim.x) {
        p[v] = expf(z[v] - zmax);
        sum += p[v];
    }
    sum = block_sum(sum, shared);
    const float inv_sum = 1.0f / sum;
    for (int v = threadIdx.x; v < V; v += blockDim.x) p[v] *= inv_sum;
    for (int v = V + threadIdx.x; v < Vp; v += blockDim.x) p[v] = 0.0f;  // padding: never predicted
    if (threadIdx.x == 0) {
        const int y = targets[n];
        losses[n] = (y >= 0 && y < V) ? logf(sum) - (z[y] - zmax) : NAN;
    }
}

__global__ void crossentropy_backward_kernel(float* dlogits, const float* probs, const int* targets, float dloss,
                                             int N, int V, int Vp) {
    const long i = blockIdx.x * long(blockDim.x) + threadIdx.x;  // over the N x V word columns
    if (i >= long(N) * V) return;
    const long n = i / V;
    const int v = int(i % V);
    const long at = n * Vp + v;
    float d = dlogits[at] + probs[at] * dloss;
    if (v == targets[n]) d -= dloss;  // the -[v == y] term
    dlogits[at] = d;
}

}  // namespace

void crossentropy_forward(float* losses, float* probs, const float* logits, const int* targets, int N, int V,
                          int Vp, cudaStream_t stream) {
    if (N == 0) return;
    crossentropy_forward_kernel<<<unsigned(N), kRowThreads, 0, stream>>>(losses, probs, logits, targets, V, Vp);
    SS_CUDA_CHECK_LAUNCH("crossentropy_forward_kernel");
}

void crossentropy_backward(float* dlogits, const float* probs, const int* targets, float dloss, int N, int V,
                           int Vp, cudaStream_t stream) {
    const long n = long(N) * V;
    if (n == 0) return;
    crossentropy_backward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dlogits, probs, targets, dloss, N, V, Vp);
    SS_CUDA_CHECK_LAUNCH("crossentropy_backward_kernel");
}

}  // namespace ss::cuda
