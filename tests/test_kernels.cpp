// test_kernels.cpp — the CPU kernels of kernels/cpu/ against finite differences, plain loops and hand values.
//
// Three kinds of evidence:
//   * every backward against central differences of a scalar loss
//     L = sum_i out_i w_i (w random, fixed), which checks the gradient and
//     its "+=" contract (gradient buffers start non-zero and the test
//     subtracts what was there);
//   * the fast path (sgemm, register tiles, exp_fast, lane sums) against the *_reference
//     plain loops on odd shapes that do not divide any block or vector width;
//   * known values: gelu at a few points, AdamW's first step by hand,
//     softmax rows summing to 1, attention that cannot see the future.
//
// How the finite-difference tolerances are chosen. The kernels are float, so
// the loss is summed in double from float outputs. The central difference
//   (L(x + h) - L(x - h)) / 2h  =  dL/dx + h^2/6 L'''(x) + (rounding of L) / h
// has a truncation error ~h^2/6 (~2e-5 relative for h = 1e-2 and smooth
// functions of O(1) inputs) and a rounding error ~ sqrt(k) 6e-8 |out| / h
// for k outputs changed by the nudge (~1e-5 here). Tolerances of 1e-3
// relative + 1e-4 absolute sit ~10x above both, and ~100x below the O(1)
// relative error of a wrong formula, a wrong index or a missing "+=".
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "core/check.h"
#include "kernels/cpu/adamw.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/crossentropy.h"
#include "kernels/cpu/encoder.h"
#include "kernels/cpu/gelu.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/layernorm.h"
#include "kernels/cpu/lm_head.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/residual.h"
#include "kernels/cpu/vocab_parallel.h"
#include "kernels/cpu/simd.h"
#include "kernels/cpu/tile.h"
#include "test_values.h"

using namespace ss::cpu;
using Vec = std::vector<float>;

namespace {

using ss::test::uniform;  // tests/test_values.h

// L = sum_i out_i w_i, in double.
double weighted_sum(const Vec& out, const Vec& w) {
    double s = 0.0;
    for (size_t i = 0; i < out.size(); i++) s += double(out[i]) * w[i];
    return s;
}

// Central difference of loss() with respect to every x[i]; x is left as it was.
std::vector<double> numeric_grad(Vec& x, const std::function<double()>& loss, float h) {
    std::vector<double> g(x.size());
    for (size_t i = 0; i < x.size(); i++) {
        const float x0 = x[i];
        const float xp = x0 + h, xm = x0 - h;  // the step actually taken is xp - xm, not 2h
        x[i] = xp;
        const double lp = loss();
        x[i] = xm;
        const double lm = loss();
        x[i] = x0;
        g[i] = (lp - lm) / (double(xp) - double(xm));
    }
    return g;
}

// Largest |got - want| / (atol + rtol |want|) over all elements, and where:
// the element passes when this is <= 1.
struct Worst {
    double ratio = 0.0;
    std::string where;
};
template <class A, class B>
Worst worst_error(const A& got, const B& want, double atol, double rtol) {
    Worst w;
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); i++) {
        const double err = std::fabs(double(got[i]) - double(want[i]));
        const double r = std::isnan(err) ? INFINITY : err / (atol + rtol * std::fabs(double(want[i])));
        if (r > w.ratio) {
            std::ostringstream os;
            os << "[" << i << "] got " << got[i] << " want " << want[i];
            w = {r, os.str()};
        }
    }
    return w;
}

// got - before, element by element: what a "+=" kernel added.
std::vector<double> added(const Vec& got, const Vec& before) {
    std::vector<double> d(got.size());
    for (size_t i = 0; i < got.size(); i++) d[i] = double(got[i]) - before[i];
    return d;
}

// FD tolerances (see the header comment for why these values).
constexpr double kFdAtol = 1e-4, kFdRtol = 1e-3;
constexpr float kFdStep = 1e-2f;

}  // namespace

