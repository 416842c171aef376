// matmul.cpp — the linear layer y = x W + b on the CPU: register tiles (gemm.h), and plain loops beside them.
//
// N = rows (tokens), C = input features, OC = output features; W is [C, OC]
// (HF Conv1D layout), every matrix row-major. With A^T meaning "read A
// transposed" (a MatrixView with its strides swapped, nothing is copied):
//
//   forward    out[N,OC]  = inp[N,C] W[C,OC]          + b      gemm, start = the bias row
//   backward   dinp[N,C]  += dout[N,OC] W^T[OC,C]              gemm, start = add
//              dW[C,OC]   += inp^T[C,N] dout[N,OC]             gemm, start = add
//              db[OC]     += sum_n dout[n,:]                    taken while dW's gemm packs dout
//
// "+=": gradients accumulate over micro-batches and over uses. Until
// 2026-12-02 these were OpenBLAS sgemm calls; the tiles run at the same rate
// as its Haswell kernel with 8-float vectors (AVX2) and twice it with 16
// (AVX-512), and need no pass over C for the bias or the "+=" (measured in
// docs/performance.md, "The linear layers on register tiles"). A build without
// AVX2 (the sanitizer builds: RelWithDebInfo has no -march) still calls
// sgemm, whose kernels OpenBLAS picks at run time (kMatmulOnTiles, matmul.h).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")  // vectorize the bias loops at -O2; see simd.h
#endif

#include "kernels/cpu/matmul.h"

#include <cblas.h>

#include <algorithm>

#include "kernels/cpu/gemm.h"

namespace ss::cpu {

void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int C, int OC) {
    if (N == 0 || OC == 0) return;
    if (kMatmulOnTiles) {  // out = bias + inp W: the tiles start from the bias row, no pass fills out first
        gemm(N, OC, C, {inp, C, 1}, {weight, OC, 1}, out, OC, bias != nullptr ? TileStart::row : TileStart::zero,
             bias);
        return;
    }
    float beta = 0.0f;
    if (bias != nullptr) {  // out starts as the bias in every row; sgemm adds x W to it
        for (long n = 0; n < N; n++)
            for (int o = 0; o < OC; o++) out[n * OC + o] = bias[o];
        beta = 1.0f;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, OC, C, 1.0f, inp, C, weight, OC, beta, out, OC);
}

void matmul_forward_planar(float* out, const float* inp, const float* weight, const float* bias, int N, int C,
                           int Cq) {
    if (N == 0 || Cq == 0) return;
    const int OC = 3 * Cq;
    float* kv = out + long(N) * Cq;
    const float* kv_bias = bias != nullptr ? bias + Cq : nullptr;
    if (kMatmulOnTiles) {  // W's columns read in place through their row stride OC
        const TileStart start = bias != nullptr ? TileStart::row : TileStart::zero;
        gemm(N, Cq, C, {inp, C, 1}, {weight, OC, 1}, out, Cq, start, bias);
        gemm(N, 2 * Cq, C, {inp, C, 1}, {weight + Cq, OC, 1}, kv, 2 * Cq, start, kv_bias);
        return;
    }
    float beta = 0.0f;
    if (bias != nullptr) {
        for (long n = 0; n < N; n++) {
            for (int o = 0; o < Cq; o++) out[n * Cq + o] = bias[o];
            for (int o = 0; o < 2 * Cq; o++) kv[n * 2 * Cq + o] = kv_bias[o];
        }
        beta = 1.0f;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, Cq, C, 1.0f, inp, C, weight, OC, beta, out, Cq);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, 2 * Cq, C, 1.0f, inp, C, weight + Cq, OC, beta, kv,
                2 * Cq);
}

void qkv_to_planes(float* planes, const float* qkv, int N, int Cq) {
    float* kv = planes + long(N) * Cq;
    for (long n = 0; n < N; ++n) {
        const float* row = qkv + n * 3 * Cq;
        std::copy(row, row + Cq, planes + n * Cq);
        std::copy(row + Cq, row + 3 * Cq, kv + n * 2 * Cq);
    }
}

void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int N, int C, int OC, bool dinp_overwrite) {
    if (N == 0) return;
    if (dinp != nullptr) {  // dinp[N,C] += dout[N,OC] W^T (or =): W read by columns
        if (kMatmulOnTiles)
            gemm(N, C, OC, {dout, OC, 1}, {weight, 1, OC}, dinp, C,
                 dinp_overwrite ? TileStart::zero : TileStart::add);
        else
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, C, OC, 1.0f, dout, OC, weight, OC,
                        dinp_overwrite ? 0.0f : 1.0f, dinp, C);
    }
    if (dweight != nullptr) {  // dW[C,OC] += inp^T dout: inp read by columns
        if (kMatmulOnTiles) {  // db += dout's column sums, taken as the tiles pack dout
            gemm(C, OC, N, {inp, 1, C}, {dout, OC, 1}, dweight, OC, TileStart::add, nullptr, dbias);
            dbias = nullptr;
        } else {
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, C, OC, N, 1.0f, inp, C, dout, OC, 1.0f, dweight, OC);
        }
    }
    if (dbias != nullptr)  // row by row, so the inner loop runs along contiguous memory
        for (long n = 0; n < N; n++)
            for (int o = 0; o < OC; o++) dbias[o] += dout[n * OC + o];
}

// ---- plain loops, for the tests and for reading ---------------------------------
// Each output element is one dot product, accumulated in double so the
// reference is the more accurate side when the tests compare it with the tiles.

void matmul_forward_reference(float* out, const float* inp, const float* weight, const float* bias, int N, int C,
                              int OC) {
    for (long n = 0; n < N; n++)
        for (int o = 0; o < OC; o++) {
            double acc = bias != nullptr ? bias[o] : 0.0;
            for (int c = 0; c < C; c++) acc += double(inp[n * C + c]) * weight[long(c) * OC + o];
            out[n * OC + o] = float(acc);
        }
}

void matmul_backward_reference(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                               const float* weight, int N, int C, int OC) {
    if (dinp != nullptr)  // dinp[n,c] += sum_o dout[n,o] W[c,o]
        for (long n = 0; n < N; n++)
            for (int c = 0; c < C; c++) {
                double acc = 0.0;
                for (int o = 0; o < OC; o++) acc += double(dout[n * OC + o]) * weight[long(c) * OC + o];
                dinp[n * C + c] += float(acc);
            }
    if (dweight != nullptr)  // dW[c,o] += sum_n inp[n,c] dout[n,o]
        for (int c = 0; c < C; c++)
            for (int o = 0; o < OC; o++) {
                double acc = 0.0;
                for (long n = 0; n < N; n++) acc += double(inp[n * C + c]) * dout[n * OC + o];
                dweight[long(c) * OC + o] += float(acc);
            }
    if (dbias != nullptr)  // db[o] += sum_n dout[n,o]
        for (int o = 0; o < OC; o++) {
            double acc = 0.0;
            for (long n = 0; n < N; n++) acc += dout[n * OC + o];
            dbias[o] += float(acc);
        }
}

}  // namespace ss::cpu
