// trace_fast.cpp — a streaming (SAX) reader for Chrome traces; see trace_fast.h.
//
// The document it expects, and where the handler is while reading it:
//
//     {                                    depth 1: top-level keys
//       "traceEvents": [                   depth 2: the events array
//         {"name": ..., "ph": ..., ...,    depth 3: one event's fields
//          "args": {"group": [0, 1], ...}  depth 4: args (depth 5: an array in args)
//         }, ...],
//       "otherData": {...},                forwarded whole to a JSON DOM builder
//       "format": "shardscope-trace",       whether format_version is ours to read
//       "format_version": 1                 kept; a bad or newer one is the full reader's to refuse
//     }
//
// Fields are converted exactly as src/comm/trace/trace_io.cpp's FieldReader does;
// where it would throw, this reader returns false instead.
#include "comm/trace/trace_fast.h"

#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/check.h"

namespace ss {

namespace {

using nlohmann::json;

// An event's top-level fields that the reader uses.
enum Field { kName, kCat, kPh, kPid, kTid, kTs, kDur, kArgs, kFields, kOther = -1 };

int field_of(const std::string& key) {
    static const char* kKeys[] = {"name", "cat", "ph", "pid", "tid", "ts", "dur", "args"};
    for (int i = 0; i < kFields; ++i)
        if (key == kKeys[i]) return i;
    return kOther;
}

class Handler {
public:
    explicit Handler(Trace& out) : out_(out), dom_(out.other_data, false) {}

    using number_integer_t = json::number_integer_t;
    using number_unsigned_t = json::number_unsigned_t;
    using number_float_t = json::number_float_t;
    using string_t = json::string_t;
    using binary_t = json::binary_t;

    bool null() { return value(json(nullptr)); }
    bool boolean(bool v) { return value(json(v)); }
    bool number_integer(number_integer_t v) { return value(json(v)); }
    bool number_unsigned(number_unsigned_t v) { return value(json(v)); }
    bool number_float(number_float_t v, const string_t&) { return value(json(v)); }
    bool string(string_t& v) { return value(json(std::move(v))); }
    bool binary(binary_t&) { return false; }

    bool key(string_t& k) {
        if (forward_) return dom_.key(k);
        if (skip_) return true;
        key_ = std::move(k);
        return true;
    }

    bool start_object(std::size_t n) {
        if (forward_) return forward_open(dom_.start_object(n));
        if (skip_) return ++skip_depth_, true;
        switch (depth_) {
            case 0: ++depth_; return true;  // the document
            case 1:                          // a top-level value
                if (key_ == "otherData") return begin_forward() && forward_open(dom_.start_object(n));
                if (key_ == "traceEvents" || key_ == "format_version") return false;  // must be an array, a number
                return begin_skip();
            case 2:  // an event
                ++depth_;
                event_index_ = events_seen_++;
                fields_.fill(json());
                has_.fill(false);
                args_.clear();
                args_complex_ = false;
                return true;
            case 3:
                if (key_ == "args") {
                    ++depth_;
                    has_[kArgs] = true;
                    return true;
                }
                return begin_skip();  // a field the reader does not use
            default:  // an object inside args: fine for metadata events, too deep for this reader otherwise
                args_complex_ = true;
                return begin_skip();
        }
    }

    bool end_object() {
        if (forward_) return forward_close(dom_.end_object());
        if (skip_) return end_skip();
        if (depth_ == 4) return --depth_, true;
        if (depth_ == 3) {
            --depth_;
            return finish_event();
        }
        if (depth_ == 1) return --depth_, done_ = true;
        return false;
    }

    bool start_array(std::size_t n) {
        if (forward_) return forward_open(dom_.start_array(n));
        if (skip_) return ++skip_depth_, true;
        if (depth_ == 1) {
            if (key_ == "otherData") return begin_forward() && forward_open(dom_.start_array(n));
            if (key_ == "format_version") return false;
            if (key_ != "traceEvents") return begin_skip();
            if (seen_events_) return false;
            seen_events_ = true;
            return ++depth_, true;
        }
        if (depth_ == 3) return key_ == "args" ? false : begin_skip();  // args must be an object
        if (depth_ == 4) {                     // an array in args, e.g. "group": [0, 1]
            args_.emplace_back(std::move(key_), json::array());
            return ++depth_, true;
        }
        if (depth_ == 5) {  // an array in an array in args
            args_complex_ = true;
            return begin_skip();
        }
        return false;
    }

    bool end_array() {
        if (forward_) return forward_close(dom_.end_array());
        if (skip_) return end_skip();
        if (depth_ == 5) return --depth_, true;
        if (depth_ == 2) return --depth_, true;
        return false;
    }