// Every element within atol + rtol |want|; on failure, names the worst element.
#define REQUIRE_CLOSE(got, want, atol, rtol)                     \
    do {                                                         \
        const Worst w_ = worst_error(got, want, atol, rtol);     \
        INFO(#got << " vs " << #want << " worst " << w_.where); \
        REQUIRE(w_.ratio <= 1.0);                                \
    } while (0)

// ---- simd.h ------------------------------------------------------------------------

TEST_CASE("exp_fast matches std::exp to a few ulp and keeps NaN", "[kernels][simd]") {
    double worst_rel = 0.0;
    for (int i = 0; i <= 200000; i++) {
        const float x = -87.0f + 174.0f * float(i) / 200000.0f;
        const double want = std::exp(double(x));
        worst_rel = std::max(worst_rel, std::fabs(exp_fast(x) - want) / want);
    }
    // Measured 0.7 ulp (ulp = 2^-23 relative); 2 ulp leaves room for another
    // compiler's FMA choices and is far below a wrong coefficient (> 1e-5).
    REQUIRE(worst_rel <= 2.0 * std::ldexp(1.0, -23));
    REQUIRE(exp_fast(0.0f) == 1.0f);  // r = 0, n = 0: exact
    REQUIRE(std::isnan(exp_fast(std::numeric_limits<float>::quiet_NaN())));
    REQUIRE(exp_fast(-1000.0f) == Approx(std::exp(-87.0)).epsilon(1e-6));  // clamped, documented
    REQUIRE(std::isfinite(exp_fast(1000.0f)));
}

TEST_CASE("lane sums and max equal the plain loops on lengths that do not fill the lanes", "[kernels][simd]") {
    for (long n : {1L, 15L, 16L, 17L, 100L}) {
        const Vec x = uniform(n, 1 + n), y = uniform(n, 2 + n);
        double sum = 0.0, dot = 0.0;
        float mx = x[0];
        for (long i = 0; i < n; i++) {
            sum += x[i];
            dot += double(x[i]) * y[i];
            mx = std::max(mx, x[i]);
        }
        // n float adds of |terms| <= 1: the error is at most n 2^-24 n, below 1e-5 for n <= 100.
        REQUIRE(lane_sum(x.data(), n) == Approx(sum).margin(1e-5));
        REQUIRE(lane_dot(x.data(), y.data(), n) == Approx(dot).margin(1e-5));
        REQUIRE(lane_max(x.data(), n) == mx);  // a max is exact
        REQUIRE(lane_max_fast(x.data(), n) == mx);
    }
    REQUIRE(lane_max_fast(nullptr, 0) == -INFINITY);
    Vec x = uniform(40, 3);
    x[33] = std::numeric_limits<float>::quiet_NaN();
    REQUIRE(std::isnan(lane_max(x.data(), 40)));  // a NaN logit must not be hidden by the max
}

// ---- matmul -----------------------------------------------------------------------

TEST_CASE("matmul's fast path (the tiles) equals the plain loops on odd shapes", "[kernels][matmul]") {
    const int N = 37, C = 48, OC = 29;
    const Vec inp = uniform(N * C, 1), W = uniform(C * OC, 2), b = uniform(OC, 3), dout = uniform(N * OC, 4);
    // Sums of C = 48 (or N = 37) float products of O(1) terms: float accumulation
    // errs by < C 2^-24 * sum|terms| ~ 1e-5 against the double reference (gemm's
    // own test holds the tiles to the exact bound).
    const double atol = 2e-5, rtol = 1e-5;
    for (const float* bias : {b.data(), static_cast<const float*>(nullptr)}) {
        Vec fast(N * OC), ref(N * OC);
        matmul_forward(fast.data(), inp.data(), W.data(), bias, N, C, OC);
        matmul_forward_reference(ref.data(), inp.data(), W.data(), bias, N, C, OC);
        REQUIRE_CLOSE(fast, ref, atol, rtol);
    }
    // Gradient buffers start non-zero: both must add, not overwrite.
    Vec dinp_f = uniform(N * C, 5), dW_f = uniform(C * OC, 6), db_f = uniform(OC, 7);
    Vec dinp_r = dinp_f, dW_r = dW_f, db_r = db_f;
    matmul_backward(dinp_f.data(), dW_f.data(), db_f.data(), dout.data(), inp.data(), W.data(), N, C, OC);
    matmul_backward_reference(dinp_r.data(), dW_r.data(), db_r.data(), dout.data(), inp.data(), W.data(), N, C, OC);
    REQUIRE_CLOSE(dinp_f, dinp_r, atol, rtol);
    REQUIRE_CLOSE(dW_f, dW_r, atol, rtol);
    REQUIRE_CLOSE(db_f, db_r, atol, rtol);
    // Null gradients are skipped; the others are still written.
    Vec dW_only(C * OC, 0.0f), dW_fresh(C * OC, 0.0f);
    matmul_backward(nullptr, dW_only.data(), nullptr, dout.data(), inp.data(), W.data(), N, C, OC);
    matmul_backward_reference(nullptr, dW_fresh.data(), nullptr, dout.data(), inp.data(), W.data(), N, C, OC);
    REQUIRE_CLOSE(dW_only, dW_fresh, atol, rtol);
}

TEST_CASE("matmul_forward_planar writes matmul_forward's products as a q plane and a k|v plane", "[kernels][matmul]") {
    // Ring attention's c_attn (model/attention.h, Attention::planar): the same dot products
    // as one [N, 3Cq] product, each column a gemm of its own plane. On the tiles each element
    // is one tile's K-sum, wherever its column falls in the panels (partial panels staged at
    // full width), so the bits are the same: Cq = 16, 29, 80 and 128 put the split on and off
    // the tile widths of AVX2 (16) and AVX-512 (32), C = 300 crosses a K-block (256). A build
    // on sgemm (no AVX2) is held to the float error of two C-term sums instead, 2 C^2 2^-26
    // at the worst for |terms| <= 1/4 on average (uniform in [-1, 1] twice).
    for (int C : {48, 300})
        for (int Cq : {16, 29, 80, 128}) {
            const int N = 37, OC = 3 * Cq;
            const Vec inp = uniform(long(N) * C, 11), W = uniform(long(C) * OC, 12), b = uniform(OC, 13);
            for (const float* bias : {b.data(), static_cast<const float*>(nullptr)}) {
                INFO("C " << C << " Cq " << Cq << (bias ? " with" : " without") << " bias");
                Vec rows(size_t(N) * OC), want(rows.size()), planes(rows.size(), -1.0f);
                matmul_forward(rows.data(), inp.data(), W.data(), bias, N, C, OC);
                qkv_to_planes(want.data(), rows.data(), N, Cq);
                matmul_forward_planar(planes.data(), inp.data(), W.data(), bias, N, C, Cq);
                if (kMatmulOnTiles)
                    REQUIRE(std::memcmp(planes.data(), want.data(), sizeof(float) * want.size()) == 0);
                else
                    REQUIRE_CLOSE(planes, want, 2.0 * C * C / 67108864.0, 0.0);
            }
        }
}

TEST_CASE("backward's overwrite mode gives the bits += gives on zeros, whatever the buffer held",
          "[kernels][matmul][gelu][attention][crossentropy]") {
    // kern::Grad::overwrite lets a fresh scratch buffer skip its zero-fill: the result must be
    // bit for bit the accumulate into a zeroed buffer (tiles from +0, 0 + v in gelu), for any
    // garbage the buffer held, with a tail tile and K-blocks (OC = 300 > kGemmKBlock).
    const int N = 37, C = 29, OC = 300;
    const Vec inp = uniform(N * C, 1), W = uniform(C * OC, 2), dout = uniform(N * OC, 4);
    Vec zeroed(N * C, 0.0f), garbage = uniform(N * C, 9);
    garbage[3] = std::numeric_limits<float>::quiet_NaN();
    matmul_backward(zeroed.data(), nullptr, nullptr, dout.data(), inp.data(), W.data(), N, C, OC);
    matmul_backward(garbage.data(), nullptr, nullptr, dout.data(), inp.data(), W.data(), N, C, OC, true);
    REQUIRE(std::memcmp(zeroed.data(), garbage.data(), zeroed.size() * sizeof(float)) == 0);

    const long n = 1000;  // not a whole number of vectors
    Vec x = uniform(n, 5), d = uniform(n, 6), g_zeroed(n, 0.0f), g_garbage = uniform(n, 7);
    d[10] = -0.0f;  // a -0 gradient: 0 + (-0) is +0, which the overwrite must give too
    gelu_backward(g_zeroed.data(), x.data(), d.data(), n);
    gelu_backward(g_garbage.data(), x.data(), d.data(), n, true);
    REQUIRE(std::memcmp(g_zeroed.data(), g_garbage.data(), size_t(n) * sizeof(float)) == 0);

    // attention: each element of dqkv is one tile's sum, started from 0 or from the zeroed
    // buffer (hs = 16, 12: through the tail tile's copy, 64); T = 17, 40 end in partial row tiles.
    struct AttnShape {
        int B, T, C, NH;
    };
    for (const AttnShape a : {AttnShape{2, 17, 48, 3}, AttnShape{1, 40, 24, 2}, AttnShape{1, 70, 128, 2}}) {
        INFO("B=" << a.B << " T=" << a.T << " C=" << a.C << " NH=" << a.NH);
        const long nq = long(a.B) * a.T * 3 * a.C;
        const Vec qkv = uniform(nq, 21, -2.0f, 2.0f), dy = uniform(long(a.B) * a.T * a.C, 22);
        Vec y(size_t(a.B) * a.T * a.C), att(size_t(a.B) * a.NH * a.T * a.T), scratch(att.size());
        attention_forward(y.data(), att.data(), qkv.data(), a.B, a.T, a.C, a.NH);
        Vec dqkv_zeroed(size_t(nq), 0.0f), dqkv_garbage = uniform(nq, 23);
        dqkv_garbage[5] = std::numeric_limits<float>::quiet_NaN();
        attention_backward(dqkv_zeroed.data(), scratch.data(), dy.data(), qkv.data(), att.data(), a.B, a.T, a.C, a.NH);
        attention_backward(dqkv_garbage.data(), scratch.data(), dy.data(), qkv.data(), att.data(), a.B, a.T, a.C,
                           a.NH, true);
        REQUIRE(std::memcmp(dqkv_zeroed.data(), dqkv_garbage.data(), size_t(nq) * sizeof(float)) == 0);
    }

    // cross-entropy, with padding columns (Vp > V: the overwrite writes them 0), and its
    // vocabulary-parallel twin (the targets outside this rank's columns too)
    {
        const int N = 5, V = 37, Vp = 40;
        const Vec logits = uniform(long(N) * Vp, 24, -3.0f, 3.0f);
        const std::vector<int> targets = {0, 36, 17, 5, 20};
        Vec losses(N), probs(size_t(N) * Vp);
        crossentropy_forward(losses.data(), probs.data(), logits.data(), targets.data(), N, V, Vp);
        Vec d_zeroed(size_t(N) * Vp, 0.0f), d_garbage = uniform(long(N) * Vp, 25);
        d_garbage[Vp - 1] = std::numeric_limits<float>::quiet_NaN();  // a padding column
        crossentropy_backward(d_zeroed.data(), probs.data(), targets.data(), 1.0f / N, N, V, Vp);
        crossentropy_backward(d_garbage.data(), probs.data(), targets.data(), 1.0f / N, N, V, Vp, true);
        REQUIRE(std::memcmp(d_zeroed.data(), d_garbage.data(), d_zeroed.size() * sizeof(float)) == 0);
        Vec v_zeroed(size_t(N) * Vp, 0.0f), v_garbage = uniform(long(N) * Vp, 26);
        vocab_ce_backward(v_zeroed.data(), probs.data(), targets.data(), 10, 1.0f / N, N, Vp);
        vocab_ce_backward(v_garbage.data(), probs.data(), targets.data(), 10, 1.0f / N, N, Vp, true);
        REQUIRE(std::memcmp(v_zeroed.data(), v_garbage.data(), v_zeroed.size() * sizeof(float)) == 0);
    }
}

TEST_CASE("a linear layer's backward in two passes, inputs then weights, gives the one call's bits",
          "[kernels][matmul][lm_head]") {
    // The room a zero-bubble pipeline schedule needs (Qi et al. 2023, arXiv:2401.10241: B, the
    // input gradients, now; W, the weight gradients, later; docs/architecture.md, "Room left"):
    // matmul_backward and lm_head_backward compute dinp and dW in separate products, so a pass
    // with dW (and db) null, then one with dinp null, is the same arithmetic as one call. db goes
    // with dW: on the tiles it is summed as dW's pack reads dout, where a call without dW sums it
    // row by row (other bits). Either order; OC = 300 crosses a K-block, N = 37 a row tile.
    const int N = 37, C = 29, OC = 300;
    const Vec inp = uniform(N * C, 31), W = uniform(C * OC, 32), dout = uniform(N * OC, 33);
    const Vec dinp0 = uniform(N * C, 34), dW0 = uniform(C * OC, 35), db0 = uniform(OC, 36);
    const auto same = [](const Vec& a, const Vec& b) {
        return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
    };
    for (bool overwrite : {false, true}) {
        INFO((overwrite ? "dinp overwritten" : "dinp accumulated"));
        Vec dinp = dinp0, dW = dW0, db = db0;
        matmul_backward(dinp.data(), dW.data(), db.data(), dout.data(), inp.data(), W.data(), N, C, OC, overwrite);
        for (bool weights_first : {false, true}) {
            INFO((weights_first ? "W pass first" : "B pass first"));
            Vec dinp2 = dinp0, dW2 = dW0, db2 = db0;
            const auto b_pass = [&] {
                matmul_backward(dinp2.data(), nullptr, nullptr, dout.data(), inp.data(), W.data(), N, C, OC, overwrite);
            };
            const auto w_pass = [&] {
                matmul_backward(nullptr, dW2.data(), db2.data(), dout.data(), inp.data(), W.data(), N, C, OC);
            };
            if (weights_first) {
                w_pass();
                b_pass();
            } else {
                b_pass();
                w_pass();
            }
            REQUIRE(same(dinp2, dinp));
            REQUIRE(same(dW2, dW));
            REQUIRE(same(db2, db));
        }
    }
    // The tied head: dx now, dwte later.
    const int V = 71;
    const Vec x = uniform(N * C, 37), wte = uniform(V * C, 38), dlogits = uniform(N * V, 39);
    Vec dx = dinp0, dwte = uniform(V * C, 40), dx2 = dx, dwte2 = dwte;
    lm_head_backward(dx.data(), dwte.data(), dlogits.data(), x.data(), wte.data(), N, C, V);
    lm_head_backward(dx2.data(), nullptr, dlogits.data(), x.data(), wte.data(), N, C, V);
    lm_head_backward(nullptr, dwte2.data(), dlogits.data(), x.data(), wte.data(), N, C, V);
    REQUIRE(same(dx2, dx));
    REQUIRE(same(dwte2, dwte));
}

TEST_CASE("matmul backward equals finite differences", "[kernels][matmul][fd]") {
    const int N = 3, C = 5, OC = 4;
    Vec inp = uniform(N * C, 11), W = uniform(C * OC, 12), b = uniform(OC, 13);
    const Vec w = uniform(N * OC, 14);
    Vec out(N * OC);
    auto loss = [&] {
        matmul_forward(out.data(), inp.data(), W.data(), b.data(), N, C, OC);
        return weighted_sum(out, w);
    };
    const Vec dinp0 = uniform(N * C, 15), dW0 = uniform(C * OC, 16), db0 = uniform(OC, 17);
    Vec dinp = dinp0, dW = dW0, db = db0;
    matmul_backward(dinp.data(), dW.data(), db.data(), w.data(), inp.data(), W.data(), N, C, OC);  // dL/dout = w
    // L is linear in each argument, so the difference quotient has no truncation error.
    REQUIRE_CLOSE(added(dinp, dinp0), numeric_grad(inp, loss, kFdStep), kFdAtol, kFdRtol);
    REQUIRE_CLOSE(added(dW, dW0), numeric_grad(W, loss, kFdStep), kFdAtol, kFdRtol);
    REQUIRE_CLOSE(added(db, db0), numeric_grad(b, loss, kFdStep), kFdAtol, kFdRtol);
}

// ---- layernorm ----------------------------------------------------------------------

TEST_CASE("layernorm normalizes each row and its backward equals finite differences", "[kernels][layernorm][fd]") {
    const int N = 4, C = 19;
    Vec inp = uniform(N * C, 21, -2.0f, 3.0f), weight = uniform(C, 22, 0.5f, 1.5f), bias = uniform(C, 23);
    const Vec w = uniform(N * C, 24);
    Vec out(N * C), mean(N), rstd(N);
    // With weight 1 and bias 0 every output row has mean 0 and variance
    // var/(var + eps) ~ 1 - 1e-5/var: float sums of 19 terms give ~1e-6.
    const Vec ones(C, 1.0f), zeros(C, 0.0f);
    layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), ones.data(), zeros.data(), N, C);
    for (int n = 0; n < N; n++) {
        double m = 0.0, v = 0.0;
        for (int c = 0; c < C; c++) m += out[n * C + c];
        m /= C;
        for (int c = 0; c < C; c++) v += (out[n * C + c] - m) * (out[n * C + c] - m);
        v /= C;
        REQUIRE(m == Approx(0.0).margin(1e-6));
        REQUIRE(v == Approx(1.0).margin(1e-4));  // the eps term alone is 1e-5/var with var ~ 2
    }
    auto loss = [&] {
        layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), weight.data(), bias.data(), N, C);
        return weighted_sum(out, w);
    };
    loss();  // mean and rstd of the unperturbed input, for backward
    const Vec dinp0 = uniform(N * C, 25), dw0 = uniform(C, 26), db0 = uniform(C, 27);
    Vec dinp = dinp0, dw = dw0, db = db0;
    layernorm_backward(dinp.data(), dw.data(), db.data(), w.data(), inp.data(), weight.data(), mean.data(),
                       rstd.data(), N, C);
    REQUIRE_CLOSE(added(dinp, dinp0), numeric_grad(inp, loss, kFdStep), kFdAtol, kFdRtol);
    REQUIRE_CLOSE(added(dw, dw0), numeric_grad(weight, loss, kFdStep), kFdAtol, kFdRtol);
    REQUIRE_CLOSE(added(db, db0), numeric_grad(bias, loss, kFdStep), kFdAtol, kFdRtol);
}

