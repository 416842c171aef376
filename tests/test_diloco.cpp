// test_diloco.cpp — DiLoCo's outer step (optim/diloco.h, parallel/replicas.h):
// its arithmetic by hand, --replica-outer avg is today's local SGD bit for
// bit, nesterov with lr 1 and momentum 0 is the average to the rounding of one
// subtraction, DiLoCo trains under DDP and ZeRO 1-3, its state is booked in
// Mem::outer at the optimizer's shard size, and bad settings are refused.
// Checkpoints of DiLoCo runs are tested in test_checkpoint.cpp.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "core/check.h"
#include "model/safetensors.h"
#include "optim/diloco.h"
#include "train/train.h"
#include "comm/trace/trace.h"
#include "equivalence.h"

using namespace ss;

namespace {

std::string out_path(const std::string& name) { return test_file("test_diloco_" + name); }

// 4 ranks: 2 replicas of a 2-rank shard group, syncing every 2 steps.
TrainOptions replicas_2x2(int zero, int steps) {
    TrainOptions o;
    o.model = model_preset("tiny");
    o.steps = steps;
    o.quiet = true;
    o.mbs = 2;
    o.ranks = 4;
    o.dp_shard = 2;
    o.dp_rep = 2;
    o.zero = zero;
    o.replica_sync_every = 2;
    return o;
}

std::string message_of(const TrainOptions& o) {
    try {
        train(o, nullptr);
    } catch (const ss::Error& e) {
        return e.what();
    }
    return "no error";
}

// Every byte of two safetensors files' tensors.
bool same_bytes(const StFile& a, const StFile& b) {
    if (a.tensors.size() != b.tensors.size()) return false;
    for (const auto& [name, t] : a.tensors)
        if (!b.has(name) || b.get(name).bytes != t.bytes) return false;
    return true;
}

}  // namespace

TEST_CASE("the outer Nesterov step by hand, and against the formula in double", "[diloco][arithmetic]") {
    // lr 0.5, mu 0.5: every value below is a short binary fraction, so float gets it exactly.
    //   theta 1, mean 0.75, m 0.25:  Delta = 0.25, m = 0.5 * 0.25 + 0.25 = 0.375,
    //                                theta = 1 - 0.5 (0.25 + 0.5 * 0.375) = 0.78125
    //   theta -2, mean -1, m 0:      Delta = -1, m = -1, theta = -2 - 0.5 (-1 - 0.5) = -1.25
    OuterParams hp{0.5f, 0.5f};
    float anchor[2] = {1.0f, -2.0f}, momentum[2] = {0.25f, 0.0f};
    const float mean[2] = {0.75f, -1.0f};
    float out[2] = {0, 0};
    outer_nesterov_update(anchor, momentum, mean, out, 2, hp);
    REQUIRE(momentum[0] == 0.375f);
    REQUIRE(anchor[0] == 0.78125f);
    REQUIRE(momentum[1] == -1.0f);
    REQUIRE(anchor[1] == -1.25f);
    REQUIRE(out[0] == anchor[0]);
    REQUIRE(out[1] == anchor[1]);

    // Three outer steps with the paper's settings against the same formula in double.
    hp = OuterParams{};  // 0.7, 0.9
    REQUIRE(hp.lr == 0.7f);
    REQUIRE(hp.momentum == 0.9f);
    float a = 0.3f, m = 0.0f;
    double ad = 0.3f, md = 0.0;
    const float means[3] = {0.25f, 0.2f, 0.22f};
    for (float mu_in : means) {
        float o = 0;
        outer_nesterov_update(&a, &m, &mu_in, &o, 1, hp);
        const double delta = ad - double(mu_in);
        md = double(hp.momentum) * md + delta;
        ad -= double(hp.lr) * (delta + double(hp.momentum) * md);
        // float arithmetic on values below 1: each step rounds a few times, ~6e-8 each
        REQUIRE(a == Approx(ad).margin(1e-6));
        REQUIRE(m == Approx(md).margin(1e-6));
    }

    // lr 1, momentum 0: theta - (theta - mean). Exact when theta and mean lie within a
    // factor of 2 of each other (Sterbenz: theta - mean is then exact); otherwise two
    // roundings, half an ulp of theta - mean and half an ulp of the result: at most 1.5
    // ulp of max(|theta|, |mean|) (docs/formulas.md, DiLoCo).
    hp = OuterParams{1.0f, 0.0f};
    float th[3] = {0.5f, 0.3f, 1e-3f}, mo[3] = {0, 0, 0};
    const float mn[3] = {0.4f, 0.2999f, -0.7f};
    float res[3];
    outer_nesterov_update(th, mo, mn, res, 3, hp);
    REQUIRE(res[0] == mn[0]);
    REQUIRE(res[1] == mn[1]);
    auto ulp = [](float x) {  // the gap above |x|
        const float a = std::fabs(x);
        return std::nextafter(a, std::numeric_limits<float>::infinity()) - a;
    };
    REQUIRE(std::fabs(res[2] - mn[2]) <= 1.5f * ulp(std::max(std::fabs(th[2]), std::fabs(mn[2]))));
    // Pairs of every scale, theta much smaller than the mean among them (5.15e-5 against
    // -0.0365 is one ulp of the mean off, 2,048 half-ulps of theta: a bound in ulps of
    // theta alone would not hold).
    std::mt19937 rng(7);
    std::normal_distribution<float> normal;
    std::uniform_real_distribution<float> decade(-8.0f, 2.0f);
    for (int i = 0; i < 20000; ++i) {
        const float theta = normal(rng) * std::pow(10.0f, decade(rng));
        const float mean = normal(rng) * std::pow(10.0f, decade(rng));
        float t = theta, m0 = 0.0f, out = 0.0f;  // t: the anchor, updated in place
        outer_nesterov_update(&t, &m0, &mean, &out, 1, hp);
        const float bound = 1.5f * ulp(std::max(std::fabs(theta), std::fabs(mean)));
        INFO("theta " << std::hexfloat << theta << " mean " << mean << " out " << out << " bound " << bound);
        REQUIRE(std::fabs(out - mean) <= bound);
    }
}

