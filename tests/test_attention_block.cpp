// test_attention_block.cpp — kernels/cpu/attention_block.h: the register-tile
// path (kernels/cpu/tile.h) of the online-softmax block kernels (ring attention's math) against the plain loops
// (*_reference), on every kind of block the ring meets: the diagonal, a whole
// earlier block, one the mask cuts part-way (zig-zag chunks of unequal
// position), one wholly in the future, and several folded in a row.
//
// The tolerance, derived. Both sides are fp32 and compute the same sums in
// another order: the tiles' dot products (FMA chains of 8 or 16 lanes, as the
// build's vector width gives; until 2026-12-02 OpenBLAS sgemm, whose kernel
// is chosen at run time per CPU) against one running sum per element; lane sums; exp_fast (<= 0.7 ulp, simd.h) against std::exp (<= 0.5
// ulp). A reordered fp32 sum of n terms moves by about sqrt(n) u of the terms'
// root-sum-square, u = 2^-24 = 6.0e-8 (rounding errors as a random walk,
// Higham 2002, sec. 2.8 and 4.2; tests/equivalence.h item 1 uses the same
// model). An element of a result comes out of at most D = 4 such sums in a
// row (forward: scores over hs, softmax sum over Tk, P V over Tk; backward:
// scores and dP over hs, then dQ over Tk or dK, dV over Tq, with the fold over
// blocks adding one), the longest with n = 150 terms here, plus two exp
// roundings (~1.2 ulp): sqrt(150) sqrt(4 + 1) u = 12.2 x 2.2 x 6.0e-8 = 1.6e-6
// of a tensor's scale. kBlockTol = 2e-5 is about ten times that, for the tail
// of the random walk and for the cancellation in dS = P (dP - D), and holds
// whatever order the tiles or an sgemm take. A wrong index, a missed rescale or a
// dropped mask shows at 1e-2 and above (the last case checks that it does).
// Measured with sgemm (2026-12-02, AVX-512 Xeon, -march=native and -march=x86-64-v3 (AVX2) builds, OpenBLAS
// 0.3.21 with its Prescott, Haswell, Zen and SkylakeX kernels via OPENBLAS_CORETYPE): at most 9.7e-7 (0.048 of
// kBlockTol, dK/dV of the zig-zag case). With the tiles (AMD EPYC, AVX-512; native and x86-64-v3 builds): at
// most 0.056 of kBlockTol (dK/dV, "the mask cuts the block part-way"). Run with -s to see the ratio per case.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/cpu/attention_block.h"
#include "test_values.h"

using namespace ss::cpu;
using Vec = std::vector<float>;

