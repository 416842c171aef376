// test_data_parallel.cpp — data parallelism gives the single-rank step:
// same losses, same (averaged) gradients, on the threads backend.
#include <catch2/catch.hpp>
#include <cmath>

#include "equivalence.h"
#include "model/safetensors.h"
#include "train/train.h"

using namespace ss;

namespace {

TrainOptions base(int ranks, int mbs, int ga, const std::string& grads_file) {
    TrainOptions o;
    o.model = model_preset("tiny");
    o.steps = 4;
    o.quiet = true;
    o.ranks = ranks;
    o.mbs = mbs;
    o.ga = ga;
    o.dump_grads = std::string(SS_BINARY_DIR) + "/" + grads_file;
    return o;
}

void check_same_run(const TrainOptions& dp, const TrainOptions& single) {
    TrainReport a = train(dp, nullptr), b = train(single, nullptr);
    REQUIRE(a.gbs == b.gbs);
    for (size_t i = 0; i < a.steps.size(); ++i) {
        INFO("step " << i + 1 << ": dp loss " << a.steps[i].loss << ", one rank " << b.steps[i].loss);
        // Same data and math, summed in another order (per-rank means, then the
        // ring's average): fp32 rounding only (kLossTol derived in equivalence.h).
        REQUIRE(a.steps[i].loss == Approx(b.steps[i].loss).margin(kLossTol));
    }
    // The first step's gradients: one forward/backward, so only the summation
    // order differs (kGradTol per tensor, derived in equivalence.h).
    require_same_gradients(read_safetensors(dp.dump_grads), read_safetensors(single.dump_grads));
}

}  // namespace

TEST_CASE("DP over 2 and 4 ranks equals one rank with the whole batch", "[dp]") {
    check_same_run(base(2, 4, 1, "dp2.safetensors"), base(1, 8, 1, "dp1.safetensors"));
    check_same_run(base(4, 2, 1, "dp4.safetensors"), base(1, 8, 1, "dp1.safetensors"));
}

TEST_CASE("DP with gradient accumulation equals one rank with the whole batch", "[dp]") {
    // 2 ranks x MBS 2 x GA 2: each rank reads 2 windows per step.
    // One rank with MBS 4 x GA 2 reads the same tokens in the same micro-batch order.
    check_same_run(base(2, 2, 2, "dp2ga.safetensors"), base(1, 4, 2, "dp1ga.safetensors"));
}

TEST_CASE("DP with bf16 gradients stays within bf16 rounding of one rank", "[dp]") {
    TrainOptions a = base(4, 2, 1, "dp4bf.safetensors"), b = base(1, 8, 1, "dp1bf.safetensors");
    a.dtype = b.dtype = DType::bf16;
    TrainReport ra = train(a, nullptr), rb = train(b, nullptr);
    // bf16 gradients are averaged as bf16 values (summed in fp32, rounded
    // once), one rank rounds its whole sum: kBf16LossTol, derived in equivalence.h.
    for (size_t i = 0; i < ra.steps.size(); ++i) REQUIRE(ra.steps[i].loss == Approx(rb.steps[i].loss).margin(kBf16LossTol));
}
