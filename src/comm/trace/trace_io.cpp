// trace_io.cpp — writing the ranks' Tracers as one Chrome trace, and reading it back.
//
// The format is Chrome Trace Event Format's JSON object form, with its own name and version last:
//   {"displayTimeUnit": "ms", "traceEvents": [ ...events... ], "otherData": {...},
//    "format": "shardscope-trace", "format_version": 1}
// Every field is described in docs/trace-format.md.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "comm/trace/trace.h"
#include "comm/trace/trace_check.h"
#include "comm/trace/trace_fast.h"
#include "core/atomic_file.h"
#include "core/check.h"
#include "core/text.h"

namespace ss {

using nlohmann::json;

int Trace::world() const {
    int max_pid = -1;
    for (const auto& ev : events) max_pid = std::max(max_pid, ev.rank);
    return max_pid + 1;
}

// ---- writing ---------------------------------------------------------------------

namespace {

// Microseconds rounded to the nanosecond: the JSON stays short and exact.
double round_us(double us) { return std::round(us * 1000.0) / 1000.0; }

json metadata(const char* name, int pid, int tid, json args) {
    json m = {{"name", name}, {"ph", "M"}, {"pid", pid}, {"args", std::move(args)}};
    if (tid >= 0) m["tid"] = tid;
    return m;
}

json event_json(const TraceEvent& ev) {
    json j;
    j["name"] = ev.name;
    j["cat"] = ev.cat;
    j["pid"] = ev.rank;
    j["tid"] = ev.tid;
    j["ts"] = round_us(ev.ts_us);
    switch (ev.kind) {
        case TraceEvent::Kind::collective: {
            j["ph"] = "X";
            j["dur"] = round_us(ev.dur_us);
            json a;
            a["axis"] = ev.axis;
            a["group"] = ev.group;
            a["bytes"] = ev.bytes;
            a["count"] = ev.count;
            a["dtype"] = ev.dtype;
            a["payload"] = payload_name(ev.label.payload);
            a["layer"] = ev.label.layer;
            a["phase"] = phase_name(ev.label.phase);
            a["microbatch"] = ev.label.microbatch;
            a["step"] = ev.label.step;
            if (ev.peer >= 0) a["peer"] = ev.peer;
            // Only where the backend measured it (nccl), so other traces stay as they were.
            if (ev.gpu_us >= 0) a["gpu_us"] = round_us(ev.gpu_us);
            // Only where Comm recorded them (asynchronous calls; trace_overlap.h says how they are read).
            if (ev.issued_us >= 0) a["issued_us"] = round_us(ev.issued_us);
            if (ev.exposed_us >= 0) a["exposed_us"] = round_us(ev.exposed_us);
            j["args"] = std::move(a);
            break;
        }
        case TraceEvent::Kind::span:
            j["ph"] = "X";
            j["dur"] = round_us(ev.dur_us);
            j["args"] = ev.args.is_null() ? json::object() : ev.args;
            break;
        case TraceEvent::Kind::memory: {
            j["ph"] = "C";
            json a;
            for (int c = 0; c < kMemCategories; ++c) a[mem_name(Mem(c))] = ev.mem[c];
            j["args"] = std::move(a);
            break;
        }
    }
    return j;
}

}  // namespace

void write_chrome_trace(const std::string& path, const std::vector<const Tracer*>& tracers,
                        const json& other_data) {
    for (const Tracer* t : tracers) SS_CHECK(t != nullptr, "write_chrome_trace: a null Tracer in the list");
    // Temp file + rename (core/atomic_file.h): a reader never sees half a trace.
    write_file_atomically(path, [&](std::ostream& os) {
        // One event per line: diff-able, and a reader can see where a file was cut.
        os << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
        bool first = true;
        auto put = [&](const json& j) {
            os << (first ? "" : ",\n") << j.dump();
            first = false;
        };
        for (const Tracer* t : tracers) {
            const int r = t->rank();
            // Lane names for Perfetto / chrome://tracing: "rank 3" > "compute", "comm".
            put(metadata("process_name", r, -1, {{"name", "rank " + std::to_string(r)}}));
            put(metadata("process_sort_index", r, -1, {{"sort_index", r}}));
            put(metadata("thread_name", r, kComputeLane, {{"name", "compute"}}));
            put(metadata("thread_name", r, kCommLane, {{"name", "comm"}}));
            put(metadata("thread_sort_index", r, kComputeLane, {{"sort_index", kComputeLane}}));
            put(metadata("thread_sort_index", r, kCommLane, {{"sort_index", kCommLane}}));
            std::vector<TraceEvent> evs = t->events();
            std::stable_sort(evs.begin(), evs.end(),
                             [](const TraceEvent& a, const TraceEvent& b) { return a.ts_us < b.ts_us; });
            for (const auto& ev : evs) put(event_json(ev));
        }
        os << "\n],\n\"otherData\":" << (other_data.is_null() ? json::object() : other_data).dump();
        // The format's name and version are the file's, not the run's: top-level keys, beside
        // displayTimeUnit, rather than in otherData, which the caller fills and readers treat as
        // free-form. Chrome's format takes other top-level keys as the trace's metadata. Last,
        // because older Perfetto JSON importers stop at the first top-level key they do not
        // know: after traceEvents that loses nothing, before it they would lose every event.
        os << ",\n\"format\":" << json(kTraceFormat).dump() << ",\"format_version\":" << kTraceFormatVersion
           << "}\n";
    });
}

void write_chrome_trace(const std::string& path, const std::vector<std::unique_ptr<Tracer>>& tracers,
                        const json& other_data) {
    std::vector<const Tracer*> ptrs;
    for (const auto& t : tracers) ptrs.push_back(t.get());
    write_chrome_trace(path, ptrs, other_data);
}

// ---- reading ---------------------------------------------------------------------

namespace {

// The ranges of the int fields (docs/trace-format.md): ranks, and labels where -1 is "none".
constexpr const char* kRankRange = "an integer rank from 0 to 2^31 - 1";
constexpr const char* kLabelRange = "-1 (none) or an integer from 0 to 2^31 - 1";
constexpr const char* kIntRange = "an integer from -2^31 to 2^31 - 1";

}  // namespace

bool fits_int(const json& v, int64_t lo) {
    if (v.is_number_unsigned()) return v.get<uint64_t>() <= uint64_t(INT32_MAX) && int64_t(v.get<uint64_t>()) >= lo;
    return v.is_number_integer() && v.get<int64_t>() >= lo && v.get<int64_t>() <= INT32_MAX;
}

namespace {

// Reads the fields of one event, and says exactly where a field is wrong:
// "out/t.json: traceEvents[12].args.bytes: expected an unsigned integer, got "abc"".
struct FieldReader {
    const json& obj;
    std::string where;  // "out/t.json: traceEvents[12]" or "...[12].args"

