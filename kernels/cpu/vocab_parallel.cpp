#include "kernels/cpu/vocab_parallel.h"

#include <cmath>
#include <cstring>

namespace ss::cpu {

void vocab_embedding_forward(float* out, const int* tokens, const float* wte_local, int v_begin, int v_count, int N,
                             int C) {
    for (int n = 0; n < N; ++n) {
        float* o = out + long(n) * C;
        const int v = tokens[n] - v_begin;
        if (v >= 0 && v < v_count)
            std::memcpy(o, wte_local + long(v) * C, sizeof(float) * C);
        else
            std::memset(o, 0, sizeof(float) * C);
    }
}

void vocab_embedding_backward(float* dwte_local, const float* dout, const int* tokens, int v_begin, int v_count,
                              int N, int C) {
    for (int n = 0; n < N; ++n) {
        const int v = tokens[n] - v_begin;
        if (v < 0 || v >= v_count) continue;
        float* d = dwte_local + long(v) * C;
        const float* g = dout + long(n) * C;
        for (int c = 0; c < C; ++c) d[c] += g[c];
    }
}

void add_positions(float* out, const float* wpe, int B, int T, int C) {
    for (int b = 0; b < B; ++b)
        for (int t = 0; t < T; ++t) {
            float* o = out + (long(b) * T + t) * C;
            const float* p = wpe + long(t) * C;
            for (int c = 0; c < C; ++c) o[c] += p[c];
        }
}

void add_positions_backward(float* dwpe, const float* dout, int B, int T, int C) {
    for (int b = 0; b < B; ++b)
        for (int t = 0; t < T; ++t) {
            float* d = dwpe + long(t) * C;
            const float* g = dout + (long(b) * T + t) * C;
            for (int c = 0; c < C; ++c) d[c] += g[c];
        }
}

void row_max(float* m, const float* logits, int N, int V, int words) {
    for (int n = 0; n < N; ++n) {
        const float* x = logits + long(n) * V;
        float mx = -INFINITY;
        for (int v = 0; v < words; ++v) mx = x[v] > mx ? x[v] : mx;
        m[n] = mx;
    }
}

void exp_shifted(float* e, float* sums, const float* logits, const float* m, int N, int V, int words) {
    for (int n = 0; n < N; ++n) {
        const float* x = logits + long(n) * V;
        float* y = e + long(n) * V;
        float s = 0.0f;
        for (int v = 0; v < words; ++v) {
            y[v] = std::exp(x[v] - m[n]);
            s += y[v];
        }
        for (int v = words; v < V; ++v) y[v] = 0.0f;  // padding: never predicted
        sums[n] = s;
    }
}

void target_logit(float* z, const float* logits, const int* targets, int v_begin, int N, int V) {
    for (int n = 0; n < N; ++n) {
        const int v = targets[n] - v_begin;
        z[n] = (v >= 0 && v < V) ? logits[long(n) * V + v] : 0.0f;
    }
}

float vocab_ce_finish(float* losses, float* probs, const float* s, const float* z, const float* m, int N, int V) {
    double total = 0.0;
    for (int n = 0; n < N; ++n) {
        float* p = probs + long(n) * V;
        const float inv = 1.0f / s[n];
        for (int v = 0; v < V; ++v) p[v] *= inv;
        losses[n] = std::log(s[n]) + m[n] - z[n];
        total += losses[n];
    }
    return float(total / N);
}

void vocab_ce_backward(float* dlogits, const float* probs, const int* targets, int v_begin, float dloss, int N,
                       int V, bool overwrite) {
    for (int n = 0; n < N; ++n) {
        float* d = dlogits + long(n) * V;
        const float* p = probs + long(n) * V;
        if (overwrite)
            for (int v = 0; v < V; ++v) d[v] = 0.0f + p[v] * dloss;
        else
            for (int v = 0; v < V; ++v) d[v] += p[v] * dloss;
        const int t = targets[n] - v_begin;
        if (t >= 0 && t < V) d[t] -= dloss;
    }
}

}  // namespace ss::cpu
