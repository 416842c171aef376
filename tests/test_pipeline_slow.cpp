// test_pipeline_slow.cpp — all five axes at once on 16 ranks equal one rank
// (slow label: 16 rank threads on a 2-core machine).
#include <catch2/catch.hpp>

#include "train/train.h"
#include "equivalence.h"

using namespace ss;

TEST_CASE("pp 2 x dp_rep 2 x dp_shard 2 x tp 2 (ZeRO-2) and pp 2 x dp 2 x sp 2 x tp 2 on 16 ranks equal one rank",
          "[pp][4d][slow]") {
    TrainOptions one;
    one.model = model_preset("tiny");
    one.model.L = 4;
    one.steps = 10;
    one.quiet = true;
    one.ga = 2;
    one.mbs = 8;
    one.dump_grads = test_file("test_pp16_grads_one.safetensors");
    one.save = test_file("test_pp16_end_one.safetensors");

    TrainOptions a = one;  // 2 x 2 x 2 x 2 x 2 = 16 is too many for 8 sequences: DP 4 x MBS 2
    a.ranks = 16;
    a.pp = 2;
    a.tp = 2;
    a.dp_rep = 2;
    a.dp_shard = 2;
    a.zero = 2;
    a.mbs = 2;
    a.dump_grads = test_file("test_pp16_grads_a.safetensors");
    a.save = test_file("test_pp16_end_a.safetensors");
    require_same_training(a, one);

    TrainOptions b = one;  // pp 2 x dp 2 x Ulysses sp 2 x tp 2 (+ Megatron-SP is not combined with sp), ZeRO-3
    b.ranks = 16;
    b.pp = 2;
    b.tp = 2;
    b.sp = 2;
    b.zero = 3;
    b.mbs = 4;
    b.schedule = Schedule::interleaved;
    b.pp_virtual = 2;
    b.dump_grads = test_file("test_pp16_grads_b.safetensors");
    b.save = test_file("test_pp16_end_b.safetensors");
    require_same_training(b, one);
}
