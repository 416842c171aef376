// hardware.h — what one GPU (or CPU rank) can do, and the links between them.
//
// The planner needs five numbers per device and two per link type:
//
//     flops        peak dense matmul FLOP/s in the training dtype (bf16 on GPUs)
//     efficiency   the fraction of it a transformer layer's math reaches
//     memory       bytes of device memory
//     hbm_bw       device memory bandwidth (the optimizer step is bound by it)
//     link         busbw (nccl-tests' bus bandwidth, GB/s) and alpha (latency per hop, s)
//                  intra: inside a node (NVLink);  inter: between nodes (one NIC per GPU)
//
// Presets are datasheet peaks, links at bandwidths nccl-tests reaches on such
// machines; every number and its source is in docs/formulas.md ("Hardware").
// `cpu-local` is this machine: one thread per rank, as the threads backend runs
// it. It reads the calibration file `shardscope bench --calibrate` writes
// (out/calibration.json) and otherwise uses defaults measured when it was written.
#pragma once

#include <string>
#include <vector>

namespace ss {

/// One kind of link: how fast a collective's bytes cross it.
struct Link {
    double busbw = 0;  ///< bus bandwidth in bytes/s (nccl-tests' busbw: algbw x factor)
    double alpha = 0;  ///< seconds per hop (latency term of the alpha-beta model)
    /// Latency hops as a ring counts them (all_reduce 2(n-1), all_gather n-1), as
    /// emulated links do (comm/links.h); false: a tree's (2 log2 n, log2 n), as NCCL's
    /// tree and PAT algorithms reach on real clusters (plan/comm.h collective_hops).
    bool ring = false;
};

/// A device and its links.
struct Hardware {
    std::string name;          ///< preset name ("h100", ...) or "custom"
    std::string label;         ///< what it is, for printing ("H100-SXM 80GB")
    double flops = 0;          ///< peak dense FLOP/s of one device in the training dtype
    double efficiency = 1;     ///< fraction of flops a transformer layer reaches (0..1]
    double memory = 0;         ///< bytes of memory per device
    double hbm_bw = 0;         ///< memory bandwidth, bytes/s
    Link intra;                ///< inside a node
    Link inter;                ///< between nodes (per device)
    int gpus_per_node = 8;     ///< devices that share the intra-node link
    int cores = 0;             ///< cpu-local: cores the ranks share (0: every device is its own)
    std::string source;        ///< where the numbers come from
};

/// The --calibration value that asks for cpu-local's defaults, whatever out/ holds.
inline constexpr const char* kNoCalibration = "none";

/// The preset called @p name: h100 (H100-SXM), h200, a100 (A100-80GB), cpu-local.
/// cpu-local reads @p calibration (a JSON file written by `shardscope bench --calibrate`)
/// if it exists, else (or when it is kNoCalibration) uses the defaults documented in
/// docs/formulas.md.
/// Throws ss::Error listing the presets for an unknown name.
Hardware hardware_preset(const std::string& name, const std::string& calibration = "out/calibration.json");

/// Names of the presets.
std::vector<std::string> hardware_preset_names();

/// cpu-local from a calibration JSON object's text; fields missing keep the defaults.
/// Fields: "matmul_flops" (FLOP/s, one thread), "memory_bandwidth" (bytes/s, one thread's memcpy),
/// "comm_busbw" (bytes/s, threads backend), "comm_alpha" (s), "cores", "memory" (bytes).
/// Throws ss::Error naming @p source and the field when the text is not such an object.
Hardware cpu_local_from_json(const std::string& text, const std::string& source);

/// The defaults of cpu-local (measured on the development machine; see docs/formulas.md).
Hardware cpu_local_defaults();

}  // namespace ss
