// links.h — emulated links: how long a collective would take on a cluster's links.
//
// The threads backend runs every rank on one machine, where a collective is a
// memcpy. To show what a cluster's communication costs, a run can emulate its
// links: each collective then lasts the time the alpha-beta model gives for its
// bytes on the slowest link its group crosses (Hockney 1994; the ring
// algorithms of Thakur, Rabenseifner & Gropp 2005, "Optimization of Collective
// Communication Operations in MPICH", IJHPCA 19(1)):
//
//     t = busbw_factor(op, n) x S / B  +  hops(op, n) x alpha       (n = group size, S = bytes)
//
//     op               bandwidth factor   hops       (ring)
//     all_reduce       2(n-1)/n           2(n-1)     reduce-scatter, then all-gather
//     all_gather       (n-1)/n            n-1
//     reduce_scatter   (n-1)/n            n-1
//     all_to_all       (n-1)/n            n-1
//     broadcast        1                  n-1        pipelined ring
//     send, recv       1                  1
//     barrier          0                  2(n-1)
//
// The factors are nccl-tests' bus-bandwidth table (doc/PERFORMANCE.md), kept
// once in busbw_factor (comm/trace/trace.h). Two tiers: ranks r and s share a
// node when r / N == s / N (N = --gpus-per-node); a group inside one node uses
// the intra link, one that spans nodes the inter link.
//
//     node 0: ranks 0..N-1 ==intra==   node 1: ranks N..2N-1 ==intra==
//                  \________________inter_________________/
//
// The inter link is one GPU's NIC. A ring collective (all_reduce, all_gather,
// reduce_scatter, broadcast) over a group with k members in every node leaves
// each node through k NICs at once: NCCL runs several rings (channels), each
// crossing between nodes through another NIC, so the group's bus bandwidth
// between nodes is k x inter, up to the node's own intra link
// (nics_in_use). With k = 4 and 8 GPUs a node, nccl-tests read ~45 and ~90
// GB/s on the same 4 nodes (NVIDIA/nccl issue 1168). all_to_all, send and
// recv go out through each GPU's own NIC: inter.
//
// --emulate PRESET also scales time: a CPU computes r = GPU peak / CPU matmul
// rate times slower than the GPU, so every link time is multiplied by r to keep
// the cluster's compute-to-communication ratio. Such times are emulated, never
// measured, and every output of the run says so (describe()). Formulas and
// what the model leaves out: docs/formulas.md, "Emulated links".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ss {

/// One emulated link: bandwidth in GB/s (1e9 bytes per second, as nccl-tests
/// counts) and latency (alpha, per hop) in microseconds. (Named EmulatedLink,
/// not Link: plan/hardware.h's ss::Link is the planner's, in bytes/s and seconds.)
struct EmulatedLink {
    double gbps = 0;  ///< bandwidth, GB/s (1e9 bytes/s): the bus bandwidth a collective reaches on it
    double us = 0;    ///< latency alpha of one hop, microseconds
};

/// The links a threads run emulates (--link, --link-intra/--link-inter --gpus-per-node, --emulate).
struct EmulatedLinks {
    bool on = false;          ///< false: no emulation, every time is 0
    EmulatedLink intra;       ///< between ranks of one node (or every link with one tier)
    EmulatedLink inter;       ///< between nodes
    int gpus_per_node = 0;    ///< 0: one tier (intra == inter); ranks r, s share a node when r / N == s / N
    double time_scale = 1;    ///< --emulate: every link time is multiplied by this (GPU peak / this CPU's matmul rate)
    std::string preset;       ///< the --emulate preset's name, or ""
    double cpu_gflops = 0;    ///< --emulate: this CPU's measured matmul rate (GFLOP/s) the scale came from