namespace {

/// max |fast - ref| over max |ref|, per tensor (1. in tests/equivalence.h); see the file comment.
constexpr double kBlockTol = 2e-5;

using ss::test::uniform;  // tests/test_values.h

double rel_err(const Vec& got, const Vec& want) {
    REQUIRE(got.size() == want.size());
    double err = 0, scale = 1e-30;
    for (size_t i = 0; i < want.size(); ++i) {
        if (std::isnan(got[i]) != std::isnan(want[i])) return INFINITY;
        if (std::isnan(want[i])) continue;
        err = std::max(err, std::fabs(double(got[i]) - want[i]));
        scale = std::max(scale, std::fabs(double(want[i])));
    }
    return err / scale;
}

// One key block: Tk keys at position k_pos, in a packed [k | v] buffer (row stride 2C).
struct KeyBlock {
    int Tk, k_pos;
    Vec kv;
    std::vector<int> visible;  // the mask, when not causal_visible(Tq, Tk, q_pos, k_pos): a ring step's staircase
};

// A whole ring step's mask, counted here from positions (as ring_attention.cpp
// counts it from the pieces): query rows are the runs (pos, len) of q_runs in
// order, key rows those of k_runs; row i sees the keys at or before its position.
std::vector<int> staircase(const std::vector<std::pair<int, int>>& q_runs,
                           const std::vector<std::pair<int, int>>& k_runs) {
    std::vector<int> v;
    for (const auto& q : q_runs)
        for (int i = 0; i < q.second; ++i) {
            int n = 0;
            for (const auto& k : k_runs)
                for (int j = 0; j < k.second; ++j) n += k.first + j <= q.first + i;
            v.push_back(n);
        }
    return v;
}

// Queries (Tq rows at position q_pos, [q | k | v] rows of 3C) folded over the key
// blocks in order, then backward over the same blocks.
struct Run {
    Vec out, lse, dq, dkv_all;
};
Run run(bool fast, const Vec& qkv, const Vec& dout, const std::vector<KeyBlock>& blocks, int B, int Tq, int q_pos,
        int C, int NH) {
    auto fwd = fast ? attention_block_forward : attention_block_forward_reference;
    auto bwd = [fast](auto... args) {  // both add (+=); overwrite has its own case below
        return fast ? attention_block_backward(args..., false) : attention_block_backward_reference(args...);
    };
    Run r{Vec(size_t(B) * Tq * C), Vec(size_t(B) * NH * Tq), uniform(long(B) * Tq * 3 * C, 71), {}};
    Vec m(r.lse.size()), l(r.lse.size()), D(r.lse.size());
    attention_block_init(m.data(), l.data(), r.out.data(), B, Tq, C, NH);
    auto mask = [&](const KeyBlock& kb) {
        return kb.visible.empty() ? causal_visible(Tq, kb.Tk, q_pos, kb.k_pos) : kb.visible;
    };
    for (const KeyBlock& kb : blocks)
        fwd(m.data(), l.data(), r.out.data(), qkv.data(), 3 * C, kb.kv.data(), kb.kv.data() + C, 2 * C, B, Tq, kb.Tk,
            mask(kb).data(), C, NH);
    attention_block_finish(r.out.data(), r.lse.data(), m.data(), l.data(), r.out.data(), B, Tq, C, NH);
    attention_block_delta(D.data(), dout.data(), r.out.data(), B, Tq, C, NH);
    for (size_t j = 0; j < blocks.size(); ++j) {
        const KeyBlock& kb = blocks[j];
        Vec dkv = uniform(long(kb.kv.size()), 80 + j);  // gradients start non-zero: the kernels add (+=)
        bwd(r.dq.data(), dkv.data(), dkv.data() + C, 2 * C, dout.data(), qkv.data(), 3 * C, kb.kv.data(), kb.kv.data() + C, 2 * C,
            r.lse.data(), D.data(), B, Tq, kb.Tk, mask(kb).data(), C, NH);
        r.dkv_all.insert(r.dkv_all.end(), dkv.begin(), dkv.end());
    }
    return r;
}

KeyBlock key_block(int B, int Tk, int k_pos, int C, uint64_t seed) {
    return KeyBlock{Tk, k_pos, uniform(long(B) * Tk * 2 * C, seed, -2.0f, 2.0f)};
}

}  // namespace

TEST_CASE("attention block tiled path equals the plain loops", "[kernels][attention_block]") {
    struct Case {
        const char* what;
        int B, Tq, q_pos, C, NH;
        std::vector<std::pair<int, int>> blocks;  // (Tk, k_pos) in the order they are folded
    };
    // Tq = 150 and 17: the last row tile (6 rows) partial. hs = 12: no tile width divides it, so
    // every product's result goes through the staging tile (tile_product_into); 16: straight into
    // its rows with AVX2's 16-wide tiles, staged with AVX-512's 32; 32: straight with either.
    // Every path the build can select, on each machine.
    const std::vector<Case> cases = {
        {"diagonal", 2, 150, 0, 48, 3, {{150, 0}}},
        {"an earlier whole block, then the diagonal", 2, 17, 40, 48, 4, {{40, 0}, {17, 40}}},
        {"the mask cuts the block part-way", 1, 150, 100, 32, 2, {{150, 30}}},
        {"a block in the future computes nothing", 1, 17, 0, 32, 2, {{17, 0}, {20, 17}}},
        {"zig-zag's rank 0 of SP 2: chunks 0 and 3 against 1 and 2", 2, 24, 72, 32, 2,
         {{24, 72}, {24, 24}, {24, 48}, {24, 0}}},
        {"hs = 32: an earlier block, then the diagonal", 2, 41, 30, 64, 2, {{30, 0}, {41, 30}}},
    };
    for (const Case& c : cases) {
        INFO(c.what << ": B=" << c.B << " Tq=" << c.Tq << " q_pos=" << c.q_pos << " C=" << c.C << " NH=" << c.NH);
        const Vec qkv = uniform(long(c.B) * c.Tq * 3 * c.C, 61, -2.0f, 2.0f);
        const Vec dout = uniform(long(c.B) * c.Tq * c.C, 62);
        std::vector<KeyBlock> blocks;
        for (size_t j = 0; j < c.blocks.size(); ++j)
            blocks.push_back(key_block(c.B, c.blocks[j].first, c.blocks[j].second, c.C, 90 + j));
        const Run f = run(true, qkv, dout, blocks, c.B, c.Tq, c.q_pos, c.C, c.NH);
        const Run r = run(false, qkv, dout, blocks, c.B, c.Tq, c.q_pos, c.C, c.NH);
        const double e_out = rel_err(f.out, r.out), e_lse = rel_err(f.lse, r.lse), e_dq = rel_err(f.dq, r.dq),
                     e_dkv = rel_err(f.dkv_all, r.dkv_all);
        UNSCOPED_INFO("worst/kBlockTol: out " << e_out / kBlockTol << " lse " << e_lse / kBlockTol << " dq "
                                              << e_dq / kBlockTol << " dkv " << e_dkv / kBlockTol);
        CHECK(e_out <= kBlockTol);
        CHECK(e_lse <= kBlockTol);
        CHECK(e_dq <= kBlockTol);
        CHECK(e_dkv <= kBlockTol);
    }
}

