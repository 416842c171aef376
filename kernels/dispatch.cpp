// dispatch.cpp — kernels/dispatch.h: a branch per kernel on the thread's device.
//
// Each function's first line times it when profiling is on (kernels/profile.h).
//
// ON_GPU(call) runs the CUDA twin with this thread's stream (S) and cuBLAS
// handle (BLAS), waits for it, and returns; in a build without CUDA it is
// empty and only the CPU kernel below it remains.
#include "kernels/dispatch.h"

#include <cstring>

#include "core/device.h"
#include "core/dtype.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/crossentropy.h"
#include "kernels/cpu/encoder.h"
#include "kernels/cpu/gelu.h"
#include "kernels/cpu/layernorm.h"
#include "kernels/cpu/lm_head.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/residual.h"
#include "kernels/profile.h"

#ifdef SHARDSCOPE_HAVE_CUDA
#include <cuda_runtime.h>

#include <vector>

#include "kernels/cuda/adamw.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/convert.h"
#include "kernels/cuda/crossentropy.h"
#include "kernels/cuda/encoder.h"
#include "kernels/cuda/gelu.h"
#include "kernels/cuda/layernorm.h"
#include "kernels/cuda/lm_head.h"
#include "kernels/cuda/matmul.h"
#include "kernels/cuda/residual.h"
#endif

namespace ss::kern {

namespace {
thread_local bool t_bf16_matmuls = false;
}  // namespace

void set_bf16_matmuls(bool on) { t_bf16_matmuls = on; }
bool bf16_matmuls() { return t_bf16_matmuls; }

#ifdef SHARDSCOPE_HAVE_CUDA
namespace {

// This thread's cuBLAS handle (a handle is not thread-safe: one per rank thread).
struct ThreadBlas {
    cublasHandle_t handle = nullptr;
    ~ThreadBlas() {  // at thread (or process) exit: never throw from here, the runtime may be going down
        if (handle) cublasDestroy(handle);
    }
};
thread_local ThreadBlas t_blas;

bool gpu() { return current_device() == Device::cuda; }
cudaStream_t S() { return static_cast<cudaStream_t>(current_stream()); }
cublasHandle_t BLAS() {
    if (!t_blas.handle) t_blas.handle = cuda::blas_create();
    cuda::set_fp32_gemm_bf16_products(t_bf16_matmuls);
    return t_blas.handle;
}
void done() { SS_CUDA_CHECK(cudaStreamSynchronize(S())); }
// Grad::overwrite on the GPU: zero on the stream, then the kernel accumulates.
void zero_if(kern::Grad mode, float* p, long n) {
    if (mode == kern::Grad::overwrite && p != nullptr && n > 0)
        SS_CUDA_CHECK(cudaMemsetAsync(p, 0, sizeof(float) * size_t(n), S()));
}

// Token ids on the GPU: callers pass host arrays (the data loader's); @p slot
// keeps tokens and targets apart. Managed, so it is one more buffer per thread.
const int* device_ints(const int* host, long n, int slot) {
    struct Buf {
        int* p = nullptr;
        long n = 0;
        ~Buf() { device_free(Device::cuda, p, sizeof(int) * size_t(n)); }
    };
    thread_local Buf bufs[2];
    Buf& b = bufs[slot];
    if (b.n < n) {
        device_free(Device::cuda, b.p, sizeof(int) * size_t(b.n));
        b.p = static_cast<int*>(device_alloc(Device::cuda, sizeof(int) * size_t(n)));
        b.n = n;
    }
    device_copy(b.p, host, sizeof(int) * size_t(n));
    return b.p;
}

}  // namespace
#define ON_GPU(call)   \
    if (gpu()) {       \
        call;          \
        done();        \
        return;        \
    }
#else
#define ON_GPU(call)
#endif

void encoder_forward(float* out, const int* tokens, const float* wte, const float* wpe, int B, int T, int C) {
    ProfileScope scope(Kernel::encoder);
    ON_GPU(cuda::encoder_forward(out, device_ints(tokens, long(B) * T, 0), wte, wpe, B, T, C, S()));
    cpu::encoder_forward(out, tokens, wte, wpe, B, T, C);
}

void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* tokens, int B, int T, int C) {
    ProfileScope scope(Kernel::encoder);
    ON_GPU(cuda::encoder_backward(dwte, dwpe, dout, device_ints(tokens, long(B) * T, 0), B, T, C, S()));
    cpu::encoder_backward(dwte, dwpe, dout, tokens, B, T, C);
}

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int N, int C) {
    ProfileScope scope(Kernel::layernorm_fwd);
    ON_GPU(cuda::layernorm_forward(out, mean, rstd, inp, weight, bias, N, C, S()));
    cpu::layernorm_forward(out, mean, rstd, inp, weight, bias, N, C);
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int N, int C) {
    ProfileScope scope(Kernel::layernorm_bwd);
    ON_GPU(cuda::layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C, S()));
    cpu::layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
}