TEST_CASE("--replica-outer avg is local SGD as it was: the same losses and parameters, bit for bit",
          "[diloco][avg]") {
    for (int zero : {0, 1, 2, 3}) {
        INFO("ZeRO-" << zero);
        TrainOptions plain = replicas_2x2(zero, 4), avg = plain;
        plain.save = out_path("plain.safetensors");
        avg.replica_outer = ReplicaOuter::avg;
        avg.outer_lr = 0.3f;  // unused by avg
        avg.save = out_path("avg.safetensors");
        const TrainReport a = train(plain, nullptr), b = train(avg, nullptr);
        for (size_t i = 0; i < a.steps.size(); ++i) REQUIRE(a.steps[i].loss == b.steps[i].loss);
        REQUIRE(same_bytes(read_safetensors(plain.save), read_safetensors(avg.save)));
        REQUIRE(b.live[int(Mem::outer)] == 0);  // no outer state
    }
}

TEST_CASE("nesterov with outer lr 1 and momentum 0 is the average, to one rounding per sync", "[diloco][avg]") {
    // theta - (theta - mean) rounds twice where the plain average rounds not at all:
    // each sync moves a parameter by at most an ulp of itself (|w| < 1 here: < 1.2e-7),
    // and the next AdamW steps carry that along, so the runs agree to the losses'
    // kLossTol, not bit for bit (the arithmetic test above says when one step is
    // exact). The parameters: within adam_param_tolerance (equivalence.h, 2.), the
    // derived bound: an element whose gradient is ~eps turns any difference of its
    // gradient into up to two of Adam's largest steps, so no absolute bound such as
    // 1e-5 holds on every machine.
    for (int zero : {0, 1, 3}) {
        INFO("ZeRO-" << zero);
        TrainOptions avg = replicas_2x2(zero, 6), nes = avg;
        avg.save = out_path("avg1.safetensors");
        nes.replica_outer = ReplicaOuter::nesterov;
        nes.outer_lr = 1.0f;
        nes.outer_momentum = 0.0f;
        nes.save = out_path("nes1.safetensors");
        const TrainReport a = train(avg, nullptr), b = train(nes, nullptr);
        for (size_t i = 0; i < a.steps.size(); ++i) REQUIRE(b.steps[i].loss == Approx(a.steps[i].loss).margin(kLossTol));
        std::string worst;
        const double err = abs_max(read_safetensors(avg.save), read_safetensors(nes.save), &worst);
        INFO("max |diff| " << err << " at " << worst);
        REQUIRE(err <= adam_param_tolerance(avg, avg.steps));
    }
}

TEST_CASE("DiLoCo trains: the loss falls under DDP and ZeRO 1-3, fp32 and bf16, and differs from the average",
          "[diloco][train]") {
    for (int zero : {0, 1, 2, 3})
        for (DType dt : {DType::f32, DType::bf16}) {
            INFO("ZeRO-" << zero << " " << dtype_name(dt));
            TrainOptions avg = replicas_2x2(zero, 12), nes = avg;
            avg.dtype = nes.dtype = dt;
            avg.lr = nes.lr = 3e-3f;
            nes.replica_outer = ReplicaOuter::nesterov;  // the paper's 0.7 and 0.9
            const TrainReport a = train(avg, nullptr), b = train(nes, nullptr);
            INFO("DiLoCo losses " << b.steps.front().loss << " -> " << b.steps.back().loss);
            REQUIRE(b.steps.back().loss < b.steps.front().loss - 0.1);
            REQUIRE(b.steps[0].loss == a.steps[0].loss);  // nothing synced before step 2
            REQUIRE(b.steps[1].loss == a.steps[1].loss);
            bool differs = false;  // from step 3 on the outer step has moved theta elsewhere
            for (size_t i = 2; i < a.steps.size(); ++i) differs |= a.steps[i].loss != b.steps[i].loss;
            REQUIRE(differs);
            REQUIRE(b.replica_batch_line().find("outer Nesterov step (DiLoCo): lr_outer 0.7, momentum 0.9") !=
                    std::string::npos);
        }
}

