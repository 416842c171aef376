// test_gpt2_slow.cpp — the real GPT-2 124M builds and takes a training step
// on the CPU, on one rank and under TP 2 (label "slow": about ten seconds each).
#include <catch2/catch.hpp>
#include <cmath>

#include "model/params.h"
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
    // The Ledger counts what is allocated: wte padded to Vp = 50304 rows (llm.c's Vp).
    REQUIRE(r.peak[int(Mem::params)] == size_t(4 * (124439808 + (50304 - 50257) * 768)));
}

TEST_CASE("gpt2 (124M) trains under TP 2: the vocabulary is padded to 50432 rows", "[model][slow][tp][vocab]") {
    // Without padding: "TP=2 does not divide the vocabulary V=50257".
    TrainOptions o;
    o.model = model_preset("gpt2");
    o.ranks = 2;
    o.tp = 2;
    o.mbs = 1;
    o.T = 32;
    o.steps = 1;
    o.quiet = true;
    TrainReport r = train(o, nullptr);
    REQUIRE(r.num_params == 124439808);  // the model's parameters: the padding is not the model's
    REQUIRE(std::fabs(r.steps[0].loss - std::log(50257.0f)) < 0.5f);  // uniform over the words, not Vp
    for (int rank = 0; rank < 2; ++rank)  // each TP rank: 25216 rows of wte and half of every block
        REQUIRE(r.rank_peak[size_t(rank)][int(Mem::params)] ==
                size_t(4 * make_param_layout(o.model, 2, rank).total));
    REQUIRE(make_param_layout(o.model, 2, 0).wte().shape == Shape{25216, 768});
}
