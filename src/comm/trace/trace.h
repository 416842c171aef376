// trace.h — the Tracer: what every rank did, and when, in one Chrome trace.
//
// Each rank owns a Tracer. Comm records every collective in it (op, group,
// bytes, label, start, duration, the device time where the backend measured
// it with CUDA events, and for an asynchronous call when it was issued and how
// much of it the rank spent blocked: trace_overlap.h); the engine records compute spans with
// ScopedSpan; the rank's Ledger reports every change of its memory. At the end
// write_chrome_trace() puts all ranks in ONE file in Chrome Trace Event Format,
// which Perfetto (ui.perfetto.dev), chrome://tracing and shardscope-viz open:
//
//     pid = rank                 lanes "rank 0", "rank 1", ...
//     tid 0 = compute            ScopedSpan events ("ph": "X")
//     tid 1 = comm               one "ph": "X" event per collective, cat "comm"
//     counter "memory"           "ph": "C", one series per Ledger category
//
// Every field, the bytes convention (nccl-tests') and an example are in
// docs/trace-format.md. read_chrome_trace() parses such a file back.
//
// Tracing off costs a null-pointer test: Comm and ScopedSpan do nothing when
// their Tracer* is null. A Tracer is used by its rank's thread only (no lock).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "comm/label.h"
#include "core/ledger.h"

namespace ss {

/// The clock of every trace timestamp. All ranks of a run share one origin.
using TraceClock = std::chrono::steady_clock;

/// What a trace file says it is: its top-level "format" (beside "format_version").
constexpr const char* kTraceFormat = "shardscope-trace";

/// The version of the trace format: write_chrome_trace writes it as the file's top-level
/// "format_version", and read_chrome_trace reads files up to it and refuses a newer one
/// (a file without the key, older or another tool's, is read as before; the key counts only
/// where "format" is kTraceFormat, as another tool's trace may have a version of its own). Bump it when a
/// change would make an older reader misread a new file: a field renamed, removed, or given
/// another meaning or unit, or an event kind the readers must not skip. A new optional key
/// that older readers can ignore (as args.gpu_us and args.issued_us were) does not bump it.
constexpr int kTraceFormatVersion = 1;

/// The lane (Chrome "tid") of a rank's compute spans.
constexpr int kComputeLane = 0;
/// The lane ("tid") of a rank's collectives.
constexpr int kCommLane = 1;

/// One event of a trace, as recorded and as read back.
struct TraceEvent {
    /// What the event is.
    enum class Kind {
        collective,  ///< "ph": "X" on the comm lane, cat "comm"
        span,        ///< "ph": "X" on the compute lane
        memory,      ///< "ph": "C" named "memory"
    };
    Kind kind = Kind::span;  ///< what the event is
    int rank = 0;            ///< "pid"
    int tid = kComputeLane;  ///< "tid": kComputeLane or kCommLane
    std::string name;      ///< op for collectives, the span's name, "memory" for counters
    std::string cat;       ///< "comm" for collectives, the span's category, "memory"
    double ts_us = 0;      ///< start, microseconds since the run's origin
    double dur_us = 0;     ///< duration (0 for memory samples)
    /// Where a reader found it: its index in the file's traceEvents, metadata events
    /// counted, so messages say "traceEvents[30]" as the file has it; -1 when recorded.
    int64_t file_index = -1;

    // -- collectives (kind == collective) --
    std::string axis;       ///< the group's mesh axis ("dp", "tp", ...)
    std::vector<int> group; ///< global ranks of the group; [src, dst] for send/recv
    uint64_t bytes = 0;     ///< per rank, as nccl-tests counts them (see collective_bytes)
    uint64_t count = 0;     ///< elements as passed to the call (per rank for all_gather etc.)
    std::string dtype;      ///< "fp32", "bf16", "int32", "uint8" (ZeRO++'s quantized payloads)
    Label label;            ///< payload, layer, phase, microbatch, step
    int peer = -1;          ///< send/recv: the other rank; -1 otherwise
    /// Microseconds the call took on the device, measured by the backend with
    /// CUDA events (Backend::last_gpu_seconds: nccl, around the NCCL call on its
    /// stream); -1 when not measured (threads, mpi, nccl's send/recv). dur_us is
    /// the host's wall time and also counts staging copies and the host's wait.
    double gpu_us = -1;
    /// When the rank asked for the call (microseconds since the origin): earlier than ts_us
    /// for an asynchronous call started ahead of its run; -1 = the same as ts_us (a blocking call).
    double issued_us = -1;
    /// Microseconds of the call during which this rank was blocked waiting for it, not computing:
    /// dur_us for a blocking call, less (often 0) for an asynchronous one that hid under compute.
    /// -1 = not recorded (an older trace): readers take dur_us.
    double exposed_us = -1;