TEST_CASE("attention block: a whole zig-zag ring step in one call, its staircase mask", "[kernels][attention_block]") {
    // SP 2 zig-zag, chunks of Tc = 13 (no tile divides it): rank 0 holds chunks 0 and 3
    // (positions 0.., 39..), rank 1 chunks 1 and 2 (13.., 26..). Each step is one call
    // with the rows of both my chunks against both held chunks; the mask is a staircase
    // (ring_attention.cpp). The fast path must agree with the plain loops on it.
    const int B = 2, Tc = 13, Tq = 2 * Tc, C = 32, NH = 2;
    const std::vector<std::pair<int, int>> r0 = {{0, Tc}, {3 * Tc, Tc}}, r1 = {{Tc, Tc}, {2 * Tc, Tc}};
    struct Step {
        const char* what;
        std::vector<std::pair<int, int>> mine;
        std::vector<std::vector<std::pair<int, int>>> held;  // the blocks folded, in ring order
    };
    const std::vector<Step> steps = {{"rank 0: its own block, then rank 1's", r0, {r0, r1}},
                                     {"rank 1: its own block, then rank 0's", r1, {r1, r0}}};
    for (const Step& st : steps) {
        INFO(st.what);
        const Vec qkv = uniform(long(B) * Tq * 3 * C, 63, -2.0f, 2.0f), dout = uniform(long(B) * Tq * C, 64);
        std::vector<KeyBlock> blocks;
        for (size_t j = 0; j < st.held.size(); ++j) {
            KeyBlock kb = key_block(B, Tq, 0, C, 95 + j);
            kb.visible = staircase(st.mine, st.held[j]);
            blocks.push_back(kb);
        }
        const Run f = run(true, qkv, dout, blocks, B, Tq, 0, C, NH), r = run(false, qkv, dout, blocks, B, Tq, 0, C, NH);
        const double e_out = rel_err(f.out, r.out), e_dq = rel_err(f.dq, r.dq), e_dkv = rel_err(f.dkv_all, r.dkv_all);
        UNSCOPED_INFO("worst/kBlockTol: out " << e_out / kBlockTol << " dq " << e_dq / kBlockTol << " dkv "
                                              << e_dkv / kBlockTol);
        CHECK(e_out <= kBlockTol);
        CHECK(rel_err(f.lse, r.lse) <= kBlockTol);
        CHECK(e_dq <= kBlockTol);
        CHECK(e_dkv <= kBlockTol);
    }
}

