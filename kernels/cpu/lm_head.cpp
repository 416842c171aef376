// lm_head.cpp — the tied head's three products, on gemm.h's register tiles (as the linear layers).
#include "kernels/cpu/lm_head.h"

#include "kernels/cpu/gemm.h"

namespace ss::cpu {

void lm_head_forward(float* logits, const float* x, const float* wte, int N, int C, int V) {
    // logits[N,V] = x[N,C] * wte[V,C]^T: wte read by columns
    gemm(N, V, C, {x, C, 1}, {wte, 1, C}, logits, V, TileStart::zero);
}

void lm_head_backward(float* dx, float* dwte, const float* dlogits, const float* x, const float* wte, int N, int C,
                      int V) {
    // dx[N,C] += dlogits[N,V] * wte[V,C]
    if (dx != nullptr) gemm(N, C, V, {dlogits, V, 1}, {wte, C, 1}, dx, C, TileStart::add);
    // dwte[V,C] += dlogits[N,V]^T * x[N,C]: dlogits read by columns
    if (dwte != nullptr) gemm(V, C, N, {dlogits, 1, V}, {x, C, 1}, dwte, C, TileStart::add);
}

}  // namespace ss::cpu