    // -- memory samples (kind == memory): live bytes per Ledger category --
    std::array<uint64_t, kMemCategories> mem{};  ///< indexed by int(Mem)

    // -- spans (kind == span): free-form arguments --
    /// The span's "args"; null for collectives and memory samples, which build
    /// none on the heap (an empty JSON object is one small block each). The
    /// Tracer keeps no event on the heap either (event_log.h says why).
    nlohmann::json args;
};

/// The bytes a collective moves per rank, as nccl-tests counts them:
///   all_reduce: count*size          all_gather: count_per_rank*n*size (the recv)
///   reduce_scatter: count_per_rank*n*size (the send)   all_to_all: count_per_rank*n*size
///   broadcast, send, recv: count*size                  barrier: 0
uint64_t collective_bytes(const std::string& op, uint64_t count, size_t elem_size, int n);

/// nccl-tests' bus-bandwidth factor: busbw = algbw * factor. all_reduce 2(n-1)/n;
/// all_gather, reduce_scatter, all_to_all (n-1)/n; broadcast, send, recv 1; barrier 0.
/// (nccl-tests doc/PERFORMANCE.md: the factor makes busbw comparable to the
/// link's bandwidth whatever n is.)
double busbw_factor(const std::string& op, int n);

/// What one rank did, in order.
class Tracer {
public:
    /// @p memory_interval_us: memory samples closer together than this are
    /// merged, keeping the sample with the highest total of each window (so the
    /// peak is never lost) and the last one. 0 keeps every sample.
    explicit Tracer(int rank, TraceClock::time_point origin = TraceClock::now(),
                    double memory_interval_us = 20.0);
    ~Tracer();
    Tracer(const Tracer&) = delete;
    Tracer& operator=(const Tracer&) = delete;

    /// The rank this tracer belongs to.
    int rank() const { return rank_; }
    /// Microseconds since the origin.
    double now_us() const {
        return std::chrono::duration<double, std::micro>(TraceClock::now() - origin_).count();
    }

    /// Appends an event (its rank is set to this tracer's).
    void record(TraceEvent ev);
    /// Records the Ledger's live bytes now (subject to memory_interval_us).
    void record_memory(const Ledger& ledger);
    /// Hooks ledger.on_change so that every change is sampled; records one
    /// sample now. The Ledger must not change after this Tracer is destroyed
    /// unless detach_ledger() was called. A previous on_change is still called.
    void attach_ledger(Ledger& ledger);
    /// Undoes attach_ledger (restores the previous on_change).
    void detach_ledger(Ledger& ledger);

    /// All events so far, including a memory sample still held by the throttle.
    std::vector<TraceEvent> events() const;
    /// Forgets every event.
    void clear();

private:
    struct MemSample {
        double ts_us = -1;
        std::array<uint64_t, kMemCategories> mem{};
        uint64_t total = 0;
    };
    TraceEvent memory_event(const MemSample& s) const;
    /// Calls @p f with each memory sample the throttle still holds: the window's peak, then its last.
    template <class F>
    void each_pending(F&& f) const {
        if (pending_peak_.ts_us >= 0) f(memory_event(pending_peak_));
        if (pending_last_.ts_us >= 0 && !last_is_peak_) f(memory_event(pending_last_));
    }