TEST_CASE("attention block backward, overwrite: the bits of adding into zeros, on every row",
          "[kernels][attention_block]") {
    // A ring's first step (its own block) writes dq and dkv instead of adding into zeroed
    // ones. Each element is one tile's sum, started from 0 either way, so the bits must be
    // the same: memcmp, whatever the outputs held before. hs = 12 goes through the staging
    // tile (no tile width divides it), 16 and 32 straight into the rows; Tq = 17 and 26
    // leave a partial row tile; the zig-zag staircase is rank 0's own step at SP 2.
    struct Case {
        const char* what;
        int B, Tq, C, NH;
        std::vector<int> visible;  // empty: causal, the block against itself
    };
    const std::vector<Case> cases = {{"causal, hs 12", 2, 17, 24, 2, {}},
                                     {"causal, hs 16", 1, 40, 32, 2, {}},
                                     {"causal, hs 32", 2, 26, 64, 2, {}},
                                     {"zig-zag own step, hs 16", 2, 26, 32, 2, staircase({{0, 13}, {39, 13}},
                                                                                         {{0, 13}, {39, 13}})}};
    for (const Case& c : cases) {
        INFO(c.what);
        const int Tq = c.Tq, Tk = c.Tq, C = c.C, NH = c.NH, B = c.B;
        const std::vector<int> visible = c.visible.empty() ? causal_visible(Tq, Tk, 0, 0) : c.visible;
        const Vec qkv = uniform(long(B) * Tq * 3 * C, 21, -2.0f, 2.0f);
        const Vec kv = uniform(long(B) * Tk * 2 * C, 22, -2.0f, 2.0f), dout = uniform(long(B) * Tq * C, 23);
        // lse and D from a forward over the block, as the ring has them
        Vec m(size_t(B) * NH * Tq), l(m.size()), lse(m.size()), D(m.size()), out(size_t(B) * Tq * C);
        attention_block_init(m.data(), l.data(), out.data(), B, Tq, C, NH);
        attention_block_forward(m.data(), l.data(), out.data(), qkv.data(), 3 * C, kv.data(), kv.data() + C, 2 * C, B, Tq, Tk,
                                visible.data(), C, NH);
        attention_block_finish(out.data(), lse.data(), m.data(), l.data(), out.data(), B, Tq, C, NH);
        attention_block_delta(D.data(), dout.data(), out.data(), B, Tq, C, NH);
        Vec dq_add(size_t(B) * Tq * 3 * C, 0.0f), dkv_add(kv.size(), 0.0f);
        Vec dq_put = uniform(long(dq_add.size()), 24), dkv_put = uniform(long(dkv_add.size()), 25);  // garbage first
        attention_block_backward(dq_add.data(), dkv_add.data(), dkv_add.data() + C, 2 * C, dout.data(), qkv.data(), 3 * C, kv.data(),
                                 kv.data() + C, 2 * C, lse.data(), D.data(), B, Tq, Tk, visible.data(), C, NH, false);
        attention_block_backward(dq_put.data(), dkv_put.data(), dkv_put.data() + C, 2 * C, dout.data(), qkv.data(), 3 * C, kv.data(),
                                 kv.data() + C, 2 * C, lse.data(), D.data(), B, Tq, Tk, visible.data(), C, NH, true);
        for (int row = 0; row < B * Tq; ++row)  // dq_rows is the q part of [q | k | v] rows: only it is written
            REQUIRE(std::memcmp(dq_put.data() + long(row) * 3 * C, dq_add.data() + long(row) * 3 * C,
                                sizeof(float) * size_t(C)) == 0);
        REQUIRE(std::memcmp(dkv_put.data(), dkv_add.data(), sizeof(float) * dkv_add.size()) == 0);
    }
}

