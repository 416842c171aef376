// trace.cpp — recording: the Tracer, ScopedSpan and the nccl-tests bytes convention.
// The Tracer keeps its events in an EventLog (event_log.h: off the malloc heap).
// Writing and reading the file is in trace_io.cpp.
#include "comm/trace/trace.h"

#include <utility>

#include "comm/trace/event_log.h"
#include "core/check.h"

namespace ss {

uint64_t collective_bytes(const std::string& op, uint64_t count, size_t elem_size, int n) {
    if (op == "all_reduce" || op == "broadcast" || op == "send" || op == "recv")
        return count * elem_size;
    if (op == "all_gather" || op == "reduce_scatter" || op == "all_to_all")
        return count * uint64_t(n) * elem_size;
    if (op == "barrier") return 0;
    SS_FAIL("collective_bytes: unknown op \"" << op << "\"");
}

double busbw_factor(const std::string& op, int n) {
    if (n <= 0) return 0;
    if (op == "all_reduce") return 2.0 * (n - 1) / n;
    if (op == "all_gather" || op == "reduce_scatter" || op == "all_to_all") return double(n - 1) / n;
    if (op == "broadcast" || op == "send" || op == "recv") return 1.0;
    return 0.0;  // barrier moves no bytes
}

// ---- Tracer ----------------------------------------------------------------------

Tracer::Tracer(int rank, TraceClock::time_point origin, double memory_interval_us)
    : rank_(rank), origin_(origin), memory_interval_us_(memory_interval_us), log_(std::make_unique<EventLog>()) {}

Tracer::~Tracer() = default;

void Tracer::record(TraceEvent ev) {
    ev.rank = rank_;
    log_->append(ev);
}

TraceEvent Tracer::memory_event(const MemSample& s) const {
    TraceEvent ev;
    ev.kind = TraceEvent::Kind::memory;
    ev.rank = rank_;
    ev.name = "memory";
    ev.cat = "memory";
    ev.ts_us = s.ts_us;
    ev.mem = s.mem;
    return ev;
}

// The throttle: the first change after a quiet interval is written at once;
// changes within memory_interval_us of the last written one are held back,
// keeping only the one with the highest total (the peak) and the latest. They
// are written when the next change comes after the interval, or by events().
void Tracer::record_memory(const Ledger& ledger) {
    MemSample s;
    s.ts_us = now_us();
    for (int c = 0; c < kMemCategories; ++c) s.mem[c] = ledger.live(Mem(c));
    s.total = ledger.live_total();
    if (s.ts_us - last_memory_us_ >= memory_interval_us_) {
        each_pending([this](const TraceEvent& ev) { log_->append(ev); });
        pending_peak_.ts_us = pending_last_.ts_us = -1;
        log_->append(memory_event(s));
        last_memory_us_ = s.ts_us;
        return;
    }
    last_is_peak_ = pending_peak_.ts_us < 0 || s.total >= pending_peak_.total;
    if (last_is_peak_) pending_peak_ = s;
    pending_last_ = s;
}

void Tracer::attach_ledger(Ledger& ledger) {
    previous_on_change_ = ledger.on_change;
    ledger.on_change = [this](const Ledger& l) {
        if (previous_on_change_) previous_on_change_(l);
        record_memory(l);
    };
    record_memory(ledger);
}

void Tracer::detach_ledger(Ledger& ledger) {
    ledger.on_change = std::move(previous_on_change_);
    previous_on_change_ = nullptr;
}

std::vector<TraceEvent> Tracer::events() const {
    std::vector<TraceEvent> out;
    log_->decode(out);
    each_pending([&out](TraceEvent ev) { out.push_back(std::move(ev)); });
    return out;
}

void Tracer::clear() {
    log_->clear();
    pending_peak_.ts_us = pending_last_.ts_us = -1;
    last_memory_us_ = -1e300;
}

std::vector<std::unique_ptr<Tracer>> make_tracers(int world, double memory_interval_us) {
    SS_CHECK(world >= 1, "make_tracers: world=" << world << " must be at least 1");
    auto origin = TraceClock::now();
    std::vector<std::unique_ptr<Tracer>> out;
    for (int r = 0; r < world; ++r) out.push_back(std::make_unique<Tracer>(r, origin, memory_interval_us));
    return out;
}

// ---- ScopedSpan ------------------------------------------------------------------

ScopedSpan::ScopedSpan(Tracer* tracer, const char* name, const char* category)
    : tracer_(tracer) {
    if (!tracer_) return;
    name_ = name;
    category_ = category;
    start_us_ = tracer_->now_us();
}

ScopedSpan::ScopedSpan(Tracer* tracer, const std::string& name, const char* category, nlohmann::json args)
    : tracer_(tracer) {
    if (!tracer_) return;
    name_ = name;
    category_ = category;
    args_ = std::move(args);
    start_us_ = tracer_->now_us();
}

ScopedSpan::~ScopedSpan() {
    if (!tracer_) return;
    TraceEvent ev;
    ev.kind = TraceEvent::Kind::span;
    ev.tid = kComputeLane;
    ev.name = std::move(name_);
    ev.cat = std::move(category_);
    ev.ts_us = start_us_;
    ev.dur_us = tracer_->now_us() - start_us_;
    if (!args_.is_null()) ev.args = std::move(args_);
    tracer_->record(std::move(ev));
}

}  // namespace ss
