// equivalence.h — the check every strategy's test makes: a parallel run and
// a one-rank run on the same global batch train the same model.
#pragma once

#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "model/safetensors.h"
#include "train/train.h"

/// A path in the build folder for a test's files.
inline std::string test_file(const std::string& name) { return std::string(SS_BINARY_DIR) + "/" + name; }

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

/// Runs @p par and @p one and checks they are the same training: same GBS, the
/// same loss at every step, and, where both write them, the same first-step
/// gradients (--dump-grads) and final parameters (--save).
///
/// Tolerances (fp32): the two runs add the same products in another order
/// (per-rank means, ring reductions, shard and slice boundaries), ~1e-7
/// relative per operation. One forward/backward keeps the gradients within
/// 1e-5 of their largest value; over the steps Adam divides by sqrt(v), which
/// can magnify differences in near-zero gradients, so losses get 1e-4 absolute
/// (on losses of ~5) and final parameters 1e-4 of their largest value.
inline void require_same_training(const ss::TrainOptions& par, const ss::TrainOptions& one) {
    ss::TrainReport a = ss::train(par, nullptr), b = ss::train(one, nullptr);
    REQUIRE(a.gbs == b.gbs);
    REQUIRE(a.steps.size() == b.steps.size());
    for (size_t i = 0; i < a.steps.size(); ++i) {
        INFO("step " << i + 1 << ": " << a.steps[i].loss << " vs one rank " << b.steps[i].loss);
        REQUIRE(a.steps[i].loss == Approx(b.steps[i].loss).margin(1e-4));
    }
    if (!par.dump_grads.empty() && !one.dump_grads.empty()) {
        double err = rel_max(ss::read_safetensors(par.dump_grads), ss::read_safetensors(one.dump_grads));
        INFO("first-step gradients rel_max " << err);
        REQUIRE(err < 1e-5);
    }
    if (!par.save.empty() && !one.save.empty()) {
        double err = rel_max(ss::read_safetensors(par.save), ss::read_safetensors(one.save));
        INFO("final parameters rel_max " << err);
        REQUIRE(err < 1e-4);
    }
}