    static std::string shown(const json& v) {
        std::string s = v.dump();
        return s.size() > 40 ? s.substr(0, 37) + "..." : s;
    }
    const json& at(const char* key) const {
        auto it = obj.find(key);
        SS_CHECK(it != obj.end(), where << ": missing field \"" << key << "\"");
        return *it;
    }
    [[noreturn]] void wrong(const char* key, const char* expected, const json& v) const {
        SS_FAIL(where << "." << key << ": expected " << expected << ", got " << shown(v));
    }
    bool has(const char* key) const { return obj.contains(key); }
    std::string str(const char* key) const {
        const json& v = at(key);
        if (!v.is_string()) wrong(key, "a string", v);
        return v.get<std::string>();
    }
    // An int field, checked as the 64-bit value it was written as before it becomes an int
    // (4294967299 must be refused, not wrap to 3): in [lo, 2^31 - 1], else @p expected is said.
    int bounded_int(const char* key, int64_t lo, const char* expected) const {
        const json& v = at(key);
        if (!fits_int(v, lo)) wrong(key, expected, v);
        return int(v.get<int64_t>());
    }
    uint64_t unsigned_integer(const char* key) const {
        const json& v = at(key);
        if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
            wrong(key, "an unsigned integer", v);
        return v.get<uint64_t>();
    }
    double number(const char* key) const {
        const json& v = at(key);
        if (!v.is_number()) wrong(key, "a number", v);
        return v.get<double>();
    }
    // A duration: a number >= 0 (JSON has no NaN or infinity, and 1e999 fails to parse).
    double non_negative(const char* key) const {
        const json& v = at(key);
        if (!v.is_number() || v.get<double>() < 0) wrong(key, "a number >= 0 (microseconds)", v);
        return v.get<double>();
    }
    const json& object(const char* key) const {
        const json& v = at(key);
        if (!v.is_object()) wrong(key, "an object", v);
        return v;
    }
    std::vector<int> rank_array(const char* key) const {
        const json& v = at(key);
        if (!v.is_array()) wrong(key, "an array of ranks", v);
        std::vector<int> out;
        for (size_t i = 0; i < v.size(); ++i) {
            if (!fits_int(v[i], 0))
                SS_FAIL(where << "." << key << "[" << i << "]: expected " << kRankRange << ", got " << shown(v[i]));
            out.push_back(int(v[i].get<int64_t>()));
        }
        return out;
    }
    template <class F>
    auto parsed(const char* key, F parse) const {
        std::string s = str(key);
        try {
            return parse(s);
        } catch (const Error& e) {
            SS_FAIL(where << "." << key << ": " << e.what());
        }
    }
};

// The file's "format_version" (kTraceFormatVersion, trace.h), read before any event: a newer
// format may mean something else by the same fields, so a newer file is refused, never guessed
// at. Only a shardscope trace's ("format": kTraceFormat) counts; 0 where there is none: traces
// written before the keys, and other tools' Chrome traces, whose own format_version means
// something else.
int read_format_version(const json& doc, const std::string& source) {
    auto format = doc.find("format");
    if (format == doc.end() || *format != kTraceFormat) return 0;
    auto it = doc.find("format_version");
    if (it == doc.end()) return 0;
    const json& v = *it;
    // Judged on the 64 bits written (is_number_integer() holds for unsigned ones too): 1.0, "1", 0, -1 are no version.
    const bool positive =
        v.is_number_integer() && (v.is_number_unsigned() ? v.get<uint64_t>() > 0 : v.get<int64_t>() > 0);
    if (!positive)
        SS_FAIL(source << ": format_version: expected a positive integer, got " << FieldReader::shown(v));
    SS_CHECK(v.get<uint64_t>() <= uint64_t(kTraceFormatVersion),
             source << ": format_version " << v.get<uint64_t>() << ", but this shardscope reads format_version "
                    << kTraceFormatVersion << " and older: written by a newer shardscope; read it with that version, "
                    << "or write it again with this one (`shardscope train --trace FILE`)");
    return int(v.get<uint64_t>());
}

void read_collective_args(const FieldReader& a, TraceEvent& ev) {
    ev.kind = TraceEvent::Kind::collective;
    ev.axis = a.str("axis");
    ev.group = a.rank_array("group");
    ev.bytes = a.unsigned_integer("bytes");
    ev.label.payload = a.parsed("payload", parse_payload);
    ev.label.layer = a.bounded_int("layer", -1, kLabelRange);
    ev.label.phase = a.parsed("phase", parse_phase);
    ev.label.microbatch = a.bounded_int("microbatch", -1, kLabelRange);
    ev.label.step = a.bounded_int("step", -1, kLabelRange);
    if (a.has("count")) ev.count = a.unsigned_integer("count");
    if (a.has("dtype")) ev.dtype = a.str("dtype");
    if (a.has("peer")) ev.peer = a.bounded_int("peer", 0, kRankRange);
    if (a.has("gpu_us")) ev.gpu_us = a.non_negative("gpu_us");
    // Absent in older traces and for blocking calls: -1, which readers take as ts_us and dur_us.
    // A value past ts_us or dur_us is kept as written; the readers clamp it (trace_overlap.h).
    if (a.has("issued_us")) ev.issued_us = a.non_negative("issued_us");
    if (a.has("exposed_us")) ev.exposed_us = a.non_negative("exposed_us");
}

}  // namespace

Trace parse_chrome_trace(const std::string& text, const std::string& source) {
    // Before the parse: the tree it builds is copied below, by recursion (trace_check.h).
    const std::string too_deep = json_nesting_problem(text, source);
    SS_CHECK(too_deep.empty(), too_deep);
    json j;
    try {
        j = json::parse(text);
    } catch (const json::exception& e) {  // parse_error, and out_of_range for a number too large (1e999)
        // printable: the message quotes the bytes it stopped at ("last read: '\x9d'"), whatever they are.
        SS_FAIL(source << ": not a JSON file (" << printable(e.what()) << ")");
    }
    SS_CHECK(j.is_object(), source << ": expected a JSON object {\"traceEvents\": [...]}, got a JSON "
                                   << j.type_name());
    Trace trace;
    trace.format_version = read_format_version(j, source);
    auto it = j.find("traceEvents");
    SS_CHECK(it != j.end(), source << ": no \"traceEvents\" field; this is not a Chrome trace"
                                      " (write one with `shardscope train --trace FILE`)");
    SS_CHECK(it->is_array(), source << ": \"traceEvents\" must be an array, got a JSON " << it->type_name());

    const json& events = *it;
    for (size_t i = 0; i < events.size(); ++i) {
        const std::string where = source + ": traceEvents[" + std::to_string(i) + "]";
        SS_CHECK(events[i].is_object(), where << ": expected an event object, got a JSON " << events[i].type_name());
        FieldReader e{events[i], where};
        const std::string ph = e.str("ph");
        if (ph != "X" && ph != "C") continue;  // metadata ("M") and other kinds carry nothing we use

        TraceEvent ev;
        ev.file_index = int64_t(i);
        ev.name = e.str("name");
        ev.cat = e.has("cat") ? e.str("cat") : "";
        ev.rank = e.bounded_int("pid", 0, kRankRange);
        ev.tid = e.has("tid") ? e.bounded_int("tid", INT32_MIN, kIntRange) : 0;
        ev.ts_us = e.number("ts");
        if (ph == "X") {
            ev.dur_us = e.number("dur");
            if (ev.cat == "comm" && ev.tid == kCommLane) {
                read_collective_args(FieldReader{e.object("args"), where + ".args"}, ev);
            } else {
                ev.kind = TraceEvent::Kind::span;
                if (e.has("args")) ev.args = e.object("args");
            }
        } else {  // "C": a counter
            if (ev.name != "memory") continue;
            ev.kind = TraceEvent::Kind::memory;
            FieldReader a{e.object("args"), where + ".args"};
            for (int c = 0; c < kMemCategories; ++c)
                if (a.has(mem_name(Mem(c)))) ev.mem[c] = a.unsigned_integer(mem_name(Mem(c)));
        }
        trace.events.push_back(std::move(ev));
    }
    if (j.contains("otherData")) trace.other_data = j["otherData"];
    return trace;
}

Trace read_chrome_trace(const std::string& path) {
    std::ifstream is(path, std::ios::binary);
    SS_CHECK(is, "cannot open the trace " << path << ": " << std::strerror(errno));
    std::string text;  // read straight into one string (a stringstream's str() was a second copy)
    is.seekg(0, std::ios::end);
    const std::streamoff size = is.tellg();
    is.seekg(0, std::ios::beg);
    if (size > 0) {
        text.resize(size_t(size));
        is.read(text.data(), std::streamsize(text.size()));
        text.resize(size_t(is.gcount()));
    }
    return read_chrome_trace_text(text, path);
}

Trace read_chrome_trace_text(const std::string& text, const std::string& source) {
    // The nesting check comes before either reader: both copy nested values by recursion.
    const std::string too_deep = json_nesting_problem(text, source);
    SS_CHECK(too_deep.empty(), too_deep);
    // The streaming reader first (trace_fast.h: no JSON tree); anything it is not sure
    // about goes to the full reader, which names the problem.
    Trace trace;
    try {
        if (fast_parse_chrome_trace(text, trace)) return trace;
    } catch (const nlohmann::json::exception&) {  // not expected; the full reader then says what is wrong
    }
    return parse_chrome_trace(text, source);
}

}  // namespace ss