void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int C, int OC) {
    ProfileScope scope(Kernel::matmul_fwd, 2.0 * N * C * OC);
    ON_GPU(cuda::matmul_forward(out, inp, weight, bias, N, C, OC, BLAS(), S()));
    cpu::matmul_forward(out, inp, weight, bias, N, C, OC);
}

void matmul_forward_planar(float* out, const float* inp, const float* weight, const float* bias, int N, int C,
                           int Cq) {
    ProfileScope scope(Kernel::matmul_fwd, 2.0 * N * C * 3 * Cq);
#ifdef SHARDSCOPE_HAVE_CUDA
    if (gpu()) {  // the one product into managed memory, its rows then split on the host, where ring
                  // attention's kernels read the planes (managed memory, core/device.h)
        const size_t bytes = sizeof(float) * size_t(N) * 3 * size_t(Cq);
        float* rows = static_cast<float*>(device_alloc(Device::cuda, bytes));
        cuda::matmul_forward(rows, inp, weight, bias, N, C, 3 * Cq, BLAS(), S());
        done();
        cpu::qkv_to_planes(out, rows, N, Cq);
        device_free(Device::cuda, rows, bytes);
        return;
    }
#endif
    cpu::matmul_forward_planar(out, inp, weight, bias, N, C, Cq);
}

namespace {
// matmul_backward's two products, each under its own profile row (`bench --profile`).
void matmul_backward_dinp(float* dinp, const float* dout, const float* weight, int N, int C, int OC, Grad mode) {
    ProfileScope scope(Kernel::matmul_dinp, 2.0 * N * C * OC);
    ON_GPU((zero_if(mode, dinp, long(N) * C),
            cuda::matmul_backward(dinp, nullptr, nullptr, dout, nullptr, weight, N, C, OC, BLAS(), S())));
    cpu::matmul_backward(dinp, nullptr, nullptr, dout, nullptr, weight, N, C, OC, mode == Grad::overwrite);
}
void matmul_backward_dweight(float* dweight, float* dbias, const float* dout, const float* inp, int N, int C,
                             int OC) {
    ProfileScope scope(Kernel::matmul_dw, dweight != nullptr ? 2.0 * N * C * OC : 0.0);
    ON_GPU(cuda::matmul_backward(nullptr, dweight, dbias, dout, inp, nullptr, N, C, OC, BLAS(), S()));
    cpu::matmul_backward(nullptr, dweight, dbias, dout, inp, nullptr, N, C, OC, false);
}
}  // namespace

void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int N, int C, int OC, Grad dinp_mode) {
    // dinp first, then dweight and dbias: the order both backends keep within one call
    if (dinp != nullptr) matmul_backward_dinp(dinp, dout, weight, N, C, OC, dinp_mode);
    if (dweight != nullptr || dbias != nullptr) matmul_backward_dweight(dweight, dbias, dout, inp, N, C, OC);
}

void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH) {
    ProfileScope scope(Kernel::attention_fwd, 4.0 * B * T * T * C);
    ON_GPU(cuda::attention_forward(out, att, qkv, B, T, C, NH, BLAS(), S()));
    cpu::attention_forward(out, att, qkv, B, T, C, NH);
}

void attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv, const float* att, int B,
                        int T, int C, int NH, Grad mode) {
    ProfileScope scope(Kernel::attention_bwd, 8.0 * B * T * T * C);
    ON_GPU((zero_if(mode, dqkv, 3L * B * T * C),
            cuda::attention_backward(dqkv, scratch, dout, qkv, att, B, T, C, NH, BLAS(), S())));
    cpu::attention_backward(dqkv, scratch, dout, qkv, att, B, T, C, NH, mode == Grad::overwrite);
}