    int rank_;
    TraceClock::time_point origin_;
    double memory_interval_us_;
    /// The events so far, encoded in blocks of their own outside the malloc heap
    /// (event_log.h says why).
    std::unique_ptr<class EventLog> log_;
    double last_memory_us_ = -1e300;
    MemSample pending_peak_, pending_last_;  // ts_us < 0: none
    bool last_is_peak_ = false;              // pending_last_ is pending_peak_
    std::function<void(const Ledger&)> previous_on_change_;
};

/// One Tracer per rank, all with the same clock origin (so their lanes line up).
std::vector<std::unique_ptr<Tracer>> make_tracers(int world, double memory_interval_us = 20.0);

/// Times a block of compute into the tracer's compute lane (tid 0):
///
///     { ScopedSpan span(rank.tracer, "h.3 forward", "fwd", {{"layer", 3}}); ... }
///
/// With a null tracer it does nothing.
class ScopedSpan {
public:
    /// Starts a span named @p name (nothing happens if @p tracer is null).
    ScopedSpan(Tracer* tracer, const char* name, const char* category = "compute");
    /// Starts a span with arguments shown beside it (layer, shapes, ...).
    ScopedSpan(Tracer* tracer, const std::string& name, const char* category = "compute",
               nlohmann::json args = nlohmann::json::object());
    ~ScopedSpan();
    ScopedSpan(const ScopedSpan&) = delete;
    ScopedSpan& operator=(const ScopedSpan&) = delete;

    /// Adds an argument shown with the span (no-op without a tracer).
    template <class T>
    void set_arg(const char* key, const T& value) {
        if (tracer_) args_[key] = value;
    }

private:
    Tracer* tracer_;
    std::string name_;
    std::string category_;
    nlohmann::json args_;
    double start_us_ = 0;
};

/// A trace as read back: its events (metadata events are not included), otherData and format version.
struct Trace {
    std::vector<TraceEvent> events;                         ///< in file order
    nlohmann::json other_data = nlohmann::json::object();  ///< the file's "otherData"
    /// The file's "format_version", 1 to kTraceFormatVersion; 0 = none (a trace written
    /// before the key existed, or a Chrome trace of another tool: "format" not kTraceFormat).
    int format_version = 0;
    /// Number of ranks (1 + the highest pid seen).
    int world() const;
};

/// Writes every rank's events to @p path as one Chrome trace (JSON object
/// format), with lane names, @p other_data as "otherData", and the format's
/// name and version (kTraceFormat, kTraceFormatVersion). Writes a
/// temporary file first and renames it (write_file_atomically), so a reader
/// never sees half a trace. Creates the parent folders if needed.
void write_chrome_trace(const std::string& path, const std::vector<const Tracer*>& tracers,
                        const nlohmann::json& other_data = nlohmann::json::object());
/// Same, for the result of make_tracers().
void write_chrome_trace(const std::string& path, const std::vector<std::unique_ptr<Tracer>>& tracers,
                        const nlohmann::json& other_data = nlohmann::json::object());

/// True if @p v is a JSON integer in [@p lo, 2^31 - 1], judged on the 64 bits it
/// was written with, so a reader can cast it to int without wrapping (2^32 + 3 is not 3).
bool fits_int(const nlohmann::json& v, int64_t lo);

/// Reads a file written by write_chrome_trace (or any Chrome trace with the same
/// fields). Throws ss::Error naming the file, the event index and the field
/// when it is not such a trace, and naming both versions when its format_version
/// is newer than kTraceFormatVersion. Events of other kinds ("ph" B/E/i/...) are skipped.
Trace read_chrome_trace(const std::string& path);
/// Same, from text in memory; @p source names it in error messages. The full reader:
/// the whole text as a JSON tree first, then the events.
Trace parse_chrome_trace(const std::string& text, const std::string& source = "trace");
/// What read_chrome_trace does with the file's text: the streaming reader (trace_fast.h,
/// no JSON tree) where it is sure of the file, else parse_chrome_trace. The same Trace,
/// or the same error, as parse_chrome_trace; @p source names the text in messages.
Trace read_chrome_trace_text(const std::string& text, const std::string& source);

}  // namespace ss