    /// One line for every output of such a run, e.g.
    /// "emulated links (not measured): 1 GB/s, 6 us on every link" or
    /// "emulated links (not measured): intra 360 GB/s 2 us, inter 40 GB/s 6 us, 8 ranks per node,
    /// time-scaled x 3121 (h100x8-ib400 on this CPU's 317 GFLOP/s)". "" when off.
    std::string describe() const;
    /// The link a group crosses that is slowest: inter if its ranks span more
    /// than one node, else intra (intra with one tier or an empty group).
    EmulatedLink slowest(const std::vector<int>& ranks) const;
    /// The link collective @p op over @p ranks runs at: slowest(), and for a ring
    /// collective that spans nodes, inter's bandwidth times the fewest members the
    /// group has in one of its nodes (nics_in_use), at most intra's.
    EmulatedLink group_link(const std::string& op, const std::vector<int>& ranks) const;
    /// Seconds the collective @p op ("all_reduce", "all_gather", "reduce_scatter",
    /// "all_to_all", "broadcast", "send", "recv", "barrier") takes: alpha-beta over
    /// the slowest link of @p ranks (the table in this file's comment), times
    /// time_scale. @p bytes is the per-rank size as nccl-tests counts it
    /// (collective_bytes in comm/trace/trace.h: all_reduce count*size;
    /// all_gather, reduce_scatter, all_to_all count_per_rank*n*size; send, recv,
    /// broadcast count*size). @p ranks is the group ([src, dst] for send/recv).
    /// 0 when off or for a group of one. Throws ss::Error for an unknown op.
    double seconds(const std::string& op, uint64_t bytes, const std::vector<int>& ranks) const;
};

/// How many NICs of each node a collective @p op over a group that spans nodes, with
/// @p per_node of its members in every node, drives at once: @p per_node for the ring
/// collectives (all_reduce, all_gather, reduce_scatter, broadcast: NCCL's channels
/// cross between nodes through different NICs), 1 for all_to_all, send, recv and
/// barrier (each GPU's own NIC, or latency only). The planner (plan/comm.h) and
/// the emulated links both take the group's bandwidth between nodes as this x one
/// GPU's NIC, at most the node's own link.
int nics_in_use(const std::string& op, int per_node);

/// A group's bandwidth between nodes, in the unit of @p intra and @p inter (one GPU's NIC):
/// @p inter x nics_in_use(@p op, @p per_node), at most the node's own link, max(@p intra, @p inter).
/// The one rule the planner (plan/comm.cpp, group_link) and the emulated links both apply.
double across_nodes(const std::string& op, int per_node, double intra, double inter);

/// Parses a link flag's value "GBPS[,US]": "1,6" is 1 GB/s and 6 us, "1" is
/// 1 GB/s and 0 us. @p flag ("--link", "--link-intra", ...) names it in errors.
/// Throws ss::Error, saying what to type, for an empty value, a bandwidth that is
/// not a positive finite number, a latency that is not a finite number >= 0, or
/// anything after the two numbers.
EmulatedLink parse_link(const std::string& flag, const std::string& text);

/// A cluster --emulate can stand for: its GPU's peak and its links.
struct ClusterPreset {
    std::string name;       ///< the --emulate value, e.g. "h100x8-ib400"
    std::string gpu;        ///< what the GPU is, e.g. "H100 SXM"
    double peak_tflops = 0; ///< the GPU's dense bf16 peak, TFLOP/s (1e12 FLOP/s)
    EmulatedLink intra;     ///< between the GPUs of one node
    EmulatedLink inter;     ///< between nodes, per GPU (one NIC per GPU)
    int gpus_per_node = 0;  ///< GPUs (ranks) per node
    std::string source;     ///< where the numbers come from
};

/// Every --emulate preset: h100x8-ib400, h100x4-ib400, a100x8-ib200 (values and
/// sources in docs/formulas.md, "Emulated links").
const std::vector<ClusterPreset>& cluster_presets();

/// The links of a run from its flags, checked. All strings empty and
/// @p gpus_per_node 0: off. Either
///   --link GBPS[,US]                                     one tier: every link alike;
///   --link-intra A --link-inter B --gpus-per-node N      two tiers, N >= 1 dividing @p world;
///   --emulate PRESET                                     a preset's links and node size (which must
///                                                        divide @p world), time-scaled by its peak /
///                                                        (@p cpu_gflops x 1e9).
/// @p cpu_gflops is this CPU's matmul rate (cpu::measure_cpu_matmul_gflops); it is
/// used only with --emulate, where it must be positive. Throws ss::Error naming the
/// flag and what to type instead when the flags do not combine (--link with the
/// two-tier flags, --emulate with any link flag, one of --link-intra/--link-inter
/// alone) or a value is wrong; an unknown preset lists the known ones.
EmulatedLinks make_emulated_links(const std::string& link, const std::string& link_intra,
                                  const std::string& link_inter, int gpus_per_node, const std::string& emulate,
                                  int world, double cpu_gflops);

}  // namespace ss
