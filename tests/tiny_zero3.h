// tiny_zero3.h — the run the ZeRO++ tests start from: `tiny`, MBS 2, 3 steps,
// ZeRO-3 over @p ranks, quiet (test_hpz.cpp, test_zeropp.cpp).
#pragma once

#include "train/train.h"

namespace ss::test {

/// `shardscope train --model tiny --ranks N --mbs 2 --steps 3 --zero 3 --quiet`.
inline TrainOptions tiny_zero3(int ranks) {
    TrainOptions o;
    o.model = model_preset("tiny");
    o.ranks = ranks;
    o.mbs = 2;
    o.steps = 3;
    o.zero = 3;
    o.quiet = true;
    return o;
}

}  // namespace ss::test
