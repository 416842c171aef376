// equivalence.h — the check every strategy's test makes: a parallel run and
// a one-rank run on the same global batch train the same model, and the
// tolerances that say "the same", each derived here (docs/reliability.md,
// "Equivalence tolerances", has the table).
//
// Two runs of one layout and of another add the same fp32 products in another
// order (per-rank partial sums, ring reductions, shard and slice boundaries,
// OpenBLAS kernels and blockings that differ with the matrix shapes and with
// the CPU: AVX-512 and AVX2 machines take different sgemm kernels). Each
// reordered sum differs by rounding only. What that allows, check by check:
//
//  1. Gradients after one step (tight). u = 2^-24 = 6.0e-8 is fp32's unit
//     roundoff. A reordered sum of n terms moves by about sqrt(n) u of the
//     terms' root-sum-square (rounding errors as a random walk, Higham,
//     "Accuracy and Stability of Numerical Algorithms", 2002, sec. 4.2 and
//     2.8), and a gradient element comes out of D ~ 6L + 6 such reductions
//     in a row (per block: two LayerNorms, attention's two products and its
//     softmax, four matmuls' input and weight gradients). For the test
//     models (n <= B T = 512 tokens or C = 128 channels, L <= 4, D <= 30):
//     sqrt(n) sqrt(D) u = 22.6 x 5.5 x 6.0e-8 = 7.5e-6 of a tensor's scale.
//     So kGradTol = 1e-5: the largest |difference| in each tensor over the
//     largest |gradient| of that tensor. Measured (tiny, L = 4, five mpirun
//     layouts against one rank): at most 1.3e-6, with OpenBLAS's Prescott
//     and Zen kernels, in -march=native (AVX-512) and x86-64-v3 (AVX2) builds
//     alike (docs/reliability.md).
//
//  2. Parameters after K AdamW steps (loose, and why). Adam's update of an
//     element is u = m^/(sqrt(v^) + eps); at step 1 it is u(g) = g/(|g| + eps),
//     whose slope du/dg = eps/(|g| + eps)^2 is 1/eps = 1e8 at g = 0 and
//     1/(4 eps) at |g| = eps. So an element whose gradient happens to be of the
//     size of eps turns a rounding difference far inside 1. into a visible
//     step difference. That is what failed on an AVX2 machine: in
//     --pp 2 --sp 2 --recompute full, elements such as h.2.attn.c_proj.weight[1024]
//     (g = -8.9e-9 against the tensor's max of 3.7e-2) get gradients 5e-10 apart
//     in two layouts, 1e-8 of the tensor's scale, and parameters 1.1e-5 to
//     3.0e-5 apart after 10 steps (seen here with OpenBLAS's Zen kernels, in both builds),
//     against an absolute bound of 1e-5 that no derivation gave. With
//     eps = 1e-8 such elements exist in every model, so the only bound that
//     holds for every element is twice Adam's largest step, per step:
//         |u_t| <= B_t = (1-b1)/(1-b1^t) * sqrt(1-b2^t)/sqrt(1-b2)
//                        * sqrt(sum_{j<t} (b1^2/b2)^j)     (Cauchy-Schwarz
//     on m_t = (1-b1) sum b1^(t-i) g_i against v_t = (1-b2) sum b2^(t-i) g_i^2,
//     then the bias corrections; B_1 = 1), and decoupled weight decay only
//     shrinks a difference (theta (1 - lr wd)), so
//         |theta_par - theta_one| <= lr * sum_{t=1..K} 2 B_t.
//     eps enters only where it is large: |u(g) - u(g')| <= (1 + B_t)|g - g'|/eps,
//     which at eps = 1e-8 is never the smaller term (|g - g'| reaches 1e-7 of
//     the tensor's max |g|, ~1e-9 and more). This bound catches a wrong or
//     garbage shard, not a small drift: the tight checks of the step are 1 and 3.
//
//  3. Losses over the steps (stated). To first order a loss moves by
//     sum_i |g_i| |d theta_i|, and Adam's update of element i moves by at most
//     ~2(1 + B_t)|dg_i|/|g_i| (relative error of its gradient; 2(1 + B_t) where
//     that exceeds 1), so |g_i| |d theta_i| <= 2 (1 + B_t) lr |dg_i|: the loss after k
//     steps differs by at most lr sum_{t<k} 2 (1 + B_t) ||dg_t||_1. The
//     elements of 2 hardly enter: their |g_i| is ~eps. Measured ||dg_1||_1 is at
//     most 1.5e-4 (the same five layouts, L1 over all 220k elements), so after
//     10 steps the bound is ~1e-3 x 10 x 4 x 1.5e-4 = 6e-6, and the losses
//     differed by at most 4.8e-7; kLossTol = 1e-4 on losses of ~5 (2e-5
//     relative) leaves room for the second-order terms over 10 steps.
//
//  4. bf16 losses (--dtype bf16: bf16 parameters and gradients, fp32 master
//     weights). A bf16 gradient is rounded to 8 significant bits, u = 2^-8 =
//     3.9e-3, at places that differ between layouts (each rank's partial sum,
//     then the reduced sum), so |dg_i| ~ u |g_i|. In the sum of 3. the
//     rounding errors have random signs, so they add as a random walk:
//     per step lr 2 (1 + B_t) u ||g||_2 = 1e-3 x 4 x 3.9e-3 x 2.9 = 4.5e-5 for
//     tiny (||g_1||_2 = 2.9, measured), 4e-4 over 9 steps. kBf16LossTol = 2e-3
//     is five times that, for the tail of a random walk. Measured: 4.2e-5
//     after 4 steps of DP 4 against one rank.
#pragma once

#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <string>

#include "model/safetensors.h"
#include "train/train.h"