TEST_CASE("DiLoCo's state is booked in Mem::outer: 8 bytes per element the optimizer holds", "[diloco][memory]") {
    // theta and m in fp32, in the optimizer's layout: all P under DDP, the shard under ZeRO.
    const GPT2Config c = model_preset("tiny");
    const int64_t P = num_params(c);
    for (int zero : {0, 1, 3}) {
        INFO("ZeRO-" << zero);
        TrainOptions o = replicas_2x2(zero, 2);
        o.replica_outer = ReplicaOuter::nesterov;
        const TrainReport r = train(o, nullptr);
        // An fp32 run's optimizer holds m and v, 8 bytes per element too: the same bytes.
        REQUIRE(r.live[int(Mem::outer)] == r.live[int(Mem::optim)]);
        if (zero == 0) REQUIRE(r.live[int(Mem::outer)] == size_t(8 * P));
        if (zero > 0) REQUIRE(r.live[int(Mem::outer)] < size_t(8 * P));  // sharded: about half of 8P here
    }
}

TEST_CASE("a sync sends what the optimizer updates across the replicas: all P under DDP, 1/N under ZeRO 1-3",
          "[diloco][trace]") {
    // fp32, 2 replicas of a shard group of 2: the dp_rep all-reduce of the parameters at step 2's
    // sync moves P x 4 bytes under DDP and the rank's shard, about P x 4 / 2, under ZeRO-1, -2
    // and -3 (ZeRO-1/2 then gather the averaged shards inside the group). It moved all of P
    // under ZeRO-1/2 before 2026-12-06.
    const int64_t P = num_params(model_preset("tiny"));
    for (ReplicaOuter outer : {ReplicaOuter::avg, ReplicaOuter::nesterov})
        for (int zero : {0, 1, 2, 3}) {
            INFO("ZeRO-" << zero << (outer == ReplicaOuter::nesterov ? ", DiLoCo" : ", local SGD"));
            TrainOptions o = replicas_2x2(zero, 2);
            o.replica_outer = outer;
            o.trace = out_path("sync_trace.json");
            train(o, nullptr);
            const Trace t = read_chrome_trace(o.trace);
            uint64_t bytes = 0;
            int calls = 0;
            for (const TraceEvent& e : t.events)
                if (e.rank == 0 && e.kind == TraceEvent::Kind::collective && e.axis == "dp_rep" &&
                    e.label.payload == Payload::param) {
                    bytes += e.bytes;
                    ++calls;
                }
            REQUIRE(calls == 1);  // the one sync, after step 2
            if (zero == 0)
                CHECK(bytes == uint64_t(P) * 4);
            else  // the shard: P / 2 rounded up per unit to whole chunks
                CHECK((bytes >= uint64_t(P) * 2 && bytes < uint64_t(P) * 2 + 4096));
        }
}

TEST_CASE("bad DiLoCo settings get clear errors that say what to change", "[diloco][errors]") {
    TrainOptions o = replicas_2x2(1, 1);
    o.replica_outer = ReplicaOuter::nesterov;
    TrainOptions one_replica = o;
    one_replica.dp_rep = 1;
    one_replica.dp_shard = 4;
    REQUIRE_THAT(message_of(one_replica), Catch::Matchers::Contains("--replica-outer nesterov (DiLoCo)") &&
                                              Catch::Matchers::Contains("add --dp-rep 2 or more"));
    TrainOptions every_step = o;
    every_step.replica_sync_every = 1;
    REQUIRE_THAT(message_of(every_step), Catch::Matchers::Contains("give --replica-sync-every H with H > 1"));
    for (float lr : {0.0f, -1.0f, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
        TrainOptions x = o;
        x.outer_lr = lr;
        REQUIRE_THAT(message_of(x), Catch::Matchers::Contains("--outer-lr must be a finite number above 0"));
    }
    for (float mu : {-0.1f, 1.0f, 1.5f, std::numeric_limits<float>::quiet_NaN()}) {
        TrainOptions x = o;
        x.outer_momentum = mu;
        REQUIRE_THAT(message_of(x), Catch::Matchers::Contains("--outer-momentum must lie in [0, 1)"));
    }
    REQUIRE_THROWS_WITH(parse_replica_outer("adam"), Catch::Matchers::Contains("use avg") &&
                                                         Catch::Matchers::Contains("or nesterov"));
    // Checkpoints of local SGD or DiLoCo only at syncs.
    TrainOptions save = o;
    save.steps = 4;
    save.save_every = 3;
    save.checkpoint_dir = out_path("bad_save");
    REQUIRE_THAT(message_of(save), Catch::Matchers::Contains("--save-every a multiple of 2"));
}
