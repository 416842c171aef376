// check.h — every CUDA and cuBLAS call goes through a check that names it.
//
//   SS_CUDA_CHECK(cudaMalloc(&p, bytes));
//   SS_CUBLAS_CHECK(cublasGemmEx(...));
//   my_kernel<<<grid, block, 0, stream>>>(...);
//   SS_CUDA_CHECK_LAUNCH("my_kernel");
//
// A failure throws ss::Error (core/check.h) with the call as written, the
// error's name and text, the file and line, and the rank when the caller set
// one, e.g.
//
//   CUDA error (rank 3) at kernels/cuda/matmul.cu:88: cudaMalloc(&p, bytes)
//   returned cudaErrorMemoryAllocation (out of memory)
//
// The rank is thread-local: the threads backend runs each rank as a thread of
// one process, so each rank thread calls set_current_rank() once and every
// check on that thread names it. Kernel launches return nothing; a bad launch
// (too many threads, no device) shows at the next cudaGetLastError, which
// SS_CUDA_CHECK_LAUNCH calls right after the launch so that the error names
// the kernel. Errors inside a running kernel (an illegal address) surface at
// the next synchronising call, which is the one the message will name.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace ss::cuda {

/// Sets the rank that this thread's CUDA errors name (-1: none, the default).
void set_current_rank(int rank);
/// The rank set on this thread by set_current_rank, or -1.
int current_rank();

/// Throws ss::Error for a failed CUDA runtime call @p call (its text) at file:line.
[[noreturn]] void cuda_fail(cudaError_t err, const char* call, const char* file, int line);
/// Throws ss::Error for a failed cuBLAS call @p call (its text) at file:line.
[[noreturn]] void cublas_fail(cublasStatus_t status, const char* call, const char* file, int line);

}  // namespace ss::cuda

/// Runs a CUDA runtime call; throws ss::Error naming it, the file, line and rank unless it returns cudaSuccess.
#define SS_CUDA_CHECK(call)                                                            \
    do {                                                                               \
        const cudaError_t ss_cuda_err_ = (call);                                       \
        if (ss_cuda_err_ != cudaSuccess) ::ss::cuda::cuda_fail(ss_cuda_err_, #call, __FILE__, __LINE__); \
    } while (0)

/// Checks the launch just made of kernel @p name (cudaGetLastError); throws ss::Error naming the kernel.
#define SS_CUDA_CHECK_LAUNCH(name)                                                     \
    do {                                                                               \
        const cudaError_t ss_cuda_err_ = cudaGetLastError();                           \
        if (ss_cuda_err_ != cudaSuccess)                                               \
            ::ss::cuda::cuda_fail(ss_cuda_err_, "launch of " name, __FILE__, __LINE__); \
    } while (0)

/// Runs a cuBLAS call; throws ss::Error naming it, the file, line and rank unless it returns CUBLAS_STATUS_SUCCESS.
#define SS_CUBLAS_CHECK(call)                                                          \
    do {                                                                               \
        const cublasStatus_t ss_cublas_st_ = (call);                                   \
        if (ss_cublas_st_ != CUBLAS_STATUS_SUCCESS)                                    \
            ::ss::cuda::cublas_fail(ss_cublas_st_, #call, __FILE__, __LINE__);         \
    } while (0)
