// trace_overlap.h — measured overlap: how much of a rank's communication hid under its compute.
//
// An asynchronous collective is issued, runs while the rank computes, and is
// waited for later. Its event says three things (trace.h, docs/trace-format.md):
//
//     issued_us          ts_us                          ts_us + dur_us
//        |-- queued --------|============ the call ===========|
//                                              |== exposed ===|   exposed_us: the rank was blocked
//                                              ^ the rank calls wait()
//
// The rank is blocked from the moment it waits until the call completes, so the
// exposed time is the END of the call; the rest of the call ran under compute
// (hidden). A blocking call is exposed whole. Per rank and training step:
//
//     comm     = | union of the rank's calls [ts, ts + dur] |   two calls in flight at once count once
//     exposed  = min(sum of exposed_us, comm)                   (dur_us where exposed_us is -1)
//     hidden   = 1 - exposed / comm                             the fraction of comm under compute
//
// Holistic Trace Analysis calls this communication/computation overlap
// (HTA, "Communication Computation Overlap": the share of communication time
// that overlaps computation; github.com/facebookresearch/HolisticTraceAnalysis,
// hta.readthedocs.io, features/comm_comp_overlap). HTA intersects the comm and
// compute kernels on the GPU's streams; here the rank reports its own blocked
// time, which is what a rank on CPU threads or MPI can measure honestly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "comm/trace/trace.h"

namespace ss {

/// When @p ev was issued: issued_us clamped to at most ts_us, or ts_us where it is -1 (a blocking call).
double issued_time_us(const TraceEvent& ev);
/// The blocked part of @p ev: exposed_us clamped to [0, dur_us], or dur_us where it is -1 (not recorded).
double exposed_time_us(const TraceEvent& ev);
/// True if @p ev carries either overlap field (Comm recorded it as a possibly asynchronous call).
bool has_overlap_fields(const TraceEvent& ev);

/// OverlapRow::step of the row for events before the first training step (label step <= 0:
/// the initial broadcasts, the setup's barriers).
constexpr int kOverlapSetup = -1;
/// OverlapRow::step of a rank's total over all its collectives.
constexpr int kOverlapTotal = -2;

/// One rank's communication in one step, and how much of it hid under compute.
struct OverlapRow {
    int rank = 0;               ///< the rank (pid)
    int step = kOverlapSetup;   ///< the label's training step, kOverlapSetup, or kOverlapTotal
    uint64_t calls = 0;         ///< collective events
    uint64_t async_calls = 0;   ///< of which issued before they ran (issued_us < ts_us)
    double comm_us = 0;         ///< length of the union of the calls' [ts, ts + dur]
    double exposed_us = 0;      ///< sum of exposed_time_us, clipped to comm_us
    /// 1 - exposed / comm: the share of the communication time the rank spent computing; 0 without comm.
    double hidden_fraction() const { return comm_us > 0 ? 1.0 - exposed_us / comm_us : 0.0; }
};

/// The overlap of every rank, per step: rows sorted by rank, then the setup row (if
/// the rank has setup events), the steps in order, and the rank's total last. The
/// total is computed over all the rank's calls at once (its own union), not summed
/// from the rows. Only collectives are used; other events are ignored.
std::vector<OverlapRow> overlap_by_step(const std::vector<TraceEvent>& events);

/// The table `shardscope trace summary` prints under "overlap", one line per row.
std::string format_overlap_table(const std::vector<OverlapRow>& rows);

/// What otherData.emulated_links says ("emulated links (not measured): 1 GB/s, 6 us on every link"),
/// or "" when the run's links were real (the key is absent or not a string).
std::string emulated_links_note(const nlohmann::json& other_data);

/// The time scale of a run whose links --emulate scaled: otherData.emulated_time_scale, the
/// number; in a trace from before it, the sentence's ("..., time-scaled x 9255 (h100x8-ib400 on
/// this CPU's 107 GFLOP/s)" in otherData.emulated_links, EmulatedLinks::describe, src/comm/links.cpp,
/// to 3 significant digits or the nearest integer). 1 when neither has one (real links, or --link's
/// unscaled ones).
double emulated_time_scale(const nlohmann::json& other_data);

}  // namespace ss
