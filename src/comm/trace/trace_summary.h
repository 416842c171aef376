// trace_summary.h — a trace's collectives added up: what `shardscope trace summary` prints.
//
// Rows are (axis, op, payload): how many calls, how many bytes, how long, and
// the bandwidths nccl-tests would report for them:
//
//     algbw = bytes / time            (bytes per rank, as nccl-tests counts them)
//     busbw = algbw * factor(op, n)   (all_reduce 2(n-1)/n; all_gather,
//                                      reduce_scatter, all_to_all (n-1)/n;
//                                      broadcast, send, recv 1)
//
// Each rank records its own side of every collective, so calls, bytes and time
// are sums over the ranks' events; algbw is then the time-weighted mean of the
// ranks' bandwidths. An event's time is its gpu_us where the backend measured
// one with CUDA events (nccl: the collective on the device), else its dur (the
// host's wall time inside the call, which also counts staging and the host's wait).
//
// Where the trace knows its ranks per node (otherData.gpus_per_node, written by
// a run with --gpus-per-node or --emulate, or --gpus-per-node N here), every row gets
// an "across nodes" column, the part of `moved` in calls whose group spans
// nodes, and a "crosses nodes" table gives per rank and step the moved bytes
// inside the rank's node and across nodes (the counting rule: trace_nodes.h).
//
// With --top N, last, the N largest calls one by one (largest_calls): each a
// rank's own side of one collective, by bytes, then by time.
//
// Then the overlap table (trace_overlap.h): per rank and step, the time in
// collectives (their union), the part of it the rank was blocked, and the
// share hidden under compute. A run whose links were emulated (otherData
// "emulated_links") says so above every table: its times are not measured.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "comm/label.h"
#include "comm/trace/trace.h"
#include "comm/trace/trace_nodes.h"
#include "comm/trace/trace_overlap.h"
#include "comm/trace/trace_prediction.h"

namespace ss {

/// The collectives of one (axis, op, payload), summed over ranks.
struct CollectiveTotals {
    std::string axis;        ///< "dp", "tp", ... ("" in per-payload totals)
    std::string op;          ///< "all_reduce", ... ("" in per-payload totals)
    Payload payload = Payload::scalar;  ///< what the bytes were
    uint64_t calls = 0;      ///< events, over all ranks
    uint64_t bytes = 0;      ///< bytes, over all ranks
    double time_us = 0;      ///< time inside the calls (gpu_us where measured, else dur), over all ranks
    double bus_bytes = 0;    ///< sum of bytes * busbw_factor(op, group size): the "moved" column
    double across_bytes = 0; ///< of bus_bytes, the calls whose group spans nodes (moved_across_nodes; 0 without nodes)

    /// bytes / time in GB/s (1e9 bytes per second, as nccl-tests), 0 without time. With
    /// @p time_scale > 1 (--emulate's, TraceSummary::time_scale) the time is first taken
    /// back to the emulated cluster's, time / time_scale.
    double algbw_gbs(double time_scale = 1) const { return time_us > 0 ? bytes / time_us * time_scale * 1e-3 : 0; }
    /// algbw * factor in GB/s (@p time_scale as for algbw_gbs).
    double busbw_gbs(double time_scale = 1) const { return time_us > 0 ? bus_bytes / time_us * time_scale * 1e-3 : 0; }
};

/// A trace added up.
struct TraceSummary {
    int world = 0;                             ///< ranks in the trace
    int mesh_world = 0;                        ///< otherData.mesh.world, the ranks the run had (0: not recorded)
    std::vector<int> missing_ranks;            ///< ranks below max(world, mesh_world) without a single event
    uint64_t collectives = 0;                  ///< collective events, over all ranks
    uint64_t spans = 0;                        ///< compute spans, over all ranks
    uint64_t gpu_timed = 0;                    ///< collectives timed by CUDA events (gpu_us), not dur
    std::vector<CollectiveTotals> rows;        ///< per (axis, op, payload), sorted
    std::vector<CollectiveTotals> by_payload;  ///< per payload (axis and op empty)
    CollectiveTotals total;                    ///< everything
    std::vector<OverlapRow> overlap;           ///< per rank and step (overlap_by_step of the filtered events)
    std::string emulated_links;                ///< otherData.emulated_links, "" for a run on real links
    /// --emulate's time scale (emulated_time_scale), 1 otherwise: the bandwidth columns divide
    /// time by it, so they are the emulated cluster's GB/s, not the run's slowed-down ones.
    double time_scale = 1;
    int gpus_per_node = 0;                     ///< ranks per node the "across nodes" counts use; 0: not known, no such counts
    std::vector<NodeTrafficRow> nodes;         ///< per rank and step, inside and across nodes (empty without gpus_per_node)
    StepTimeCheck step_time;                   ///< the whole run's measured step time beside the prediction (otherData)
};

/// The training step @p ev belongs to: a collective's label, a span's "step" argument
/// where it is an integer from -1 to 2^31 - 1; -1 for none (a string or 2^32 + 2 is no step).
int event_step(const TraceEvent& ev);

/// Which events to add up (-1: all).
struct TraceFilter {
    int rank = -1;  ///< only this rank's events
    int step = -1;  ///< only events labelled with this training step
};

/// Throws ss::Error when @p filter asks for a rank or a step that no event of
/// @p trace has, naming the ranks or steps it does have ("--rank 99: the trace
/// has no events of rank 99; its ranks are 0-7"). `trace summary` calls it; the
/// viewer, whose filters come from the trace, does not.
void check_trace_filter(const Trace& trace, const TraceFilter& filter);

/// Adds up the collectives of @p trace that pass @p filter. @p gpus_per_node > 0
/// counts what crosses nodes of that many ranks; 0 takes the trace's own
/// (otherData.gpus_per_node, trace_gpus_per_node), and a trace without one gets no such counts.
TraceSummary summarize_trace(const Trace& trace, const TraceFilter& filter = {}, int gpus_per_node = 0);

/// The summary as the tables `shardscope trace summary` prints; @p exact prints
/// bytes as exact integers instead of KiB/MiB. The "moved" column is
/// bytes x busbw factor: what each rank really sends on a ring (the ZeRO
/// paper's communication volume). With summary.gpus_per_node > 0, an "across
/// nodes" column and the "crosses nodes" table (trace_nodes.h). The overlap
/// table follows; the emulated-links line, where the run had one, comes first.
std::string format_trace_summary(const TraceSummary& summary, const std::string& source, bool exact = false);

/// The @p n largest collectives of @p trace that pass @p filter, one event each
/// (a rank's own side of a call), by bytes; among calls of one size, the one whose
/// slowest copy took longest first (time: gpu_us where measured, else dur), with
/// its copies (the same op, axis, group, step, layer, phase, micro-batch and
/// payload) side by side, slowest first, then by rank and start: what `trace
/// summary --top N` lists.
std::vector<TraceEvent> largest_calls(const Trace& trace, const TraceFilter& filter, int n);

/// @p calls as a table: op, axis, payload, bytes, moved, time, rank, step, layer
/// ("-" where the call has none, as a step's gradient norm), group (its global
/// ranks: the rows of one call on several ranks have the same group and step).
std::string format_largest_calls(const std::vector<TraceEvent>& calls, bool exact = false);

/// "12.3 MiB" (B, KiB, MiB, GiB).
std::string bytes_str(double bytes);

}  // namespace ss
