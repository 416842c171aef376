// event_log.h — where a Tracer keeps its events: encoded, outside the malloc heap.
//
// Not in a std::vector<TraceEvent>. The engine keeps every rank's tensors in the one
// malloc heap, which never shrinks (keep_host_memory, core/device.h), and a step frees
// its tensors and allocates them again in the same sizes the next step. Events kept on
// that heap, each with small blocks of its own (a group's ranks, a span's args), land one
// by one in the holes the freed tensors leave, and a hole holding a few bytes of trace no
// longer fits its tensor the next step: the heap grew step after step. `train --model
// small --ranks 8 --zero 3 --steps 20` peaked at 320 MB of RSS untraced and 1.06 GB with
// --trace, for 2,500 events a rank (under jemalloc, which keeps small and large blocks
// apart: 284 and 292 MB).
//
// So each event is encoded into bytes (a fixed header, then its strings, its group and
// its args in CBOR) in blocks mapped from the kernel for the log alone, and decoded
// again when the trace is written. Recording still allocates for a moment (the caller's
// TraceEvent), but keeps nothing on the heap.
#pragma once

#include <cstddef>
#include <vector>

#include "comm/trace/trace.h"

namespace ss {

/// The events of one Tracer, in order, each encoded in blocks of their own (mmap),
/// never on the malloc heap. Used by one thread at a time, as its Tracer is.
class EventLog {
public:
    EventLog() = default;
    EventLog(const EventLog&) = delete;
    EventLog& operator=(const EventLog&) = delete;
    /// Unmaps every block.
    ~EventLog();

    /// Appends a copy of @p ev. Throws ss::Error when the kernel maps no more memory.
    void append(const TraceEvent& ev);
    /// Appends every event, in order, to @p out: equal to what append() was given, field for
    /// field (args through CBOR and back: the same JSON value, bit for bit).
    void decode(std::vector<TraceEvent>& out) const;
    /// Forgets every event and unmaps the blocks.
    void clear();

private:
    struct Block {
        char* data;
        size_t used, size;
    };
    char* reserve(size_t n);

    std::vector<Block> blocks_;
    size_t count_ = 0;
};

}  // namespace ss
