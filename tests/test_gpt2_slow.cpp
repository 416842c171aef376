// test_gpt2_slow.cpp — the real GPT-2 124M builds and takes a training step
// on the CPU (label "slow": about ten seconds).
#include <catch2/catch.hpp>
#include <cmath>

#include "train/train.h"

using namespace ss;

TEST_CASE("gpt2 (124M) runs a training step", "[model][slow]") {
    TrainOptions o;
    o.model = model_preset("gpt2");
    o.mbs = 1;
    o.T = 64;
    o.steps = 1;
    o.quiet = true;
    TrainReport r = train(o, nullptr);
    REQUIRE(r.num_params == 124439808);
    // A fresh model guesses uniformly over the 50,257 tokens: loss ~ ln 50257 = 10.82.
    REQUIRE(std::fabs(r.steps[0].loss - std::log(50257.0f)) < 0.5f);
    REQUIRE(r.peak[int(Mem::params)] == size_t(4 * 124439808));
}
