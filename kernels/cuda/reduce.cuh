// reduce.cuh — sums and maxima across the threads of a warp or a block, for
// the row kernels (layernorm, attention's softmax, cross-entropy).
//
// A warp is 32 threads that run in lockstep. __shfl_xor_sync(mask, v, k) hands
// each lane the v of lane (lane XOR k), so five exchanges (k = 16, 8, 4, 2, 1)
// leave every lane holding the sum of all 32 — a butterfly, no shared memory:
//
//   k=16: lane 0 += lane 16, lane 1 += lane 17, ...    (pairs 16 apart)
//   k=8:  lane 0 += lane 8, ...                        ... after k=1, all lanes agree
//
// A block of up to 1024 threads (32 warps) reduces each warp, writes the 32
// partial results to shared memory, and lets warp 0 reduce those. The order
// of the float adds differs from the CPU kernels' 16 lanes (kernels/cpu/simd.h),
// so results agree to rounding, not bit for bit.
//
// Device code only: included by the .cu files, not by the C++ callers.
#pragma once

#include <cuda_runtime.h>

namespace ss::cuda {

/// Threads per block of the elementwise kernels.
constexpr int kThreads = 256;

/// Blocks of @p threads threads that cover @p n elements, one each.
inline unsigned blocks_for(long n, int threads = kThreads) { return unsigned((n + threads - 1) / threads); }

/// Sum of v over the 32 lanes of this warp, returned to every lane.
__device__ inline float warp_sum(float v) {
    for (int k = 16; k > 0; k >>= 1) v += __shfl_xor_sync(0xffffffffu, v, k);
    return v;
}

/// Max of v over the 32 lanes of this warp, returned to every lane (a NaN wins, as in simd.h's lane_max).
__device__ inline float warp_max(float v) {
    for (int k = 16; k > 0; k >>= 1) {
        const float o = __shfl_xor_sync(0xffffffffu, v, k);
        v = (o > v || o != o) ? o : v;
    }
    return v;
}

/// Sum of v over the whole block (blockDim.x a multiple of 32), returned to every thread.
/// @p shared: 32 floats of shared memory, free for this call.
__device__ inline float block_sum(float v, float* shared) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    v = warp_sum(v);
    __syncthreads();  // shared may still be read by a previous call
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    v = lane < warps ? shared[lane] : 0.0f;
    return warp_sum(v);
}

/// Max of v over the whole block (blockDim.x a multiple of 32), returned to every thread.
/// @p shared: 32 floats of shared memory, free for this call.
__device__ inline float block_max(float v, float* shared) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    v = lane < warps ? shared[lane] : -INFINITY;
    return warp_max(v);
}

}  // namespace ss::cuda
