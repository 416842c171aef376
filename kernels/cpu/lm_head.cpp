#include "kernels/cpu/lm_head.h"

#include <cblas.h>

namespace ss::cpu {

void lm_head_forward(float* logits, const float* x, const float* wte, int N, int C, int V) {
    // logits[N,V] = x[N,C] * wte[V,C]^T
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, V, C, 1.0f, x, C, wte, C, 0.0f, logits, V);
}

void lm_head_backward(float* dx, float* dwte, const float* dlogits, const float* x, const float* wte, int N, int C,
                      int V) {
    // dx[N,C] += dlogits[N,V] * wte[V,C]
    if (dx) cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, C, V, 1.0f, dlogits, V, wte, C, 1.0f, dx, C);
    // dwte[V,C] += dlogits[N,V]^T * x[N,C]
    if (dwte)
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, V, C, N, 1.0f, dlogits, V, x, C, 1.0f, dwte, C);
}

}  // namespace ss::cpu