TEST_CASE("layernorm backward with dweight or dbias left out gives the same bits as with both",
          "[kernels][layernorm]") {
    // With both, one pass writes dx, dw and db (layernorm.cpp, row_grads); without one, dx has a
    // pass of its own and the other a loop of its own: each element's arithmetic is the same, so
    // the bits are. C = 19: one lane group and a tail; C = 128: eight groups (small's rows).
    for (const int C : {19, 128}) {
        CAPTURE(C);
        const int N = 5;
        const Vec inp = uniform(N * C, 31, -2.0f, 3.0f), weight = uniform(C, 32, 0.5f, 1.5f), bias = uniform(C, 33);
        const Vec dout = uniform(N * C, 34);
        Vec out(N * C), mean(N), rstd(N);
        layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), weight.data(), bias.data(), N, C);
        const Vec dinp0 = uniform(N * C, 35), dw0 = uniform(C, 36), db0 = uniform(C, 37);
        auto run = [&](bool with_dw, bool with_db, Vec& dinp, Vec& dw, Vec& db) {
            dinp = dinp0, dw = dw0, db = db0;
            layernorm_backward(dinp.data(), with_dw ? dw.data() : nullptr, with_db ? db.data() : nullptr, dout.data(),
                               inp.data(), weight.data(), mean.data(), rstd.data(), N, C);
        };
        Vec dinp, dw, db;
        run(true, true, dinp, dw, db);
        auto same = [](const Vec& a, const Vec& b) {
            return std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
        };
        Vec dinp2, dw2, db2;
        run(false, false, dinp2, dw2, db2);
        REQUIRE(same(dinp2, dinp));
        REQUIRE(same(dw2, dw0));  // untouched
        REQUIRE(same(db2, db0));
        run(true, false, dinp2, dw2, db2);
        REQUIRE(same(dinp2, dinp));
        REQUIRE(same(dw2, dw));
        REQUIRE(same(db2, db0));
        run(false, true, dinp2, dw2, db2);
        REQUIRE(same(dinp2, dinp));
        REQUIRE(same(dw2, dw0));
        REQUIRE(same(db2, db));
    }
}

