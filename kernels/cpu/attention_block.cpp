#include "kernels/cpu/attention_block.h"

#include <cmath>
#include <vector>

namespace ss::cpu {

void attention_block_init(float* m, float* l, float* acc, int B, int Tq, int C, int NH) {
    for (long i = 0; i < long(B) * NH * Tq; ++i) {
        m[i] = -INFINITY;
        l[i] = 0.0f;
    }
    for (long i = 0; i < long(B) * Tq * C; ++i) acc[i] = 0.0f;
}

void attention_block_forward(float* m, float* l, float* acc, const float* q_rows, const float* k_rows,
                             const float* v_rows, int kv_stride, int B, int Tq, int Tk, int q_pos, int k_pos, int C,
                             int NH) {
    const int hs = C / NH, C3 = 3 * C;
    const float scale = 1.0f / std::sqrt(float(hs));
    std::vector<float> s(static_cast<size_t>(Tk));  // scores of one query against the block
    for (int b = 0; b < B; ++b)
        for (int h = 0; h < NH; ++h)
            for (int i = 0; i < Tq; ++i) {
                const int visible = q_pos + i - k_pos + 1;  // keys 0 .. visible-1 of this block are allowed
                const int n = visible < 0 ? 0 : (visible > Tk ? Tk : visible);
                if (n == 0) continue;
                const float* q = q_rows + (long(b) * Tq + i) * C3 + h * hs;
                float mx = -INFINITY;
                for (int k = 0; k < n; ++k) {
                    const float* key = k_rows + (long(b) * Tk + k) * kv_stride + h * hs;
                    float dot = 0.0f;
                    for (int d = 0; d < hs; ++d) dot += q[d] * key[d];
                    s[k] = dot * scale;
                    mx = s[k] > mx ? s[k] : mx;
                }
                const long row = (long(b) * NH + h) * Tq + i;
                const float m_new = m[row] > mx ? m[row] : mx;
                const float rescale = std::exp(m[row] - m_new);  // 0 on the first block (m = -inf)
                float* a = acc + (long(b) * Tq + i) * C + h * hs;
                for (int d = 0; d < hs; ++d) a[d] *= rescale;
                float sum = 0.0f;
                for (int k = 0; k < n; ++k) {
                    const float p = std::exp(s[k] - m_new);
                    sum += p;
                    const float* v = v_rows + (long(b) * Tk + k) * kv_stride + h * hs;
                    for (int d = 0; d < hs; ++d) a[d] += p * v[d];
                }
                l[row] = l[row] * rescale + sum;
                m[row] = m_new;
            }
}

void attention_block_finish(float* out, float* lse, const float* m, const float* l, const float* acc, int B, int Tq,
                            int C, int NH) {
    const int hs = C / NH;
    for (int b = 0; b < B; ++b)
        for (int h = 0; h < NH; ++h)
            for (int i = 0; i < Tq; ++i) {
                const long row = (long(b) * NH + h) * Tq + i;
                const float inv = 1.0f / l[row];  // every query sees at least itself, so l > 0
                const long o = (long(b) * Tq + i) * C + h * hs;
                for (int d = 0; d < hs; ++d) out[o + d] = acc[o + d] * inv;
                lse[row] = m[row] + std::log(l[row]);
            }
}

void attention_block_delta(float* D, const float* dout, const float* out, int B, int Tq, int C, int NH) {
    const int hs = C / NH;
    for (int b = 0; b < B; ++b)
        for (int h = 0; h < NH; ++h)
            for (int i = 0; i < Tq; ++i) {
                const long o = (long(b) * Tq + i) * C + h * hs;
                float sum = 0.0f;
                for (int d = 0; d < hs; ++d) sum += dout[o + d] * out[o + d];
                D[(long(b) * NH + h) * Tq + i] = sum;
            }
}

void attention_block_backward(float* dq_rows, float* dk_rows, float* dv_rows, const float* dout, const float* q_rows,
                              const float* k_rows, const float* v_rows, int kv_stride, const float* lse,
                              const float* D, int B, int Tq, int Tk, int q_pos, int k_pos, int C, int NH) {
    const int hs = C / NH, C3 = 3 * C;
    const float scale = 1.0f / std::sqrt(float(hs));
    for (int b = 0; b < B; ++b)
        for (int h = 0; h < NH; ++h)
            for (int i = 0; i < Tq; ++i) {
                const int visible = q_pos + i - k_pos + 1;
                const int n = visible < 0 ? 0 : (visible > Tk ? Tk : visible);
                const long row = (long(b) * NH + h) * Tq + i;
                const float* q = q_rows + (long(b) * Tq + i) * C3 + h * hs;
                float* dq = dq_rows + (long(b) * Tq + i) * C3 + h * hs;
                const float* dO = dout + (long(b) * Tq + i) * C + h * hs;
                for (int k = 0; k < n; ++k) {
                    const long r = (long(b) * Tk + k) * kv_stride + h * hs;
                    const float* key = k_rows + r;
                    const float* v = v_rows + r;
                    float* dkey = dk_rows + r;
                    float* dv = dv_rows + r;
                    float dot = 0.0f, dp = 0.0f;
                    for (int d = 0; d < hs; ++d) {
                        dot += q[d] * key[d];
                        dp += dO[d] * v[d];
                    }
                    const float p = std::exp(dot * scale - lse[row]);
                    const float ds = p * (dp - D[row]) * scale;
                    for (int d = 0; d < hs; ++d) {
                        dv[d] += p * dO[d];
                        dq[d] += ds * key[d];
                        dkey[d] += ds * q[d];
                    }
                }
            }
}

}  // namespace ss::cpu