TEST_CASE("attention block: q from its own plane, dk|dv into [q | k | v] rows: the same bits", "[kernels][attention_block]") {
    // Ring and blockwise attention read q from c_attn's q plane (stride C) and k|v from its
    // k|v plane (2C); one rank writes dk|dv straight into dqkv's rows (3C). The strides only
    // move where a row is read or written, so the results are the bits of the interleaved form.
    for (int C : {24, 32, 64}) {
        const int B = 2, T = 26, NH = 2;
        INFO("C " << C);
        const std::vector<int> visible = causal_visible(T, T, 0, 0);
        const Vec qkv = uniform(long(B) * T * 3 * C, 31, -2.0f, 2.0f), dout = uniform(long(B) * T * C, 32);
        Vec planes(qkv.size());
        for (long r = 0; r < long(B) * T; ++r) {  // q plane, then k|v plane
            std::copy(qkv.begin() + r * 3 * C, qkv.begin() + r * 3 * C + C, planes.begin() + r * C);
            std::copy(qkv.begin() + r * 3 * C + C, qkv.begin() + (r + 1) * 3 * C,
                      planes.begin() + long(B) * T * C + r * 2 * C);
        }
        const float* q = planes.data();
        const float* kv = planes.data() + long(B) * T * C;
        Vec m(size_t(B) * NH * T), l(m.size()), lse(m.size()), lse2(m.size()), D(m.size());
        Vec out(size_t(B) * T * C), out2(out.size());
        attention_block_init(m.data(), l.data(), out.data(), B, T, C, NH);
        attention_block_forward(m.data(), l.data(), out.data(), qkv.data(), 3 * C, qkv.data() + C, qkv.data() + 2 * C,
                                3 * C, B, T, T, visible.data(), C, NH);
        attention_block_finish(out.data(), lse.data(), m.data(), l.data(), out.data(), B, T, C, NH);
        attention_block_init(m.data(), l.data(), out2.data(), B, T, C, NH);
        attention_block_forward(m.data(), l.data(), out2.data(), q, C, kv, kv + C, 2 * C, B, T, T, visible.data(), C,
                                NH);
        attention_block_finish(out2.data(), lse2.data(), m.data(), l.data(), out2.data(), B, T, C, NH);
        REQUIRE(std::memcmp(out.data(), out2.data(), sizeof(float) * out.size()) == 0);
        REQUIRE(std::memcmp(lse.data(), lse2.data(), sizeof(float) * lse.size()) == 0);
        attention_block_delta(D.data(), dout.data(), out.data(), B, T, C, NH);
        Vec d1(qkv.size(), 0.0f), d2(qkv.size(), 0.0f);
        attention_block_backward(d1.data(), d1.data() + C, d1.data() + 2 * C, 3 * C, dout.data(), qkv.data(), 3 * C,
                                 qkv.data() + C, qkv.data() + 2 * C, 3 * C, lse.data(), D.data(), B, T, T,
                                 visible.data(), C, NH, true);
        attention_block_backward(d2.data(), d2.data() + C, d2.data() + 2 * C, 3 * C, dout.data(), q, C, kv, kv + C,
                                 2 * C, lse.data(), D.data(), B, T, T, visible.data(), C, NH, true);
        REQUIRE(std::memcmp(d1.data(), d2.data(), sizeof(float) * d1.size()) == 0);
    }
}

TEST_CASE("attention block backward, overwrite: a block that leaves a row unwritten is refused",
          "[kernels][attention_block]") {
    const int B = 1, Tq = 4, Tk = 4, C = 8, NH = 1;
    const Vec qkv = uniform(long(B) * Tq * 3 * C, 1), kv = uniform(long(B) * Tk * 2 * C, 2);
    const Vec dout = uniform(long(B) * Tq * C, 3), lse(size_t(B) * NH * Tq, 1.0f), D(lse.size(), 0.5f);
    Vec dq(size_t(B) * Tq * 3 * C), dkv(kv.size());
    const std::vector<int> first_sees_none = {0, 1, 2, 4}, last_key_unseen = {1, 2, 3, 3};
    for (const std::vector<int>& v : {first_sees_none, last_key_unseen})
        REQUIRE_THROWS_WITH(attention_block_backward(dq.data(), dkv.data(), dkv.data() + C, 2 * C, dout.data(), qkv.data(), 3 * C,
                                                     kv.data(), kv.data() + C, 2 * C, lse.data(), D.data(), B, Tq, Tk,
                                                     v.data(), C, NH, true),
                            Catch::Contains("every query must see a key and every key be seen") &&
                                Catch::Contains("add into zeroed ones instead"));
}

TEST_CASE("attention block: a mask that is not a growing prefix is refused, saying why", "[kernels][attention_block]") {
    const int B = 1, Tq = 4, Tk = 4, C = 8, NH = 1;
    const Vec qkv = uniform(long(B) * Tq * 3 * C, 1), kv = uniform(long(B) * Tk * 2 * C, 2);
    Vec m(size_t(B) * NH * Tq), l(m.size()), acc(size_t(B) * Tq * C);
    attention_block_init(m.data(), l.data(), acc.data(), B, Tq, C, NH);
    const std::vector<int> shrinking = {1, 3, 2, 4}, too_many = {1, 2, 3, 5};
    REQUIRE_THROWS_WITH(attention_block_forward(m.data(), l.data(), acc.data(), qkv.data(), 3 * C, kv.data(), kv.data() + C,
                                                2 * C, B, Tq, Tk, shrinking.data(), C, NH),
                        Catch::Contains("visible[2] = 2") && Catch::Contains("no shorter"));
    REQUIRE_THROWS_WITH(attention_block_forward(m.data(), l.data(), acc.data(), qkv.data(), 3 * C, kv.data(), kv.data() + C,
                                                2 * C, B, Tq, Tk, too_many.data(), C, NH),
                        Catch::Contains("visible[3] = 5") && Catch::Contains("Tk 4"));
}