void gelu_forward(float* out, const float* inp, long n) {
    ProfileScope scope(Kernel::gelu_fwd);
    ON_GPU(cuda::gelu_forward(out, inp, n, S()));
    cpu::gelu_forward(out, inp, n);
}

void gelu_backward(float* dinp, const float* inp, const float* dout, long n, Grad mode) {
    ProfileScope scope(Kernel::gelu_bwd);
    ON_GPU((zero_if(mode, dinp, n), cuda::gelu_backward(dinp, inp, dout, n, S())));
    cpu::gelu_backward(dinp, inp, dout, n, mode == Grad::overwrite);
}

void add_inplace(float* y, const float* x, long n) {
    ProfileScope scope(Kernel::residual);
    ON_GPU(cuda::add_inplace(y, x, n, S()));
    cpu::add_inplace(y, x, n);
}

void add_bias(float* out, const float* bias, int N, int C) {
    ProfileScope scope(Kernel::residual);
    ON_GPU(cuda::add_bias(out, bias, N, C, S()));
    cpu::add_bias(out, bias, N, C);
}

void add_bias_residual(float* out, const float* bias, const float* x, int N, int C) {
    ProfileScope scope(Kernel::residual);
    ON_GPU((cuda::add_bias(out, bias, N, C, S()), cuda::add_inplace(out, x, long(N) * C, S())));
    cpu::add_bias_residual(out, bias, x, N, C);
}

void lm_head_forward(float* logits, const float* x, const float* wte, int N, int C, int V) {
    ProfileScope scope(Kernel::lm_head_fwd, 2.0 * N * C * V);
    ON_GPU(cuda::lm_head_forward(logits, x, wte, N, C, V, BLAS(), S()));
    cpu::lm_head_forward(logits, x, wte, N, C, V);
}

void lm_head_backward(float* dx, float* dwte, const float* dlogits, const float* x, const float* wte, int N, int C,
                      int V) {
    ProfileScope scope(Kernel::lm_head_bwd, 2.0 * N * C * V * ((dx != nullptr) + (dwte != nullptr)));
    ON_GPU(cuda::lm_head_backward(dx, dwte, dlogits, x, wte, N, C, V, BLAS(), S()));
    cpu::lm_head_backward(dx, dwte, dlogits, x, wte, N, C, V);
}

float crossentropy_forward(float* losses, float* probs, const float* logits, const int* targets, int N, int V,
                           int Vp) {
    ProfileScope scope(Kernel::crossentropy);
#ifdef SHARDSCOPE_HAVE_CUDA
    if (gpu()) {  // the kernel writes each row's loss; their mean is read on the host (managed memory)
        cuda::crossentropy_forward(losses, probs, logits, device_ints(targets, N, 1), N, V, Vp, S());
        done();
        double sum = 0.0;
        for (int i = 0; i < N; ++i) sum += losses[i];
        return N > 0 ? float(sum / N) : 0.0f;
    }
#endif
    return cpu::crossentropy_forward(losses, probs, logits, targets, N, V, Vp);
}

void crossentropy_backward(float* dlogits, const float* probs, const int* targets, float dloss, int N, int V,
                           int Vp, Grad mode) {
    ProfileScope scope(Kernel::crossentropy);
    ON_GPU((zero_if(mode, dlogits, long(N) * Vp),
            cuda::crossentropy_backward(dlogits, probs, device_ints(targets, N, 1), dloss, N, V, Vp, S())));
    cpu::crossentropy_backward(dlogits, probs, targets, dloss, N, V, Vp, mode == Grad::overwrite);
}

void f32_to_bf16(uint16_t* dst, const float* src, size_t n) {
    ProfileScope scope(Kernel::convert);
    ON_GPU(cuda::f32_to_bf16(dst, src, long(n), S()));
    ss::f32_to_bf16(dst, src, n);
}

void bf16_to_f32(float* dst, const uint16_t* src, size_t n) {
    ProfileScope scope(Kernel::convert);
    ON_GPU(cuda::bf16_to_f32(dst, src, long(n), S()));
    ss::bf16_to_f32(dst, src, n);
}

void adamw_update(float* params, const float* grads, float* m, float* v, long n, int t, const cpu::AdamWParams& hp) {
    ProfileScope scope(Kernel::adamw);
    ON_GPU(cuda::adamw_update(params, grads, m, v, n, t, hp, S()));
    cpu::adamw_update(params, grads, m, v, n, t, hp);
}

}  // namespace ss::kern
