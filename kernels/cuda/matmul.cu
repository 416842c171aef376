// matmul.cu — the linear layer on the GPU: cublasGemmEx, and two small kernels for the bias.
//
// Row-major on a column-major library. cuBLAS follows Fortran BLAS: a matrix
// is stored column by column. A row-major X[r, c] with leading dimension ld
// is, byte for byte, the column-major matrix X^T with the same ld. So the
// row-major product C = op(A) op(B) is computed as the column-major product
//
//   C^T = op(B)^T op(A)^T          (swap A and B, swap M and N)
//
// and gemm() below takes exactly cblas_sgemm's row-major arguments, so each
// call here reads as the CPU twin's (kernels/cpu/matmul.cpp):
//
//   forward    out[N,OC]  = inp[N,C] W[C,OC] (+ b)    gemm(N, N, N, OC, C,  inp, C,  W, OC)
//   backward   dinp[N,C] += dout[N,OC] W^T            gemm(N, T, N, C, OC,  dout, OC, W, OC)
//              dW[C,OC]  += inp^T dout                gemm(T, N, C, OC, N,  inp, C,  dout, OC)
//
// Precision. fp32 inputs use CUBLAS_COMPUTE_32F_PEDANTIC: plain fp32 FFMA
// products and sums. With CUBLAS_COMPUTE_32F alone, cuBLAS may still take
// TF32 tensor cores (10-bit mantissa products) when the handle's math mode or
// the NVIDIA_TF32_OVERRIDE environment allows it, or fp32 emulated with bf16
// (cuBLAS 12.9+, CUBLAS_EMULATION_STRATEGY); pedantic forbids both, so the
// fp32 path is the CPU's sgemm up to the order of the adds (unless the thread
// asked for bf16 products: set_fp32_gemm_bf16_products, CUBLAS_COMPUTE_32F_FAST_16BF
// rounds the fp32 inputs to bf16 for the tensor cores). bf16 inputs use
// CUBLAS_COMPUTE_32F: tensor-core products of bf16 (exact in fp32) summed in
// fp32, rounded once to the output type.
//
// Bias: the CPU twin fills out with b and calls sgemm with beta = 1; so does
// this file (fill_rows_kernel), so the sum x W + b is rounded once, which
// matters in bf16. db is a column sum of dout: each thread takes one column
// and a chunk of rows, and the chunks meet with atomicAdd (as layernorm.cu).
#include "kernels/cuda/matmul.h"

#include <cuda_bf16.h>

#include "core/check.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/reduce.cuh"

namespace ss::cuda {

namespace {

constexpr int kRowsPerChunk = 64;  // rows summed by one thread of the db kernel

cudaDataType_t cuda_type(DType dt) {
    SS_CHECK(dt == DType::f32 || dt == DType::bf16, "gemm: dtype " << dtype_name(dt) << " is not supported; "
                                                                    << "use fp32 or bf16");
    return dt == DType::f32 ? CUDA_R_32F : CUDA_R_16BF;
}

__device__ inline float to_float(float x) { return x; }
__device__ inline float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

// out[n, o] = bias[o] for every row n
template <typename T>
__global__ void fill_rows_kernel(T* out, const T* bias, int N, int OC) {
    const long i = blockIdx.x * long(blockDim.x) + threadIdx.x;
    if (i < long(N) * OC) out[i] = bias[i % OC];
}

// grid (ceil(OC / kThreads), ceil(N / kRowsPerChunk)): dbias[o] += sum over a chunk of rows of dout[n, o]
template <typename T>
__global__ void bias_backward_kernel(float* dbias, const T* dout, int N, int OC) {
    const int o = blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= OC) return;
    const long n0 = long(blockIdx.y) * kRowsPerChunk;
    const long n1 = n0 + kRowsPerChunk < N ? n0 + kRowsPerChunk : N;
    float acc = 0.0f;
    for (long n = n0; n < n1; n++) acc += to_float(dout[n * OC + o]);
    atomicAdd(&dbias[o], acc);
}

template <typename T>
void fill_rows(T* out, const T* bias, int N, int OC, cudaStream_t stream) {
    fill_rows_kernel<<<blocks_for(long(N) * OC), kThreads, 0, stream>>>(out, bias, N, OC);
    SS_CUDA_CHECK_LAUNCH("fill_rows_kernel");
}

template <typename T>
void bias_backward(float* dbias, const T* dout, int N, int OC, cudaStream_t stream) {
    const dim3 grid(blocks_for(OC), blocks_for(N, kRowsPerChunk));
    bias_backward_kernel<<<grid, kThreads, 0, stream>>>(dbias, dout, N, OC);
    SS_CUDA_CHECK_LAUNCH("bias_backward_kernel");
}

}  // namespace