// ---- gelu ---------------------------------------------------------------------------

TEST_CASE("gelu at known values, fast form equals tanh form", "[kernels][gelu]") {
    // 0.5 x (1 + tanh(sqrt(2/pi)(x + 0.044715 x^3))) evaluated in double (Python's math module);
    // the same numbers torch.nn.functional.gelu(x, approximate='tanh') prints.
    const Vec x = {0.0f, 1.0f, -1.0f, 2.0f, 0.5f, -3.0f};
    const std::vector<double> want = {0.0, 0.8411919906082768, -0.15880800939172324, 1.954597694087775,
                                      0.34571400982514394, -0.0036373920817729943};
    Vec fast(x.size()), ref(x.size());
    gelu_forward(fast.data(), x.data(), long(x.size()));
    gelu_forward_reference(ref.data(), x.data(), long(x.size()));
    // float evaluation: a few ulp of the result, plus ulp(1) * |x| from 1 + tanh in the tanh form.
    REQUIRE_CLOSE(fast, want, 1e-7, 1e-6);
    REQUIRE_CLOSE(ref, want, 3e-7, 1e-6);
    // Far tails: gelu(x) -> x for x >> 0 and -> 0 for x << 0, no NaN or inf.
    const Vec tails = {10.0f, 50.0f, -10.0f, -50.0f};
    Vec t(4);
    gelu_forward(t.data(), tails.data(), 4);
    REQUIRE(t[0] == 10.0f);
    REQUIRE(t[1] == 50.0f);
    REQUIRE(std::fabs(t[2]) < 1e-30f);
    REQUIRE(std::fabs(t[3]) < 1e-30f);

    // A sweep across [-8, 8]: the two forms are the same function; the tanh form
    // loses up to ulp(1) |x| ~ 5e-7 to the 1 + tanh cancellation, hence the 1e-6 margin.
    const long n = 1601;
    Vec xs(n);
    for (long i = 0; i < n; i++) xs[i] = -8.0f + 0.01f * float(i);
    Vec yf(n), yr(n), dout = uniform(n, 31), gf(n, 0.0f), gr(n, 0.0f);
    gelu_forward(yf.data(), xs.data(), n);
    gelu_forward_reference(yr.data(), xs.data(), n);
    REQUIRE_CLOSE(yf, yr, 1e-6, 1e-6);
    gelu_backward(gf.data(), xs.data(), dout.data(), n);
    gelu_backward_reference(gr.data(), xs.data(), dout.data(), n);
    REQUIRE_CLOSE(gf, gr, 2e-6, 1e-6);
}

TEST_CASE("gelu backward equals finite differences", "[kernels][gelu][fd]") {
    const long n = 41;
    Vec x = uniform(n, 41, -4.0f, 4.0f);
    const Vec w = uniform(n, 42);
    Vec out(n);
    auto loss = [&] {
        gelu_forward(out.data(), x.data(), n);
        return weighted_sum(out, w);
    };
    const Vec d0 = uniform(n, 43);
    Vec d = d0;
    gelu_backward(d.data(), x.data(), w.data(), n);
    // Each nudge changes one output: rounding ~6e-8/h is tiny; gelu''' <= ~2 on [-4, 4]
    // gives truncation <= h^2/3 ~ 3e-5, inside 1e-4 absolute.
    REQUIRE_CLOSE(added(d, d0), numeric_grad(x, loss, kFdStep), kFdAtol, kFdRtol);
}

// ---- the register tile ------------------------------------------------------------

TEST_CASE("tile_product equals the plain dot products, every row count and both A layouts", "[kernels][tile]") {
    // C[r, j] = sum_k A(r, k) B[k, j] against the same sum in double. Each float FMA
    // rounds once, so a sum of K terms is off by at most gamma_K sum_k |a b|, gamma_K =
    // K u / (1 - K u), u = 2^-24 (Higham, "Accuracy and Stability of Numerical
    // Algorithms", 2002, sec. 3.1, the inner-product bound): the bound below is that,
    // per element, with 1% to spare (1 / (1 - K u) < 1.00001 for K <= 33). It holds for
    // any order of the adds, so for 8 or 16 lanes alike. A wrong stride or
    // row is off by O(|a b|), far outside it.
    const int W = kTileWidth;
    for (int rows = 1; rows <= kTileRows; ++rows)
        for (int K : {0, 1, 7, 33})
            for (bool by_columns : {false, true}) {  // A(r, k) = a[r*lda + k], or a[r + k*lda] (P read down)
                INFO("rows=" << rows << " K=" << K << (by_columns ? " A by columns" : " A by rows"));
                const long lda = 40, ldb = W + 3, ldc = W + 5;
                const Vec a = uniform(lda * 40, 81), b = uniform(ldb * (K + 1), 82);
                Vec c(size_t(ldc) * rows, -7.0f);
                const long a_row = by_columns ? 1 : lda, a_k = by_columns ? lda : 1;
                tile_product(rows, K, a.data(), a_row, a_k, b.data(), ldb, c.data(), ldc);
                for (int r = 0; r < rows; ++r)
                    for (int j = 0; j < W; ++j) {
                        double want = 0.0, magnitude = 0.0;
                        for (int k = 0; k < K; ++k) {
                            const double t = double(a[r * a_row + k * a_k]) * b[k * ldb + j];
                            want += t;
                            magnitude += std::fabs(t);
                        }
                        REQUIRE(std::fabs(c[r * ldc + j] - want) <= 1.01 * K * 0x1p-24 * magnitude);
                    }
                for (int j = W; j < ldc; ++j) REQUIRE(c[j] == -7.0f);  // nothing written past the tile's width
            }
    REQUIRE_THROWS_AS(tile_product(kTileRows + 1, 1, nullptr, 0, 0, nullptr, 0, nullptr, 0), ss::Error);
}

