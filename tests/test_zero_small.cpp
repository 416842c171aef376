// test_zero_small.cpp — the equivalence of test_zero.cpp on the `small` model
// (4 blocks, width 128), for each stage at 4 ranks and one replica shape.
#include <catch2/catch.hpp>
#include <cmath>

#include "model/safetensors.h"
#include "train/train.h"
#include "equivalence.h"

using namespace ss;

TEST_CASE("DDP, bucketed DDP and ZeRO 1-3 equal one rank on `small` (10 steps)", "[zero][small]") {
    TrainOptions one;
    one.model = model_preset("small");
    one.steps = 10;
    one.quiet = true;
    one.mbs = 8;
    one.T = 128;
    one.save = std::string(SS_BINARY_DIR) + "/test_zero_small_one.safetensors";
    struct Case {
        int zero, dp_shard, dp_rep;
        double bucket_mb;
    };
    for (Case c : {Case{0, 4, 1, 0}, Case{0, 4, 1, 1.0}, Case{1, 4, 1, 0}, Case{2, 4, 1, 0}, Case{3, 4, 1, 0},
                   Case{3, 2, 2, 0}}) {
        TrainOptions par = one;
        par.mbs = 2;
        par.ranks = 4;
        par.zero = c.zero;
        par.dp_shard = c.dp_shard;
        par.dp_rep = c.dp_rep;
        par.bucket_mb = c.bucket_mb;
        par.save = std::string(SS_BINARY_DIR) + "/test_zero_small_par.safetensors";
        INFO("ZeRO-" << c.zero << " " << c.dp_shard << "x" << c.dp_rep << " bucket " << c.bucket_mb);
        REQUIRE(par.mbs * par.ranks == one.mbs);  // the same global batch, split over the ranks
        require_same_training(par, one);          // losses, final parameters (equivalence.h)
    }
}
