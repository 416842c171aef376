// lm_head.cpp — the tied head's three products, on gemm.h's register tiles or on
// OpenBLAS sgemm, by the linear layers' rule (kMatmulOnTiles, matmul.h).
#include "kernels/cpu/lm_head.h"

#include <cblas.h>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/matmul.h"

namespace ss::cpu {

void lm_head_forward(float* logits, const float* x, const float* wte, int N, int C, int V) {
    // logits[N,V] = x[N,C] * wte[V,C]^T: wte read by columns
    if (kMatmulOnTiles)
        gemm(N, V, C, {x, C, 1}, {wte, 1, C}, logits, V, TileStart::zero);
    else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, V, C, 1.0f, x, C, wte, C, 0.0f, logits, V);
}

void lm_head_backward(float* dx, float* dwte, const float* dlogits, const float* x, const float* wte, int N, int C,
                      int V) {
    // dx[N,C] += dlogits[N,V] * wte[V,C]
    if (dx != nullptr) {
        if (kMatmulOnTiles)
            gemm(N, C, V, {dlogits, V, 1}, {wte, C, 1}, dx, C, TileStart::add);
        else
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, C, V, 1.0f, dlogits, V, wte, C, 1.0f, dx, C);
    }
    // dwte[V,C] += dlogits[N,V]^T * x[N,C]: dlogits read by columns
    if (dwte != nullptr) {
        if (kMatmulOnTiles)
            gemm(V, C, N, {dlogits, 1, V}, {x, C, 1}, dwte, C, TileStart::add);
        else
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, V, C, N, 1.0f, dlogits, V, x, C, 1.0f, dwte, C);
    }
}

}  // namespace ss::cpu