TEST_CASE("NextHead walks the heads in the kernels' order and finds each one's rows", "[kernels][tile]") {
    const int B = 3, NH = 4, hs = 8;
    const long T = 5, stride = 3L * NH * hs;  // rows of qkv: head h of q at float h * hs
    int visits = 0;
    for (int b = 0; b < B; ++b)
        for (int h = 0; h < NH; ++h) {
            const ss::cpu::NextHead next(b, h, B, NH);
            const int after = b * NH + h + 1;  // the loops' index of the head that follows
            REQUIRE(next.exists == (after < B * NH));
            if (!next.exists) continue;
            REQUIRE(next.b == after / NH);
            REQUIRE(next.h == after % NH);
            REQUIRE(next.offset(T, stride, hs) == (after / NH) * T * stride + (after % NH) * hs);
            ++visits;
        }
    REQUIRE(visits == B * NH - 1);
}

// ---- gemm (the linear layers' tiles) ---------------------------------------------

TEST_CASE("gemm equals the plain sums: every start, both layouts of A and of B, tails and K-blocks", "[kernels][gemm]") {
    // C[m, n] = start + sum_k A(m, k) B(k, n) against the same sum in double. Each
    // element's result passes through at most K + blocks + 1 roundings (one per FMA,
    // and per K-block after the first one more), so it is off by at most
    // gamma_n (|start| + sum_k |a b|) with
    // n = K + K / kGemmKBlock + 2 (Higham 2002, sec. 3.1: the bound holds for any
    // order of the adds); 1.01 covers 1 / (1 - n u) for n < 1e4. A wrong stride,
    // tail or block is off by O(|a b|), far outside it.
    const int W = kTileWidth;
    const TileStart starts[] = {TileStart::zero, TileStart::add, TileStart::row};
    struct Sizes {
        std::vector<int> M, N, K;
    };
    // Every size against tails and K-blocks; then, once, an N across two N-blocks.
    const Sizes sizes[] = {{{1, 7, 13}, {1, W - 1, W, 2 * W + 3}, {0, 1, 37, kGemmKBlock + 5}},
                           {{7}, {kGemmNBlock + W + 3}, {37}}};
    for (const Sizes& z : sizes)
        for (int M : z.M)
            for (int N : z.N)
                for (int K : z.K)
                    for (TileStart start : starts)
                        for (int layout = 0; layout < 4; ++layout) {
                            const bool a_by_columns = layout & 1, b_by_columns = layout & 2;
                            INFO("M=" << M << " N=" << N << " K=" << K << " start=" << int(start)
                                      << (a_by_columns ? " A by columns" : " A by rows")
                                      << (b_by_columns ? " B by columns" : " B by rows"));
                            const long lda = (a_by_columns ? M : K) + 3, ldb = (b_by_columns ? K : N) + 2;
                            const long ldc = N + 4;  // columns N..N+3 must stay untouched
                            const Vec a = uniform(lda * ((a_by_columns ? K : M) + 1), 91);
                            const Vec b = uniform(ldb * ((b_by_columns ? N : K) + 1), 92);
                            const Vec bias = uniform(N, 93), c0 = uniform(size_t(ldc) * M, 94);
                            const MatrixView A = a_by_columns ? MatrixView{a.data(), 1, lda} : MatrixView{a.data(), lda, 1};
                            const MatrixView B = b_by_columns ? MatrixView{b.data(), 1, ldb} : MatrixView{b.data(), ldb, 1};
                            Vec c = c0, ref = c0, sums = uniform(N, 95);
                            const Vec sums0 = sums;
                            gemm(M, N, K, A, B, c.data(), ldc, start, bias.data(), sums.data());
                            gemm_reference(M, N, K, A, B, ref.data(), ldc, start, bias.data());
                            const double n_round = K + K / kGemmKBlock + 2;
                            for (int m = 0; m < M; ++m) {
                                for (int n = 0; n < N; ++n) {
                                    double magnitude = start == TileStart::add   ? std::fabs(c0[m * ldc + n])
                                                       : start == TileStart::row ? std::fabs(bias[n])
                                                                                 : 0.0;
                                    for (int k = 0; k < K; ++k)
                                        magnitude += std::fabs(double(A.data[m * A.row + k * A.col]) *
                                                               B.data[k * B.row + n * B.col]);
                                    REQUIRE(std::fabs(c[m * ldc + n] - ref[m * ldc + n]) <=
                                            1.01 * n_round * 0x1p-24 * magnitude + 0x1p-24 * std::fabs(ref[m * ldc + n]));
                                }
                                for (int n = N; n < ldc; ++n) REQUIRE(c[m * ldc + n] == c0[m * ldc + n]);
                            }
                            // B's column sums: the same float adds in the same order as a loop over B's rows.
                            for (int n = 0; n < N; ++n) {
                                float want = sums0[n];
                                for (int k = 0; k < K; ++k) want += B.data[k * B.row + n * B.col];
                                REQUIRE(sums[n] == want);
                            }
                        }
    REQUIRE_THROWS_AS(gemm(1, 1, 1, {}, {}, nullptr, 1, TileStart::row, nullptr), ss::Error);  // row needs a bias
}

TEST_CASE("a partial tile gives the bits of a whole one: gemm's last panel and tile_product_into's staging",
          "[kernels][gemm][tile]") {
    // The tiles are kTileWidth columns wide: 16 with AVX2, 32 with AVX-512. A width
    // that is whole tiles on one machine is a partial tile on the other, so the
    // partial path must do each element's arithmetic as the whole path does: start
    // from C (or the bias, or 0) and add the K products in order. Here the same
    // columns are computed once as a partial tile (N = kTileWidth + 5) and once
    // inside whole tiles (the same B padded with zero columns to 2 kTileWidth), and
    // compared with ==. tests/same_bits_builds.sh holds two builds of both widths
    // to the same bytes end to end.
    const int W = kTileWidth, N = W + 5, NP = 2 * W;
    const TileStart starts[] = {TileStart::zero, TileStart::add, TileStart::row};
    for (int M : {1, 6, 13})
        for (int K : {1, 37, kGemmKBlock + 5})
            for (TileStart start : starts) {
                INFO("M=" << M << " K=" << K << " start=" << int(start));
                const Vec a = uniform(size_t(M) * K, 71), b = uniform(size_t(K) * N, 72), c0 = uniform(size_t(M) * N, 73);
                Vec bias = uniform(N, 74), b_pad(size_t(K) * NP, 0.0f), c0_pad(size_t(M) * NP, 0.0f);
                for (int k = 0; k < K; ++k) std::copy(&b[k * N], &b[k * N] + N, &b_pad[k * NP]);
                for (int m = 0; m < M; ++m) std::copy(&c0[m * N], &c0[m * N] + N, &c0_pad[m * NP]);
                Vec bias_pad = bias;
                bias_pad.resize(NP, 0.0f);
                Vec c = c0, c_pad = c0_pad;
                gemm(M, N, K, {a.data(), K, 1}, {b.data(), N, 1}, c.data(), N, start, bias.data());
                gemm(M, NP, K, {a.data(), K, 1}, {b_pad.data(), NP, 1}, c_pad.data(), NP, start, bias_pad.data());
                for (int m = 0; m < M; ++m)
                    for (int n = 0; n < N; ++n) REQUIRE(c[m * N + n] == c_pad[m * NP + n]);
            }
    // tile_product_into: n = W + 5 columns through the staging tile G, against the same
    // product into 2 W columns (whole tiles, straight into their rows).
    for (bool add : {false, true})
        for (int rows = 1; rows <= kTileRows; ++rows) {
            INFO("rows=" << rows << " add=" << add);
            const int K = 29, n = W + 5, ld = 2 * W;
            const Vec a = uniform(size_t(rows) * K, 75), b = uniform(size_t(K) * ld, 76), o0 = uniform(size_t(rows) * ld, 77);
            Vec out = o0, out_whole = o0, G(size_t(kTileRows) * ld);
            tile_product_into(rows, K, a.data(), K, 1, b.data(), ld, out.data(), ld, n, add, G.data(), ld);
            tile_product_into(rows, K, a.data(), K, 1, b.data(), ld, out_whole.data(), ld, ld, add, G.data(), ld);
            for (int r = 0; r < rows; ++r) {
                for (int i = 0; i < n; ++i) REQUIRE(out[r * ld + i] == out_whole[r * ld + i]);
                for (int i = n; i < ld; ++i) REQUIRE(out[r * ld + i] == o0[r * ld + i]);  // past n: untouched
            }
        }
}

