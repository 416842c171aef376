// test_cuda_device.cpp — the model and the strategies on the GPU (`--device cuda`)
// against the same runs on the CPU.
//
// tests/test_cuda_kernels.cpp holds each CUDA kernel to its CPU twin; this file
// holds what is built from them: managed tensors (core/device.h), the
// dispatch (kernels/dispatch.h), one rank's forward and backward, bf16
// tensor-core matmuls, and whole training runs of every strategy with 4 and 8
// rank threads sharing one GPU.
//
// Tolerances. One rank's loss and gradients: err = max |gpu - cpu| / max |cpu|
// < 1e-4. Each kernel agrees within 1e-5 (test_cuda_kernels); a pass chains
// ~30 of them per block, and the differences (summation orders) add up
// without growing by more than a few times. A wrong kernel or a missed
// synchronisation is off by O(1) or gives NaN. bf16 matmuls: the loss within
// 1e-2 relative (inputs rounded to 8 bits of mantissa, fp32 sums). Training
// runs: each step's loss within 1e-4 relative of the CPU run of the same
// layout, after 3 AdamW steps (Adam divides by sqrt(v), so parameters differ
// by more than the gradients do; 1e-4 is ~10x what fp32 order differences give).
//
// Without a GPU main() returns 77 (ctest: skipped), as test_cuda_kernels does.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/tensor.h"
#include "kernels/dispatch.h"
#include "model/gpt2.h"
#include "train/train.h"

using namespace ss;

namespace {

double rel_err(const float* gpu, const float* cpu, size_t n) {
    double diff = 0, scale = 0;
    for (size_t i = 0; i < n; ++i) {
        if (!std::isfinite(gpu[i])) return INFINITY;
        diff = std::max(diff, double(std::fabs(gpu[i] - cpu[i])));
        scale = std::max(scale, double(std::fabs(cpu[i])));
    }
    return scale > 0 ? diff / scale : diff;
}

struct OneRank {
    float loss = 0;
    std::vector<float> grads;
};

// Forward and backward of the tiny model on this thread's device.
OneRank one_rank_step(const GPT2Config& cfg, int B, int T) {
    Ledger ledger;
    GPT2 model(cfg, ledger);
    model.init(42);
    std::vector<int> tokens(size_t(B) * T), targets(tokens.size());
    for (size_t i = 0; i < tokens.size(); ++i) {
        tokens[i] = int((i * 7919 + 13) % size_t(cfg.V));
        targets[i] = int((i * 104729 + 5) % size_t(cfg.V));
    }
    Activations acts;
    OneRank out;
    out.loss = model.forward(tokens.data(), targets.data(), B, T, acts);
    model.zero_grad();
    model.backward(tokens.data(), targets.data(), acts, 1.0f / float(B * T));
    out.grads.assign(model.g(), model.g() + model.layout().total);
    return out;
}

TrainReport run(TrainOptions o, const char* device) {
    o.device = device;
    o.quiet = true;
    return train(o, nullptr);
}

}  // namespace

TEST_CASE("a tensor on the GPU is managed memory: zeroed, and readable and writable by the host", "[gpu]") {
    DeviceScope on_gpu(Device::cuda);
    Ledger ledger;
    Tensor t(ledger, Mem::acts, {1000});
    REQUIRE(t.device() == Device::cuda);
    for (int i = 0; i < 1000; ++i) REQUIRE(t.f32()[i] == 0.0f);
    std::vector<float> host(1000);
    for (int i = 0; i < 1000; ++i) host[size_t(i)] = float(i);
    device_copy(t.f32(), host.data(), sizeof(float) * 1000);
    Tensor u(ledger, Mem::acts, {1000});
    kern::add_inplace(u.f32(), t.f32(), 1000);  // on the GPU
    kern::add_inplace(u.f32(), t.f32(), 1000);
    for (int i = 0; i < 1000; ++i) REQUIRE(u.f32()[i] == 2.0f * float(i));
    REQUIRE(ledger.live(Mem::acts) == 8000);
}

TEST_CASE("one rank of GPT-2 on the GPU: the CPU's loss and gradients", "[gpu]") {
    GPT2Config cfg = model_preset("tiny");
    const int B = 4, T = cfg.maxT;
    const OneRank cpu = one_rank_step(cfg, B, T);
    OneRank gpu;
    {
        DeviceScope on_gpu(Device::cuda);
        gpu = one_rank_step(cfg, B, T);
    }
    INFO("loss cpu " << cpu.loss << " gpu " << gpu.loss);
    REQUIRE(std::isfinite(gpu.loss));
    REQUIRE(std::fabs(gpu.loss - cpu.loss) <= 1e-4 * std::fabs(cpu.loss));
    const double err = rel_err(gpu.grads.data(), cpu.grads.data(), cpu.grads.size());
    INFO("gradients: max |gpu - cpu| / max |cpu| = " << err);
    REQUIRE(err < 1e-4);
}

