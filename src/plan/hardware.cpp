#include "plan/hardware.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <unistd.h>

#include "core/check.h"

namespace ss {

namespace {

// Links as nccl-tests measures them on such machines: ~80% of the per-direction
// link peak (NVLink 4: 450 GB/s per direction; NVLink 3: 300; one 400 Gb/s
// ConnectX-7 NIC per GPU: 50 GB/s; one 200 Gb/s HDR NIC: 25 GB/s).
constexpr Link kNvlink4{360e9, 2e-6};
constexpr Link kNvlink3{240e9, 2e-6};
constexpr Link kNdr400{40e9, 6e-6};
constexpr Link kHdr200{20e9, 6e-6};

// Fraction of the matmul peak a transformer layer reaches on a GPU: the
// GEMMs run near 70-80% of peak, LayerNorm, softmax, GeLU and the optimizer
// do not; Megatron-LM reaches 52% of the A100 peak end to end (Narayanan et
// al. 2021, table 1) with communication and bubbles included, which the
// planner counts separately.
constexpr double kGpuEfficiency = 0.6;

Hardware gpu(const char* name, const char* label, double flops, double mem, double hbm, Link intra, Link inter,
             const char* source) {
    Hardware h;
    h.name = name;
    h.label = label;
    h.flops = flops;
    h.efficiency = kGpuEfficiency;
    h.memory = mem;
    h.hbm_bw = hbm;
    h.intra = intra;
    h.inter = inter;
    h.gpus_per_node = 8;
    h.source = source;
    return h;
}

}  // namespace

std::vector<std::string> hardware_preset_names() { return {"h100", "h200", "a100", "cpu-local"}; }

Hardware cpu_local_defaults() {
    // Measured on the development machine (AMD EPYC, 2 cores, one thread, OpenBLAS):
    // sgemm 256..1024 ~ 100 GFLOP/s; memcpy of 64 MiB ~ 8.3 GB/s. One-rank steps of
    // tiny, small and a 2-layer C=768 model take 0.6 of the time their Narayanan
    // FLOPs need at the sgemm rate (attention, LayerNorm, GeLU and softmax are
    // loops, not GEMMs). `bench comm`: the threads backend's all_reduce on 2 ranks
    // reaches ~10-20 GB/s busbw at 1-8 MiB and ~7 us for the smallest (2 hops).
    Hardware h;
    h.name = "cpu-local";
    h.label = "this CPU, one thread per rank (defaults)";
    h.flops = 100e9;
    h.efficiency = 0.6;
    h.memory = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
    h.hbm_bw = 8.3e9;
    h.intra = Link{10e9, 3.5e-6};
    h.inter = h.intra;
    h.gpus_per_node = 1 << 20;  // one machine: every group is "intra-node"
    h.cores = int(std::max(1u, std::thread::hardware_concurrency()));
    h.source = "defaults measured on the development machine (docs/formulas.md); run `shardscope bench --calibrate`";
    return h;
}

Hardware cpu_local_from_json(const std::string& text, const std::string& source) {
    Hardware h = cpu_local_defaults();
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text);
    } catch (const std::exception& e) {
        SS_FAIL(source << " is not JSON (" << e.what() << "); rewrite it with `shardscope bench --calibrate`");
    }
    SS_CHECK(j.is_object(), source << " must hold a JSON object (see docs/formulas.md, \"Hardware\")");
    const char* const keys[] = {"matmul_flops", "efficiency", "memory_bandwidth", "comm_busbw", "comm_alpha",
                                "memory", "cores"};
    std::ostringstream key_list;
    bool any = false;
    for (const char* k : keys) {
        key_list << (key_list.tellp() ? ", " : "") << k;
        any = any || j.contains(k);
    }
    // A file of none of these is no calibration: the defaults labelled "(calibrated)" would mislead.
    SS_CHECK(any, source << " holds none of a calibration's fields (" << key_list.str()
                         << "); rewrite it with `shardscope bench --calibrate`, or give another --calibration");
    auto number = [&](const char* key, double& field, bool positive = true) {
        if (!j.contains(key)) return;
        SS_CHECK(j[key].is_number(), source << ": \"" << key << "\" must be a number");
        const double v = j[key].get<double>();
        SS_CHECK(!positive || v > 0, source << ": \"" << key << "\" must be positive (got " << v << ")");
        field = v;
    };
    number("matmul_flops", h.flops);
    number("efficiency", h.efficiency);
    number("memory_bandwidth", h.hbm_bw);
    number("comm_busbw", h.intra.busbw);
    number("comm_alpha", h.intra.alpha, false);
    number("memory", h.memory);
    double cores = h.cores;
    number("cores", cores);
    SS_CHECK(cores == std::floor(cores) && cores <= 1 << 20,
             source << ": \"cores\" must be a whole number of cores (got " << cores << ")");
    h.cores = int(cores);
    h.inter = h.intra;
    h.label = "this CPU, one thread per rank (calibrated)";
    h.source = source;
    return h;
}

Hardware hardware_preset(const std::string& name, const std::string& calibration) {
    // Datasheet peaks: dense bf16 tensor-core FLOP/s (no sparsity), memory, HBM bandwidth.
    if (name == "h100" || name == "h100-sxm")
        return gpu("h100", "H100-SXM 80GB", 989.4e12, 80e9, 3.35e12, kNvlink4, kNdr400,
                   "NVIDIA H100 Tensor Core GPU datasheet (SXM5), NVLink 4, ConnectX-7 400 Gb/s per GPU");
    if (name == "h200")
        return gpu("h200", "H200-SXM 141GB", 989.4e12, 141e9, 4.8e12, kNvlink4, kNdr400,
                   "NVIDIA H200 Tensor Core GPU datasheet (SXM), NVLink 4, ConnectX-7 400 Gb/s per GPU");
    if (name == "a100" || name == "a100-80gb")
        return gpu("a100", "A100-SXM 80GB", 312e12, 80e9, 2.039e12, kNvlink3, kHdr200,
                   "NVIDIA A100 Tensor Core GPU datasheet (SXM 80GB), NVLink 3, ConnectX-6 200 Gb/s per GPU");
    if (name == "cpu-local" || name == "cpu") {
        if (calibration == kNoCalibration) return cpu_local_defaults();
        std::ifstream f(calibration);
        if (!f) return cpu_local_defaults();
        std::stringstream text;
        text << f.rdbuf();
        return cpu_local_from_json(text.str(), calibration);
    }
    std::ostringstream names;
    for (const std::string& n : hardware_preset_names()) names << (names.tellp() ? ", " : "") << n;
    SS_FAIL("--hw " << name << " is not a hardware preset; choose one of " << names.str()
                    << ", or give --flops, --gpu-mem-gb and the link bandwidths yourself");
}

}  // namespace ss