TEST_CASE("lm_head's three products equal the plain sums, and backward adds", "[kernels][lm_head]") {
    const int N = 13, C = 37, V = 71;  // no size a whole number of tiles
    const Vec x = uniform(N * C, 101), wte = uniform(V * C, 102), dlogits = uniform(N * V, 103);
    const Vec dx0 = uniform(N * C, 104), dwte0 = uniform(V * C, 105);
    Vec logits(N * V), dx = dx0, dwte = dwte0;
    lm_head_forward(logits.data(), x.data(), wte.data(), N, C, V);
    lm_head_backward(dx.data(), dwte.data(), dlogits.data(), x.data(), wte.data(), N, C, V);
    // Sums of at most V = 71 products of values in [-1, 1] (plus a start in [-1, 1]), in float,
    // on the tiles: at most V + 3 roundings each (gemm's test), so off by at most
    // gamma_{V+3} (1 + V) (Higham's bound; 1.01 covers 1 / (1 - n u)): 3.2e-4.
    const double tol = 1.01 * (V + 3) * 0x1p-24 * (V + 1);
    for (int n = 0; n < N; ++n)
        for (int v = 0; v < V; ++v) {
            double want = 0;
            for (int c = 0; c < C; ++c) want += double(x[n * C + c]) * wte[v * C + c];
            REQUIRE(std::fabs(logits[n * V + v] - want) <= tol);
        }
    for (int n = 0; n < N; ++n)
        for (int c = 0; c < C; ++c) {
            double want = dx0[n * C + c];
            for (int v = 0; v < V; ++v) want += double(dlogits[n * V + v]) * wte[v * C + c];
            REQUIRE(std::fabs(dx[n * C + c] - want) <= tol);
        }
    for (int v = 0; v < V; ++v)
        for (int c = 0; c < C; ++c) {
            double want = dwte0[v * C + c];
            for (int n = 0; n < N; ++n) want += double(dlogits[n * V + v]) * x[n * C + c];
            REQUIRE(std::fabs(dwte[v * C + c] - want) <= tol);
        }
}

// ---- attention --------------------------------------------------------------------

namespace {
struct AttnRun {
    Vec out, att, dqkv, scratch;
};
AttnRun run_attention(bool fast, const Vec& qkv, const Vec& dout, const Vec& dqkv0, int B, int T, int C, int NH) {
    AttnRun r{Vec(long(B) * T * C), Vec(long(B) * NH * T * T, -1.0f), dqkv0, Vec(long(B) * NH * T * T, -1.0f)};
    // att and scratch start at -1 so a masked entry left unwritten would show.
    if (fast) {
        attention_forward(r.out.data(), r.att.data(), qkv.data(), B, T, C, NH);
        attention_backward(r.dqkv.data(), r.scratch.data(), dout.data(), qkv.data(), r.att.data(), B, T, C, NH);
    } else {
        attention_forward_reference(r.out.data(), r.att.data(), qkv.data(), B, T, C, NH);
        attention_backward_reference(r.dqkv.data(), r.scratch.data(), dout.data(), qkv.data(), r.att.data(), B, T,
                                     C, NH);
    }
    return r;
}
}  // namespace

TEST_CASE("attention's tiled path equals the plain loops", "[kernels][attention]") {
    struct Shape {
        int B, T, C, NH;
    };
    // Against the tiles of kernels/cpu/tile.h (6 rows, 16 or 32 columns): 17 and 150 rows
    // end in a partial row tile; T = 5 is less than one; hs = 16, 12 (not a multiple of any
    // vector), 32 (one AVX-512 tile), 64 (two) cover the padded and the exact widths.
    for (const Shape s : {Shape{2, 17, 48, 3}, Shape{1, 150, 32, 2}, Shape{1, 5, 24, 2}, Shape{2, 40, 96, 3},
                          Shape{1, 70, 128, 2}}) {
        INFO("B=" << s.B << " T=" << s.T << " C=" << s.C << " NH=" << s.NH);
        const long n = long(s.B) * s.T * 3 * s.C;
        const Vec qkv = uniform(n, 51, -2.0f, 2.0f), dout = uniform(long(s.B) * s.T * s.C, 52),
                  dqkv0 = uniform(n, 53);
        const AttnRun f = run_attention(true, qkv, dout, dqkv0, s.B, s.T, s.C, s.NH);
        const AttnRun r = run_attention(false, qkv, dout, dqkv0, s.B, s.T, s.C, s.NH);
        // Float sums of hs <= 64 products (scores) and of up to T = 150 terms (outputs,
        // gradients) against double: errors ~ sqrt(K) 2^-24 sum|terms| typically, K 2^-24
        // at worst (~1e-5 for K = 150 and sums of O(1)), plus exp_fast's < 1 ulp; 3e-5
        // absolute for O(1) values, far below a wrong index (O(0.1)).
        REQUIRE_CLOSE(f.att, r.att, 1e-6, 1e-5);
        REQUIRE_CLOSE(f.out, r.out, 3e-5, 1e-5);
        REQUIRE_CLOSE(f.dqkv, r.dqkv, 3e-5, 1e-5);
        // Rows of P sum to 1 over s <= t and are exactly 0 above the diagonal.
        for (int t = 0; t < s.T; t++) {
            double sum = 0.0;
            for (int u = 0; u < s.T; u++) {
                const float p = f.att[long(t) * s.T + u];
                if (u > t) REQUIRE(p == 0.0f);
                sum += p;
            }
            REQUIRE(sum == Approx(1.0).margin(1e-5));  // t+1 float roundings of p <= 1
        }
    }
}

TEST_CASE("attention backward equals finite differences", "[kernels][attention][fd]") {
    const int B = 2, T = 5, C = 8, NH = 2;
    Vec qkv = uniform(long(B) * T * 3 * C, 61);
    const Vec w = uniform(long(B) * T * C, 62);
    Vec out(w.size()), att(long(B) * NH * T * T), scratch(att.size());
    for (bool fast : {true, false}) {
        INFO((fast ? "tiled path" : "reference path"));
        auto loss = [&] {
            if (fast)
                attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH);
            else
                attention_forward_reference(out.data(), att.data(), qkv.data(), B, T, C, NH);
            return weighted_sum(out, w);
        };
        loss();
        const Vec d0 = uniform(qkv.size(), 63);
        Vec d = d0;
        if (fast)
            attention_backward(d.data(), scratch.data(), w.data(), qkv.data(), att.data(), B, T, C, NH);
        else
            attention_backward_reference(d.data(), scratch.data(), w.data(), qkv.data(), att.data(), B, T, C, NH);
        REQUIRE_CLOSE(added(d, d0), numeric_grad(qkv, loss, kFdStep), kFdAtol, kFdRtol);
    }
}

