// test_core.cpp — the Ledger, Tensor and bf16 conversion.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <thread>

#include "core/check.h"
#include "core/device.h"
#include "core/dtype.h"
#include "core/ledger.h"
#include "core/tensor.h"

using namespace ss;

TEST_CASE("ledger books live and peak bytes per category", "[core]") {
    Ledger ledger;
    {
        Tensor a(ledger, Mem::params, {10, 4});
        REQUIRE(ledger.live(Mem::params) == 160);
        Tensor b(ledger, Mem::acts, {8}, DType::bf16);
        REQUIRE(ledger.live(Mem::acts) == 16);
        REQUIRE(ledger.live_total() == 176);
    }
    REQUIRE(ledger.live_total() == 0);
    REQUIRE(ledger.peak(Mem::params) == 160);
    REQUIRE(ledger.peak_total() == 176);
    Tensor c(ledger, Mem::comm, {100});
    Tensor moved = std::move(c);
    REQUIRE(ledger.live(Mem::comm) == 400);  // a move does not book twice
    moved.reset();
    REQUIRE(ledger.live(Mem::comm) == 0);
}

TEST_CASE("tensor checks its dtype and starts zeroed", "[core]") {
    Ledger ledger;
    Tensor t(ledger, Mem::workspace, {3}, DType::bf16);
    REQUIRE_THROWS_AS(t.f32(), Error);
    REQUIRE(t.bf16()[2] == 0);
}

TEST_CASE("bf16 rounds to nearest even and round-trips exactly", "[core]") {
    REQUIRE(bf16_to_f32(f32_to_bf16(1.0f)) == 1.0f);
    REQUIRE(bf16_to_f32(f32_to_bf16(-2.5f)) == -2.5f);
    // 1 + 2^-8 is halfway between two bf16 values (1 and 1 + 2^-7): ties go to even (1).
    REQUIRE(bf16_to_f32(f32_to_bf16(1.0f + std::ldexp(1.0f, -8))) == 1.0f);
    REQUIRE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
    // Relative error of bf16 is at most 2^-8.
    float x = 3.14159f;
    REQUIRE(std::fabs(bf16_to_f32(f32_to_bf16(x)) - x) <= x * std::ldexp(1.0f, -8));
}

TEST_CASE("SS_CHECK throws ss::Error with the message", "[core]") {
    try {
        SS_CHECK(1 == 2, "TP=" << 3 << " does not divide 4");
        FAIL("no throw");
    } catch (const Error& e) {
        REQUIRE(std::string(e.what()) == "TP=3 does not divide 4");
    }
}

TEST_CASE("devices: names, the thread's device, and a clear error where CUDA cannot run", "[core][device]") {
    REQUIRE(parse_device("cpu") == Device::cpu);
    REQUIRE(parse_device("cuda") == Device::cuda);
    REQUIRE(std::string(device_name(Device::cuda)) == "cuda");
    REQUIRE_THROWS_WITH(parse_device("tpu"), Catch::Matchers::Contains("device 'tpu' is not a device; use cpu or cuda"));
    Ledger ledger;
    {
        DeviceScope cpu(Device::cpu);
        Tensor t(ledger, Mem::acts, {16});
        REQUIRE(t.device() == Device::cpu);
        REQUIRE(current_stream() == nullptr);
    }
    if (cuda_device_count() == 0) {  // this machine: --device cuda must say why not, and change nothing
        const Device before = current_device();
        REQUIRE_THROWS_WITH(require_cuda(), Catch::Matchers::Contains("--device cuda") &&
                                                Catch::Matchers::Contains("use --device cpu"));
        REQUIRE_THROWS(set_current_device(Device::cuda));
        REQUIRE(current_device() == before);
        // SHARDSCOPE_DEVICE=cuda that cannot be honoured fails every time, never falls back to
        // the CPU (a GPU check would then pass having checked nothing).
        setenv("SHARDSCOPE_DEVICE", "cuda", 1);
        int threw = 0;
        std::thread t([&] {
            for (int i = 0; i < 2; ++i) {
                try {
                    Tensor x(ledger, Mem::acts, {4});
                } catch (const Error&) {
                    ++threw;
                }
            }
        });
        t.join();
        unsetenv("SHARDSCOPE_DEVICE");
        REQUIRE(threw == 2);
    }
}
