// event_log.cpp — the Tracer's event log; see event_log.h.
#include "comm/trace/event_log.h"

#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "core/check.h"

namespace ss {

namespace {

// An event's fixed part, copied byte for byte (every member trivially copyable); its
// strings, group and args follow it, the header giving their lengths.
struct Header {
    uint8_t kind = 0, has_args = 0;
    int32_t rank = 0, tid = 0, peer = -1;
    double ts_us = 0, dur_us = 0, gpu_us = -1, issued_us = -1, exposed_us = -1;
    int64_t file_index = -1;
    uint64_t bytes = 0, count = 0;
    Label label;
    std::array<uint64_t, kMemCategories> mem{};
    uint32_t name_n = 0, cat_n = 0, axis_n = 0, dtype_n = 0, group_n = 0, args_n = 0;
};
static_assert(std::is_trivially_copyable<Header>::value, "EventLog copies headers with memcpy");

constexpr size_t kBlock = size_t(1) << 20;  // 1 MiB: some 5,000 events

}  // namespace

EventLog::~EventLog() { clear(); }

void EventLog::append(const TraceEvent& ev) {
    Header h;
    h.kind = uint8_t(ev.kind);
    h.rank = ev.rank;
    h.tid = ev.tid;
    h.ts_us = ev.ts_us;
    h.dur_us = ev.dur_us;
    h.file_index = ev.file_index;
    h.bytes = ev.bytes;
    h.count = ev.count;
    h.label = ev.label;
    h.peer = ev.peer;
    h.gpu_us = ev.gpu_us;
    h.issued_us = ev.issued_us;
    h.exposed_us = ev.exposed_us;
    h.mem = ev.mem;
    // CBOR, not JSON text: exact for every value a json holds (a NaN, which text would write
    // as null; bytes that are not UTF-8, on which dump() throws) and never throws here, inside
    // a ScopedSpan's destructor.
    const std::vector<uint8_t> args = ev.args.is_null() ? std::vector<uint8_t>() : nlohmann::json::to_cbor(ev.args);
    h.has_args = !ev.args.is_null();
    h.name_n = uint32_t(ev.name.size());
    h.cat_n = uint32_t(ev.cat.size());
    h.axis_n = uint32_t(ev.axis.size());
    h.dtype_n = uint32_t(ev.dtype.size());
    h.group_n = uint32_t(ev.group.size());
    h.args_n = uint32_t(args.size());
    const size_t n = sizeof h + h.name_n + h.cat_n + h.axis_n + h.dtype_n + h.group_n * sizeof(int) + h.args_n;
    char* p = reserve(n);
    auto put = [&p](const void* src, size_t bytes) {
        if (bytes) std::memcpy(p, src, bytes);
        p += bytes;
    };
    put(&h, sizeof h);
    put(ev.name.data(), h.name_n);
    put(ev.cat.data(), h.cat_n);
    put(ev.axis.data(), h.axis_n);
    put(ev.dtype.data(), h.dtype_n);
    put(ev.group.data(), h.group_n * sizeof(int));
    put(args.data(), h.args_n);
    ++count_;
}

void EventLog::decode(std::vector<TraceEvent>& out) const {
    out.reserve(out.size() + count_);
    for (const Block& b : blocks_) {
        for (const char* p = b.data; p < b.data + b.used;) {
            Header h;
            std::memcpy(&h, p, sizeof h);
            p += sizeof h;
            auto text = [&p](uint32_t n) {
                std::string t(p, n);
                p += n;
                return t;
            };
            TraceEvent ev;
            ev.kind = TraceEvent::Kind(h.kind);
            ev.rank = h.rank;
            ev.tid = h.tid;
            ev.ts_us = h.ts_us;
            ev.dur_us = h.dur_us;
            ev.file_index = h.file_index;
            ev.bytes = h.bytes;
            ev.count = h.count;
            ev.label = h.label;
            ev.peer = h.peer;
            ev.gpu_us = h.gpu_us;
            ev.issued_us = h.issued_us;
            ev.exposed_us = h.exposed_us;
            ev.mem = h.mem;
            ev.name = text(h.name_n);
            ev.cat = text(h.cat_n);
            ev.axis = text(h.axis_n);
            ev.dtype = text(h.dtype_n);
            ev.group.resize(h.group_n);
            if (h.group_n) std::memcpy(ev.group.data(), p, h.group_n * sizeof(int));
            p += h.group_n * sizeof(int);
            if (h.has_args) ev.args = nlohmann::json::from_cbor(p, p + h.args_n);
            p += h.args_n;
            out.push_back(std::move(ev));
        }
    }
}

void EventLog::clear() {
    for (const Block& b : blocks_) munmap(b.data, b.size);
    blocks_.clear();
    count_ = 0;
}

// n bytes at the end of the last block, or of a new one (an event never spans two).
char* EventLog::reserve(size_t n) {
    if (blocks_.empty() || blocks_.back().size - blocks_.back().used < n) {
        const size_t size = std::max(kBlock, n);
        void* data = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        SS_CHECK(data != MAP_FAILED, "out of memory keeping the trace: mapping " << size << " bytes failed");
        // The block list itself grows on the heap, rarely: 64 entries hold 64 MiB of events.
        if (blocks_.capacity() == blocks_.size()) blocks_.reserve(std::max<size_t>(64, 2 * blocks_.size()));
        blocks_.push_back(Block{static_cast<char*>(data), 0, size});
    }
    Block& b = blocks_.back();
    char* p = b.data + b.used;
    b.used += n;
    return p;
}

}  // namespace ss