    template <class E>
    bool parse_error(std::size_t, const std::string&, const E&) {
        return false;
    }

    bool complete() const { return done_ && seen_events_; }

    // "format_version" as trace_io.cpp's read_format_version takes it, once the whole document
    // is read (the two keys may come in either order): only a shardscope trace's counts; in one,
    // 1 to kTraceFormatVersion (trace.h). Anything else, a newer version above all, steps aside
    // for the full reader's message.
    bool finish_format_version() {
        if (!ours_ || !has_version_) return true;  // another tool's, or none: 0
        if (!fits_int(version_, 1) || version_.get<int64_t>() > kTraceFormatVersion) return false;
        out_.format_version = int(version_.get<int64_t>());
        return true;
    }

private:
    bool value(json v) {
        if (forward_) {
            // dom_ takes the value; a scalar otherData is complete at once
            bool ok = true;
            switch (v.type()) {
                case json::value_t::null: ok = dom_.null(); break;
                case json::value_t::boolean: ok = dom_.boolean(v.get<bool>()); break;
                case json::value_t::number_integer: ok = dom_.number_integer(v.get<number_integer_t>()); break;
                case json::value_t::number_unsigned: ok = dom_.number_unsigned(v.get<number_unsigned_t>()); break;
                case json::value_t::number_float: ok = dom_.number_float(v.get<number_float_t>(), ""); break;
                case json::value_t::string: {
                    string_t s = v.get<string_t>();
                    ok = dom_.string(s);
                    break;
                }
                default: return false;
            }
            if (forward_depth_ == 0) forward_ = false;
            return ok;
        }
        if (skip_) return true;
        switch (depth_) {
            case 1:  // a scalar top-level value
                if (key_ == "traceEvents") return false;
                if (key_ == "format_version") return version_ = std::move(v), has_version_ = true;
                if (key_ == "format") ours_ = v.is_string() && v.get_ref<const std::string&>() == kTraceFormat;
                if (key_ == "otherData") out_.other_data = std::move(v);
                return true;
            case 2: return false;  // an event that is not an object
            case 3: {
                const int f = field_of(key_);
                if (f == kArgs) return false;  // args that are not an object
                if (f != kOther) {
                    fields_[size_t(f)] = std::move(v);
                    has_[size_t(f)] = true;
                }
                return true;
            }
            case 4: args_.emplace_back(std::move(key_), std::move(v)); return true;
            case 5: args_.back().second.push_back(std::move(v)); return true;
            default: return false;
        }
    }

    bool begin_skip() {
        skip_ = true;
        skip_depth_ = 1;
        return true;
    }
    bool end_skip() {
        if (--skip_depth_ == 0) skip_ = false;
        return true;
    }
    bool begin_forward() {
        forward_ = true;
        forward_depth_ = 0;
        return true;
    }
    bool forward_open(bool ok) {
        ++forward_depth_;
        return ok;
    }
    bool forward_close(bool ok) {
        if (--forward_depth_ == 0) forward_ = false;
        return ok;
    }

    // args lookups: the last occurrence wins, as in a JSON object
    const json* arg(const char* k) const {
        for (auto it = args_.rbegin(); it != args_.rend(); ++it)
            if (it->first == k) return &it->second;
        return nullptr;
    }
    static bool is_unsigned(const json& v) {
        return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
    }
    // An int argument in [lo, 2^31 - 1], judged on its 64 bits (fits_int, trace.h), as FieldReader::bounded_int.
    bool arg_int(const char* k, int64_t lo, int& out) const {
        const json* v = arg(k);
        if (!v || !fits_int(*v, lo)) return false;
        out = int(v->get<int64_t>());
        return true;
    }
    bool arg_uint(const char* k, uint64_t& out) const {
        const json* v = arg(k);
        if (!v || !is_unsigned(*v)) return false;
        out = v->get<uint64_t>();
        return true;
    }
    bool arg_str(const char* k, std::string& out) const {
        const json* v = arg(k);
        if (!v || !v->is_string()) return false;
        out = v->get<std::string>();
        return true;
    }

