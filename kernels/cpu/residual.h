// residual.h — the residual connection, out = a + b (He et al. 2016).
//
// Its backward is the identity into both branches: da += dout, db += dout.
#pragma once

namespace ss::cpu {

/// out[i] = a[i] + b[i].
void residual_forward(float* out, const float* a, const float* b, long n);
/// da[i] += dout[i]; db[i] += dout[i].
void residual_backward(float* da, float* db, const float* dout, long n);
/// y[i] += x[i] (the accumulate step that many backward passes need).
void add_inplace(float* y, const float* x, long n);
/// out[n, c] += bias[c] for N rows of C: the bias of a row-parallel layer, added
/// once after its partial outputs are summed. Its gradient is matmul_backward's dbias.
void add_bias(float* out, const float* bias, int N, int C);
/// out[n, c] = (out[n, c] + bias[c]) + x[n, c] for N rows of C: add_bias, then the
/// residual add_inplace(out, x), in one pass over out (the same adds in the same order,
/// so the same bits). What a block does after each row-parallel layer.
void add_bias_residual(float* out, const float* bias, const float* x, int N, int C);

}  // namespace ss::cpu