TEST_CASE("attention is causal: a later token changes no earlier output", "[kernels][attention]") {
    const int B = 1, T = 70, C = 16, NH = 2;  // T > 64: the change crosses a block boundary
    const Vec qkv = uniform(long(B) * T * 3 * C, 71);
    Vec out1(long(T) * C), out2(out1.size()), att(long(NH) * T * T);
    for (bool fast : {true, false}) {
        auto fwd = fast ? attention_forward : attention_forward_reference;
        Vec changed = qkv;
        const int t_changed = 40;
        for (int c = 0; c < 3 * C; c++) changed[long(t_changed) * 3 * C + c] += 0.5f;
        fwd(out1.data(), att.data(), qkv.data(), B, T, C, NH);
        fwd(out2.data(), att.data(), changed.data(), B, T, C, NH);
        // Exact equality: masked probabilities are exactly 0, so no rounding can leak back.
        for (long i = 0; i < long(t_changed) * C; i++) REQUIRE(out1[i] == out2[i]);
        // And the test can see a change: the changed token and those after it differ.
        bool later_changed = false;
        for (long i = long(t_changed) * C; i < long(T) * C; i++) later_changed |= out1[i] != out2[i];
        REQUIRE(later_changed);
    }
}

TEST_CASE("attention: a NaN score makes its rows NaN, however the max treats it", "[kernels][attention]") {
    // The softmax's shift is lane_max_fast, which may skip a NaN; the NaN must still reach every
    // output row whose scores include it, through its exp and the row's sum.
    const int B = 1, T = 40, C = 16, NH = 2, hs = C / NH;
    Vec qkv = uniform(long(B) * T * 3 * C, 73);
    const int t_nan = 21;
    qkv[long(t_nan) * 3 * C + C] = std::numeric_limits<float>::quiet_NaN();  // head 0's key at t_nan
    Vec out(long(T) * C), att(long(NH) * T * T);
    attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH);
    for (int t = 0; t < T; t++)
        for (int i = 0; i < hs; i++) {
            REQUIRE(std::isnan(out[long(t) * C + i]) == (t >= t_nan));  // head 0: rows that see the key
            REQUIRE(std::isfinite(out[long(t) * C + hs + i]));          // head 1 never reads it
        }
}

TEST_CASE("attention rejects a head count that does not divide C", "[kernels][attention]") {
    Vec qkv(3 * 10), out(10), att(3);
    REQUIRE_THROWS_AS(attention_forward(out.data(), att.data(), qkv.data(), 1, 1, 10, 3), ss::Error);
}

// ---- crossentropy -----------------------------------------------------------------

TEST_CASE("crossentropy: probabilities sum to 1, loss is -log p, backward equals finite differences",
          "[kernels][crossentropy][fd]") {
    const int N = 3, V = 37;
    Vec logits = uniform(N * V, 81, -3.0f, 3.0f);
    const std::vector<int> targets = {0, 36, 17};
    Vec losses(N), probs(N * V);
    const float mean = crossentropy_forward(losses.data(), probs.data(), logits.data(), targets.data(), N, V, V);
    double total = 0.0;
    for (int n = 0; n < N; n++) {
        double sum = 0.0;
        for (int v = 0; v < V; v++) sum += probs[n * V + v];
        REQUIRE(sum == Approx(1.0).margin(1e-6));  // V float roundings of p <= 1
        // loss is computed as log S - (z_y - zmax), which equals -log p_y up to float rounding
        REQUIRE(losses[n] == Approx(-std::log(double(probs[n * V + targets[n]]))).epsilon(1e-6).margin(1e-6));
        total += losses[n];
    }
    REQUIRE(mean == Approx(total / N).epsilon(1e-6));

    // d(mean loss)/dlogits with dloss = 1/N, against differences of the mean loss.
    auto loss = [&] {
        crossentropy_forward(losses.data(), probs.data(), logits.data(), targets.data(), N, V, V);
        double s = 0.0;
        for (float l : losses) s += l;
        return s / N;
    };
    loss();
    const Vec d0 = uniform(N * V, 82);
    Vec d = d0;
    crossentropy_backward(d.data(), probs.data(), targets.data(), 1.0f / N, N, V, V);
    REQUIRE_CLOSE(added(d, d0), numeric_grad(logits, loss, kFdStep), kFdAtol, kFdRtol);
}

TEST_CASE("crossentropy stays finite for logits far apart", "[kernels][crossentropy]") {
    // p_target = e^-200 underflows to 0 in float: -log p would be inf; log-sum-exp gives 200.
    const Vec logits = {0.0f, 200.0f, -50.0f};
    const int target = 0;
    float loss, probs[3];
    const float mean = crossentropy_forward(&loss, probs, logits.data(), &target, 1, 3, 3);
    REQUIRE(mean == Approx(200.0).epsilon(1e-6));
    REQUIRE(probs[1] == 1.0f);
    REQUIRE_THROWS_AS([&] {  // a target outside the vocabulary is reported, not read out of bounds
        const int bad = 3;
        crossentropy_forward(&loss, probs, logits.data(), &bad, 1, 3, 3);
    }(), ss::Error);
}

TEST_CASE("crossentropy over a padded row: the padding columns are never predicted and get no gradient",
          "[kernels][crossentropy][vocab]") {
    // Rows of Vp = 40 logits of which the first V = 37 are words (model/config.h, padded_vocab).
    // The padding logits are large, so leaving them in the softmax would change every number.
    const int N = 3, V = 37, Vp = 40;
    const Vec words = uniform(N * V, 81, -3.0f, 3.0f);
    Vec padded(N * Vp);
    for (int n = 0; n < N; n++)
        for (int v = 0; v < Vp; v++) padded[n * Vp + v] = v < V ? words[n * V + v] : 50.0f;
    const std::vector<int> targets = {0, 36, 17};
    Vec losses(N), probs(N * V), losses_p(N), probs_p(N * Vp, -1.0f);
    const float mean = crossentropy_forward(losses.data(), probs.data(), words.data(), targets.data(), N, V, V);
    const float mean_p =
        crossentropy_forward(losses_p.data(), probs_p.data(), padded.data(), targets.data(), N, V, Vp);
    REQUIRE(mean_p == mean);  // the same operations on the same V numbers: bit for bit
    Vec d(N * Vp, 0.0f);
    crossentropy_backward(d.data(), probs_p.data(), targets.data(), 1.0f / N, N, V, Vp);
    Vec d_words(N * V, 0.0f);
    crossentropy_backward(d_words.data(), probs.data(), targets.data(), 1.0f / N, N, V, V);
    for (int n = 0; n < N; n++) {
        REQUIRE(losses_p[n] == losses[n]);
        for (int v = 0; v < Vp; v++) {
            INFO("row " << n << " column " << v);
            REQUIRE(probs_p[n * Vp + v] == (v < V ? probs[n * V + v] : 0.0f));
            REQUIRE(d[n * Vp + v] == (v < V ? d_words[n * V + v] : 0.0f));
        }
    }
}