    bool finish_event() {
        if (!has_[kPh] || !fields_[kPh].is_string()) return false;
        const std::string& ph = fields_[kPh].get_ref<const std::string&>();
        if (ph != "X" && ph != "C") return true;  // metadata and other kinds: skipped, as the full reader does
        TraceEvent ev;
        ev.file_index = event_index_;
        if (!has_[kName] || !fields_[kName].is_string()) return false;
        ev.name = fields_[kName].get<std::string>();
        if (has_[kCat]) {
            if (!fields_[kCat].is_string()) return false;
            ev.cat = fields_[kCat].get<std::string>();
        }
        if (!has_[kPid] || !fits_int(fields_[kPid], 0)) return false;
        ev.rank = int(fields_[kPid].get<int64_t>());
        if (has_[kTid]) {
            if (!fits_int(fields_[kTid], INT32_MIN)) return false;
            ev.tid = int(fields_[kTid].get<int64_t>());
        } else {
            ev.tid = 0;
        }
        if (!has_[kTs] || !fields_[kTs].is_number()) return false;
        ev.ts_us = fields_[kTs].get<double>();
        if (ph == "X") {
            if (!has_[kDur] || !fields_[kDur].is_number()) return false;
            ev.dur_us = fields_[kDur].get<double>();
            if (args_complex_) return false;  // nested args: the full reader keeps them exactly
            if (ev.cat == "comm" && ev.tid == kCommLane) {
                if (!has_[kArgs] || !collective_args(ev)) return false;
            } else {
                ev.kind = TraceEvent::Kind::span;
                if (has_[kArgs]) {
                    ev.args = json::object();
                    for (auto& [k, v] : args_) ev.args[k] = v;
                }
            }
        } else {
            if (ev.name != "memory") return true;  // another counter: skipped, as the full reader does
            if (!has_[kArgs] || args_complex_) return false;
            ev.kind = TraceEvent::Kind::memory;
            for (int c = 0; c < kMemCategories; ++c) {
                const json* v = arg(mem_name(Mem(c)));
                if (!v) continue;
                if (!is_unsigned(*v)) return false;
                ev.mem[size_t(c)] = v->get<uint64_t>();
            }
        }
        out_.events.push_back(std::move(ev));
        return true;
    }

    bool collective_args(TraceEvent& ev) const {
        ev.kind = TraceEvent::Kind::collective;
        std::string payload, phase;
        if (!arg_str("axis", ev.axis) || !arg_uint("bytes", ev.bytes) || !arg_str("payload", payload) ||
            !arg_int("layer", -1, ev.label.layer) || !arg_str("phase", phase) ||
            !arg_int("microbatch", -1, ev.label.microbatch) || !arg_int("step", -1, ev.label.step))
            return false;
        const json* group = arg("group");
        if (!group || !group->is_array()) return false;
        for (const json& g : *group) {
            if (!fits_int(g, 0)) return false;
            ev.group.push_back(int(g.get<int64_t>()));
        }
        try {
            ev.label.payload = parse_payload(payload);
            ev.label.phase = parse_phase(phase);
        } catch (const Error&) {
            return false;
        }
        if (arg("count") && !arg_uint("count", ev.count)) return false;
        if (arg("dtype") && !arg_str("dtype", ev.dtype)) return false;
        if (arg("peer") && !arg_int("peer", 0, ev.peer)) return false;
        // Optional times: a number >= 0 where present, as FieldReader::non_negative asks.
        return arg_time("gpu_us", ev.gpu_us) && arg_time("issued_us", ev.issued_us) &&
               arg_time("exposed_us", ev.exposed_us);
    }

    // An optional time in µs: absent leaves @p out (-1); present must be a number >= 0.
    bool arg_time(const char* k, double& out) const {
        const json* v = arg(k);
        if (!v) return true;
        if (!v->is_number() || v->get<double>() < 0) return false;
        out = v->get<double>();
        return true;
    }

    Trace& out_;
    nlohmann::detail::json_sax_dom_parser<json> dom_;
    int depth_ = 0;
    std::string key_;
    bool skip_ = false, forward_ = false, seen_events_ = false, done_ = false, args_complex_ = false;
    bool ours_ = false, has_version_ = false;  // "format" is kTraceFormat; "format_version" is there
    json version_;                             // "format_version" as written
    int skip_depth_ = 0, forward_depth_ = 0;
    int64_t events_seen_ = 0, event_index_ = 0;  // traceEvents[event_index_] is the event being read
    std::array<json, kFields> fields_;
    std::array<bool, kFields> has_{};
    std::vector<std::pair<std::string, json>> args_;
};

}  // namespace

bool fast_parse_chrome_trace(const std::string& text, Trace& out) {
    out = Trace{};
    Handler h(out);
    try {
        if (!json::sax_parse(text, &h) || !h.complete() || !h.finish_format_version()) return false;
    } catch (const std::exception&) {
        return false;
    }
    if (out.other_data.is_discarded()) out.other_data = json::object();
    return true;
}

}  // namespace ss