TEST_CASE("attention block: a block in the future leaves everything as it was", "[kernels][attention_block]") {
    const int B = 1, Tq = 8, C = 16, NH = 2;
    const Vec qkv = uniform(long(B) * Tq * 3 * C, 5), dout = uniform(long(B) * Tq * C, 6);
    const KeyBlock kb = key_block(B, 8, 8, C, 7);  // keys 8..15, queries 0..7: all masked
    Vec m(size_t(B) * NH * Tq, 0.5f), l(m.size(), 2.0f), acc = uniform(long(B) * Tq * C, 8);
    const Vec m0 = m, l0 = l, acc0 = acc;
    const std::vector<int> none = causal_visible(Tq, kb.Tk, 0, kb.k_pos);
    attention_block_forward(m.data(), l.data(), acc.data(), qkv.data(), 3 * C, kb.kv.data(), kb.kv.data() + C, 2 * C, B,
                            Tq, kb.Tk, none.data(), C, NH);
    REQUIRE(m == m0);
    REQUIRE(l == l0);
    REQUIRE(acc == acc0);
    Vec dq = uniform(long(B) * Tq * 3 * C, 9), dkv = uniform(long(kb.kv.size()), 10);
    const Vec dq0 = dq, dkv0 = dkv;
    attention_block_backward(dq.data(), dkv.data(), dkv.data() + C, 2 * C, dout.data(), qkv.data(), 3 * C, kb.kv.data(),
                             kb.kv.data() + C, 2 * C, l.data(), m.data(), B, Tq, kb.Tk, none.data(), C, NH, false);
    REQUIRE(dq == dq0);
    REQUIRE(dkv == dkv0);
}

TEST_CASE("attention block test can fail: a wrong position is far outside kBlockTol", "[kernels][attention_block]") {
    // The same block folded with the key block one position late (one key fewer seen
    // per query) must differ by far more than the tolerance, or the test proves nothing.
    const int B = 1, Tq = 40, C = 32, NH = 2;
    const Vec qkv = uniform(long(B) * Tq * 3 * C, 11, -2.0f, 2.0f), dout = uniform(long(B) * Tq * C, 12);
    const std::vector<KeyBlock> right = {key_block(B, Tq, 0, C, 13)};
    std::vector<KeyBlock> wrong = right;
    wrong[0].k_pos = 1;
    const Run a = run(true, qkv, dout, right, B, Tq, 0, C, NH), b = run(false, qkv, dout, wrong, B, Tq, 0, C, NH);
    CHECK(rel_err(a.out, b.out) > 100 * kBlockTol);
}

TEST_CASE("attention_block_forward: a NaN score makes its rows NaN, however the max treats it", "[attention_block]") {
    // The online softmax's block max is lane_max_fast, which may skip a NaN; the NaN must
    // still reach every row that sees it, through its exp and the row's sum l.
    const int B = 1, T = 30, C = 16, NH = 2, hs = C / NH, t_nan = 11;
    Vec qkv = uniform(long(B) * T * 3 * C, 75);
    qkv[long(t_nan) * 3 * C + C] = NAN;  // head 0's key at t_nan
    Vec m(size_t(B) * NH * T), l(m.size()), out(size_t(B) * T * C), lse(m.size());
    const std::vector<int> visible = causal_visible(T, T, 0, 0);
    attention_block_init(m.data(), l.data(), out.data(), B, T, C, NH);
    attention_block_forward(m.data(), l.data(), out.data(), qkv.data(), 3 * C, qkv.data() + C, qkv.data() + 2 * C, 3 * C,
                            B, T, T, visible.data(), C, NH);
    attention_block_finish(out.data(), lse.data(), m.data(), l.data(), out.data(), B, T, C, NH);
    for (int t = 0; t < T; t++)
        for (int i = 0; i < hs; i++) {
            REQUIRE(std::isnan(out[long(t) * C + i]) == (t >= t_nan));  // head 0: rows that see the key
            REQUIRE(std::isfinite(out[long(t) * C + hs + i]));          // head 1 never reads it
        }
}