TEST_CASE("vocabulary-parallel softmax: a rank of padding only adds nothing", "[kernels][crossentropy][vocab]") {
    // Two ranks of Vl = 4 columns over V = 3 words (Vp = 8): rank 0 holds 3 words and one
    // padding column, rank 1 only padding (row_max -inf, no terms).
    const int N = 1, Vl = 4;
    const Vec mine = {1.0f, 2.0f, 0.5f, 90.0f}, other = {70.0f, 80.0f, 90.0f, 99.0f};
    float m0, m1, s0, s1;
    Vec e0(Vl), e1(Vl);
    row_max(&m0, mine.data(), N, Vl, 3);
    row_max(&m1, other.data(), N, Vl, 0);
    REQUIRE(m0 == 2.0f);
    REQUIRE(m1 == -INFINITY);
    const float m = std::max(m0, m1);  // tp.max_over_ranks
    exp_shifted(e0.data(), &s0, mine.data(), &m, N, Vl, 3);
    exp_shifted(e1.data(), &s1, other.data(), &m, N, Vl, 0);
    REQUIRE(e0[3] == 0.0f);
    REQUIRE(s1 == 0.0f);
    for (float e : e1) REQUIRE(e == 0.0f);
    const double want = std::exp(-1.0) + 1.0 + std::exp(-1.5);
    REQUIRE(s0 == Approx(want).epsilon(1e-6));  // three float exps and two adds
}

// ---- encoder and residual -------------------------------------------------------

TEST_CASE("encoder adds token and position rows; backward equals finite differences", "[kernels][encoder][fd]") {
    const int B = 2, T = 3, C = 4, V = 5;
    const std::vector<int> tokens = {1, 4, 1, 0, 1, 2};  // token 1 three times: its gradients must add up
    Vec wte = uniform(V * C, 91), wpe = uniform(T * C, 92);
    const Vec w = uniform(B * T * C, 93);
    Vec out(B * T * C);
    encoder_forward(out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
    REQUIRE(out[(1 * T + 2) * C + 3] == wte[2 * C + 3] + wpe[2 * C + 3]);  // b=1, t=2 reads token 2
    auto loss = [&] {
        encoder_forward(out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
        return weighted_sum(out, w);
    };
    const Vec dwte0 = uniform(V * C, 94), dwpe0 = uniform(T * C, 95);
    Vec dwte = dwte0, dwpe = dwpe0;
    encoder_backward(dwte.data(), dwpe.data(), w.data(), tokens.data(), B, T, C);
    // linear: no truncation error
    REQUIRE_CLOSE(added(dwte, dwte0), numeric_grad(wte, loss, kFdStep), kFdAtol, kFdRtol);
    REQUIRE_CLOSE(added(dwpe, dwpe0), numeric_grad(wpe, loss, kFdStep), kFdAtol, kFdRtol);
    REQUIRE(dwte[3 * C] == dwte0[3 * C]);  // token 3 never appears: its row is untouched
}

TEST_CASE("residual adds, in place too, and passes the gradient to both branches", "[kernels][residual]") {
    const long n = 37;
    Vec a = uniform(n, 101), b = uniform(n, 102), out(n);
    residual_forward(out.data(), a.data(), b.data(), n);
    for (long i = 0; i < n; i++) REQUIRE(out[i] == a[i] + b[i]);  // one float add: exact same rounding
    Vec a_inplace = a;
    residual_forward(a_inplace.data(), a_inplace.data(), b.data(), n);  // out aliases a
    REQUIRE(a_inplace == out);
    const Vec dout = uniform(n, 103), da0 = uniform(n, 104), db0 = uniform(n, 105);
    Vec da = da0, db = db0;
    residual_backward(da.data(), db.data(), dout.data(), n);
    for (long i = 0; i < n; i++) {
        REQUIRE(da[i] == da0[i] + dout[i]);
        REQUIRE(db[i] == db0[i] + dout[i]);
    }
    add_inplace(da.data(), dout.data(), n);
    REQUIRE(da[5] == (da0[5] + dout[5]) + dout[5]);

    // add_bias_residual is add_bias then add_inplace in one pass: the same bits (N x C with
    // C = 37, not a whole number of vectors).
    const int N = 5, C = 37;
    const Vec y0 = uniform(N * C, 106), bias = uniform(C, 107), x = uniform(N * C, 108);
    Vec two_passes = y0, one_pass = y0;
    add_bias(two_passes.data(), bias.data(), N, C);
    add_inplace(two_passes.data(), x.data(), long(N) * C);
    add_bias_residual(one_pass.data(), bias.data(), x.data(), N, C);
    REQUIRE(std::memcmp(two_passes.data(), one_pass.data(), two_passes.size() * sizeof(float)) == 0);
}

// ---- adamw ---------------------------------------------------------------------------

TEST_CASE("adamw: the first step by hand, and two steps against the formula in double", "[kernels][adamw]") {
    AdamWParams hp;
    hp.lr = 0.1f;
    hp.beta1 = 0.9f;
    hp.beta2 = 0.95f;
    hp.eps = 1e-8f;
    hp.weight_decay = 0.1f;
    {
        // Step 1: m = 0.1 g, v = 0.05 g^2, so mhat = g and vhat = g^2, and
        // p = 1 - 0.1 * (0.5 / (0.5 + 1e-8) + 0.1 * 1) = 0.89 (to 2e-9).
        float p = 1.0f, m = 0.0f, v = 0.0f;
        const float g = 0.5f;
        adamw_update(&p, &g, &m, &v, 1, 1, hp);
        REQUIRE(p == Approx(0.89).margin(1e-7));  // float p near 1: ulp 6e-8
        REQUIRE(m == Approx(0.05).margin(1e-9));
        REQUIRE(v == Approx(0.0125).margin(1e-9));
    }
    // Two steps on random values against the header formula in double.
    const long n = 37;
    Vec p = uniform(n, 111), g1 = uniform(n, 112), g2 = uniform(n, 113), m(n, 0.0f), v(n, 0.0f);
    std::vector<double> pd(p.begin(), p.end()), md(n, 0.0), vd(n, 0.0);
    for (int t = 1; t <= 2; t++) {
        const Vec& g = t == 1 ? g1 : g2;
        adamw_update(p.data(), g.data(), m.data(), v.data(), n, t, hp);
        for (long i = 0; i < n; i++) {
            const double b1 = hp.beta1, b2 = hp.beta2;
            md[i] = b1 * md[i] + (1 - b1) * g[i];
            vd[i] = b2 * vd[i] + (1 - b2) * double(g[i]) * g[i];
            const double mhat = md[i] / (1 - std::pow(b1, t)), vhat = vd[i] / (1 - std::pow(b2, t));
            pd[i] -= double(hp.lr) * (mhat / (std::sqrt(vhat) + hp.eps) + double(hp.weight_decay) * pd[i]);
        }
    }
    // Float rounding of O(1) values over two steps: a few ulp; 1e-6 is ~10 ulp of 1.
    // Dropping the decay or the bias correction moves p by >= 1e-3.
    REQUIRE_CLOSE(p, pd, 1e-6, 1e-6);
    REQUIRE_CLOSE(m, md, 1e-7, 1e-6);
    REQUIRE_CLOSE(v, vd, 1e-8, 1e-6);
    float q = 1.0f, gq = 1.0f, mq = 0.0f, vq = 0.0f;
    REQUIRE_THROWS_AS(adamw_update(&q, &gq, &mq, &vq, 1, 0, hp), ss::Error);  // t is 1-based
}