TEST_CASE("bf16 tensor-core matmuls: the loss within 1e-2 of fp32", "[gpu]") {
    GPT2Config cfg = model_preset("small");
    const int B = 2, T = 128;
    OneRank exact, fast;
    {
        DeviceScope on_gpu(Device::cuda);
        exact = one_rank_step(cfg, B, T);
        kern::set_bf16_matmuls(true);
        fast = one_rank_step(cfg, B, T);
        kern::set_bf16_matmuls(false);
    }
    INFO("loss fp32 " << exact.loss << " bf16 matmuls " << fast.loss);
    REQUIRE(std::isfinite(fast.loss));
    REQUIRE(std::fabs(fast.loss - exact.loss) <= 1e-2 * std::fabs(exact.loss));
    REQUIRE(fast.loss != exact.loss);  // the products really were rounded
}

TEST_CASE("every strategy trains on the GPU as on the CPU, 4 and 8 ranks sharing one GPU", "[gpu][strategies]") {
    struct Layout {
        const char* name;
        int ranks, zero, tp, sp, pp, ga;
        bool msp;
        const char* sp_mode;
    };
    const Layout layouts[] = {
        {"DP 4 (DDP)", 4, 0, 1, 1, 1, 1, false, "ulysses"},
        {"DP 4, ZeRO-3", 4, 3, 1, 1, 1, 1, false, "ulysses"},
        {"TP 2 + Megatron-SP x DP 2, ZeRO-1", 4, 1, 2, 1, 1, 1, true, "ulysses"},
        {"SP 2 (Ulysses) x DP 2", 4, 0, 1, 2, 1, 1, false, "ulysses"},
        {"SP 2 (ring) x DP 2, ZeRO-2", 4, 2, 1, 2, 1, 1, false, "ring"},
        {"PP 2 (1F1B) x DP 2", 4, 0, 1, 1, 2, 4, false, "ulysses"},
        {"DP 8, ZeRO-2", 8, 2, 1, 1, 1, 1, false, "ulysses"},
        {"PP 2 x TP 2 x DP 2, ZeRO-1", 8, 1, 2, 1, 2, 4, false, "ulysses"},
    };
    for (const Layout& l : layouts) {
        TrainOptions o;
        o.model = model_preset("tiny");
        o.mbs = 2;
        o.steps = 3;
        o.ranks = l.ranks;
        o.zero = l.zero;
        o.tp = l.tp;
        o.sequence_parallel = l.msp;
        o.sp = l.sp;
        o.sp_mode = parse_sp_mode(l.sp_mode);
        o.pp = l.pp;
        o.ga = l.ga;
        const TrainReport cpu = run(o, "cpu");
        const TrainReport gpu = run(o, "cuda");
        REQUIRE(gpu.steps.size() == cpu.steps.size());
        for (size_t s = 0; s < cpu.steps.size(); ++s) {
            INFO(l.name << ", step " << s + 1 << ": loss cpu " << cpu.steps[s].loss << " gpu " << gpu.steps[s].loss);
            REQUIRE(std::isfinite(gpu.steps[s].loss));
            REQUIRE(std::fabs(gpu.steps[s].loss - cpu.steps[s].loss) <= 1e-4 * std::fabs(cpu.steps[s].loss));
        }
    }
}

int main(int argc, char** argv) {
    const int devices = cuda_device_count();
    if (devices == 0) {
        std::printf("test_cuda_device: no CUDA device visible\n");
        const char* require = std::getenv("SS_REQUIRE_GPU");
        if (require != nullptr && std::strcmp(require, "1") == 0) {
            std::printf("test_cuda_device: SS_REQUIRE_GPU=1, so a missing GPU is a failure\n");
            return 1;
        }
        std::printf("test_cuda_device: SKIPPED, nothing was checked (exit code 77; ctest shows it as skipped)\n");
        return 77;
    }
    std::printf("test_cuda_device: device 0: %s\n", cuda_device_name(0).c_str());
    const int failed = Catch::Session().run(argc, argv);
    return failed == 0 ? 0 : 1;
}