namespace {
thread_local bool t_fp32_bf16_products = false;
}  // namespace

void set_fp32_gemm_bf16_products(bool on) { t_fp32_bf16_products = on; }
bool fp32_gemm_bf16_products() { return t_fp32_bf16_products; }

cublasHandle_t blas_create() {
    cublasHandle_t blas = nullptr;
    SS_CUBLAS_CHECK(cublasCreate(&blas));
    SS_CUBLAS_CHECK(cublasSetMathMode(blas, CUBLAS_DEFAULT_MATH));
    return blas;
}

void blas_destroy(cublasHandle_t blas) {
    if (blas != nullptr) SS_CUBLAS_CHECK(cublasDestroy(blas));
}

void gemm(cublasHandle_t blas, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const void* A, long lda,
          const void* B, long ldb, float beta, void* Cm, long ldc, DType ab_type, DType c_type, cudaStream_t stream) {
    if (M == 0 || N == 0) return;
    const cudaDataType_t ab = cuda_type(ab_type), c = cuda_type(c_type);
    const cublasComputeType_t compute = ab_type != DType::f32  ? CUBLAS_COMPUTE_32F
                                        : t_fp32_bf16_products ? CUBLAS_COMPUTE_32F_FAST_16BF
                                                               : CUBLAS_COMPUTE_32F_PEDANTIC;
    SS_CUBLAS_CHECK(cublasSetStream(blas, stream));
    // row-major Cm = op(A) op(B)  <=>  column-major Cm^T = op(B)^T op(A)^T: B first, N and M swapped
    SS_CUBLAS_CHECK(cublasGemmEx(blas, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, N, M,
                                 K, &alpha, B, ab, int(ldb), A, ab, int(lda), &beta, Cm, c, int(ldc), compute,
                                 CUBLAS_GEMM_DEFAULT));
}

void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int C, int OC,
                    cublasHandle_t blas, cudaStream_t stream) {
    if (N == 0 || OC == 0) return;
    float beta = 0.0f;
    if (bias != nullptr) {  // out starts as the bias in every row; the GEMM adds x W to it
        fill_rows(out, bias, N, OC, stream);
        beta = 1.0f;
    }
    gemm(blas, false, false, N, OC, C, 1.0f, inp, C, weight, OC, beta, out, OC, DType::f32, DType::f32, stream);
}

void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int N, int C, int OC, cublasHandle_t blas, cudaStream_t stream) {
    if (N == 0) return;
    if (dinp != nullptr)  // dinp[N,C] += dout[N,OC] @ W^T
        gemm(blas, false, true, N, C, OC, 1.0f, dout, OC, weight, OC, 1.0f, dinp, C, DType::f32, DType::f32, stream);
    if (dweight != nullptr)  // dW[C,OC] += inp^T @ dout
        gemm(blas, true, false, C, OC, N, 1.0f, inp, C, dout, OC, 1.0f, dweight, OC, DType::f32, DType::f32, stream);
    if (dbias != nullptr) bias_backward(dbias, dout, N, OC, stream);
}

void matmul_forward_bf16(uint16_t* out, const uint16_t* inp, const uint16_t* weight, const uint16_t* bias, int N,
                         int C, int OC, cublasHandle_t blas, cudaStream_t stream) {
    if (N == 0 || OC == 0) return;
    float beta = 0.0f;
    if (bias != nullptr) {
        fill_rows(reinterpret_cast<__nv_bfloat16*>(out), reinterpret_cast<const __nv_bfloat16*>(bias), N, OC, stream);
        beta = 1.0f;
    }
    gemm(blas, false, false, N, OC, C, 1.0f, inp, C, weight, OC, beta, out, OC, DType::bf16, DType::bf16, stream);
}

void matmul_backward_bf16(uint16_t* dinp, float* dweight, float* dbias, const uint16_t* dout, const uint16_t* inp,
                          const uint16_t* weight, int N, int C, int OC, cublasHandle_t blas, cudaStream_t stream) {
    if (N == 0) return;
    if (dinp != nullptr)  // bf16 += bf16 @ bf16^T, summed in fp32 and rounded once
        gemm(blas, false, true, N, C, OC, 1.0f, dout, OC, weight, OC, 1.0f, dinp, C, DType::bf16, DType::bf16, stream);
    if (dweight != nullptr)  // fp32 += bf16^T @ bf16
        gemm(blas, true, false, C, OC, N, 1.0f, inp, C, dout, OC, 1.0f, dweight, OC, DType::bf16, DType::f32, stream);
    if (dbias != nullptr) bias_backward(dbias, reinterpret_cast<const __nv_bfloat16*>(dout), N, OC, stream);
}

}  // namespace ss::cuda