/// A path in the build folder for a test's files.
inline std::string test_file(const std::string& name) { return std::string(SS_BINARY_DIR) + "/" + name; }

/// First-step gradients: max |a - b| in a tensor over the tensor's max |b| (1. above).
constexpr double kGradTol = 1e-5;
/// Losses at every step of a run, absolute, on losses of ~5 (3. above).
constexpr double kLossTol = 1e-4;
/// Losses of bf16 runs over up to 10 steps, absolute (4. above).
constexpr double kBf16LossTol = 2e-3;

/// max |a - b| over every tensor, relative to the largest |b| in the file.
inline double rel_max(const ss::StFile& a, const ss::StFile& b) {
    double err = 0, scale = 1e-30;
    for (const auto& [name, t] : b.tensors) {
        std::vector<float> x = ss::st_to_f32(a.get(name)), y = ss::st_to_f32(t);
        for (size_t i = 0; i < y.size(); ++i) {
            err = std::max(err, std::fabs(double(x[i]) - y[i]));
            scale = std::max(scale, std::fabs(double(y[i])));
        }
    }
    return err / scale;
}

/// The largest of max |a - b| / max |b| over the tensors of @p b, each tensor on its own scale.
/// @p worst names the tensor that gave it.
inline double rel_max_per_tensor(const ss::StFile& a, const ss::StFile& b, std::string* worst = nullptr) {
    double out = 0;
    for (const auto& [name, t] : b.tensors) {
        std::vector<float> x = ss::st_to_f32(a.get(name)), y = ss::st_to_f32(t);
        double err = 0, scale = 1e-30;
        for (size_t i = 0; i < y.size(); ++i) {
            err = std::max(err, std::fabs(double(x[i]) - y[i]));
            scale = std::max(scale, std::fabs(double(y[i])));
        }
        if (err / scale > out) {
            out = err / scale;
            if (worst) *worst = name;
        }
    }
    return out;
}

/// B_t: the largest |m^_t / sqrt(v^_t)| AdamW can take at step t (2. above; B_1 = 1).
inline double adam_update_bound(int t, double beta1, double beta2) {
    const double gamma = beta1 * beta1 / beta2;
    double geometric = 0;
    for (int j = 0; j < t; ++j) geometric += std::pow(gamma, j);
    return (1 - beta1) / (1 - std::pow(beta1, t)) * std::sqrt(1 - std::pow(beta2, t)) / std::sqrt(1 - beta2) *
           std::sqrt(geometric);
}

/// lr * sum_{t=1..steps} 2 B_t: how far one element of two runs' parameters can
/// drift apart in @p steps AdamW steps of @p o's hyperparameters (2. above).
inline double adam_param_tolerance(const ss::TrainOptions& o, int steps) {
    double sum = 0;
    for (int t = 1; t <= steps; ++t) sum += 2 * adam_update_bound(t, o.beta1, o.beta2);
    return double(o.lr) * sum;
}

/// Every tensor's first-step gradients within kGradTol of one rank's, each on its own scale.
inline void require_same_gradients(const ss::StFile& par, const ss::StFile& one) {
    REQUIRE(par.tensors.size() == one.tensors.size());
    std::string worst;
    const double err = rel_max_per_tensor(par, one, &worst);
    INFO("first-step gradients: max |diff| / max |grad| = " << err << " (in " << worst << ")");
    REQUIRE(err < kGradTol);
}

/// The largest |a - b| over every element of every tensor of @p b.
inline double abs_max(const ss::StFile& a, const ss::StFile& b, std::string* worst = nullptr) {
    double out = 0;
    for (const auto& [name, t] : b.tensors) {
        std::vector<float> x = ss::st_to_f32(a.get(name)), y = ss::st_to_f32(t);
        for (size_t i = 0; i < y.size(); ++i) {
            const double d = std::fabs(double(x[i]) - y[i]);
            if (d > out) {
                out = d;
                if (worst) *worst = name + "[" + std::to_string(i) + "]";
            }
        }
    }
    return out;
}

/// Final parameters after @p steps AdamW steps of @p o within adam_param_tolerance of one rank's.
inline void require_same_params(const ss::StFile& par, const ss::StFile& one, const ss::TrainOptions& o, int steps) {
    std::string worst;
    const double err = abs_max(par, one, &worst), bound = adam_param_tolerance(o, steps);
    INFO("final parameters after " << steps << " steps: max |diff| = " << err << " at " << worst << ", bound " << bound);
    REQUIRE(err <= bound);
}

/// Runs @p par and @p one and checks they are the same training: same GBS, the
/// same loss at every step (kLossTol), and, where both write them, the same
/// first-step gradients (--dump-grads, kGradTol per tensor) and final
/// parameters (--save, adam_param_tolerance).
inline void require_same_training(const ss::TrainOptions& par, const ss::TrainOptions& one) {
    ss::TrainReport a = ss::train(par, nullptr), b = ss::train(one, nullptr);
    REQUIRE(a.gbs == b.gbs);
    REQUIRE(a.steps.size() == b.steps.size());
    for (size_t i = 0; i < a.steps.size(); ++i) {
        INFO("step " << i + 1 << ": " << a.steps[i].loss << " vs one rank " << b.steps[i].loss);
        REQUIRE(a.steps[i].loss == Approx(b.steps[i].loss).margin(kLossTol));
    }
    if (!par.dump_grads.empty() && !one.dump_grads.empty())
        require_same_gradients(ss::read_safetensors(par.dump_grads), ss::read_safetensors(one.dump_grads));
    if (!par.save.empty() && !one.save.empty())
        require_same_params(ss::read_safetensors(par.save), ss::read_safetensors(one.save), one, int(b.steps.size()));
}
