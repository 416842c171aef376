// test_viz.cpp — the visualizer's view-model, without a window: a trace becomes
// lanes, colours, instances, memory series, grid cells and GBS arithmetic with
// known numbers, and every bad file becomes a message (never a throw or a hang).
// Links ss_viz_model only (tests/CMakeLists.txt).
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "comm/comm.h"
#include "comm/threads/threads_backend.h"
#include "comm/trace/trace.h"
#include "core/check.h"
#include "core/ledger.h"
#include "comm/trace/trace_fast.h"
#include "viz/model/gbs.h"
#include "viz/model/grid.h"
#include "viz/model/load.h"
#include "viz/model/memory.h"
#include "viz/model/palette.h"
#include "viz/model/timeline.h"
#include "viz/model/view_model.h"
#include "trace_equal.h"

using namespace ss;
using namespace ss::viz;
using nlohmann::json;

namespace {

std::string temp_path(const std::string& name) {
    auto dir = std::filesystem::path(SS_BINARY_DIR) / "test_viz_out";
    std::filesystem::create_directories(dir);
    return (dir / name).string();
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// A collective event as the Tracer writes it.
json coll(int rank, const char* op, double ts, double dur, const char* axis, std::vector<int> group,
          uint64_t bytes, const char* payload, int layer, const char* phase, int step) {
    return {{"name", op}, {"cat", "comm"}, {"ph", "X"}, {"pid", rank}, {"tid", 1}, {"ts", ts}, {"dur", dur},
            {"args", {{"axis", axis}, {"group", group}, {"bytes", bytes}, {"payload", payload}, {"layer", layer},
                      {"phase", phase}, {"microbatch", 0}, {"step", step}}}};
}
json span(int rank, const char* name, const char* cat, double ts, double dur, int step) {
    return {{"name", name}, {"cat", cat}, {"ph", "X"}, {"pid", rank}, {"tid", 0}, {"ts", ts}, {"dur", dur},
            {"args", {{"step", step}}}};
}
json mem(int rank, double ts, uint64_t params, uint64_t comm_bytes) {
    return {{"name", "memory"}, {"cat", "memory"}, {"ph", "C"}, {"pid", rank}, {"tid", 0}, {"ts", ts},
            {"args", {{"params", params}, {"grads", 0}, {"optim", 0}, {"acts", 0}, {"comm", comm_bytes},
                      {"workspace", 0}}}};
}

// Two ranks, two steps: a forward span with a param all_gather inside it, then
// a grad reduce_scatter; memory rises while the gather's buffer lives.
std::string two_rank_trace() {
    json ev = json::array();
    for (int r = 0; r < 2; ++r) {
        for (int step = 1; step <= 2; ++step) {
            const double base = (step - 1) * 1000.0;
            ev.push_back(span(r, "forward", "fwd", base + 0, 400, step));
            ev.push_back(span(r, "h.0 forward", "fwd", base + 10, 100, step));  // nested
            ev.push_back(coll(r, "all_gather", base + 20 + r * 5, 50 - r * 5, "dp_shard", {0, 1}, 4096, "param", 0,
                              "fwd", step));
            ev.push_back(coll(r, "reduce_scatter", base + 500, 80, "dp_shard", {0, 1}, 4096, "grad", 0, "bwd", step));
            ev.push_back(mem(r, base + 0, 2048, 0));
            ev.push_back(mem(r, base + 20, 2048, 4096));
            ev.push_back(mem(r, base + 70, 2048, 0));
        }
    }
    json other = {{"mesh", {{"world", 2}, {"pp", 1}, {"dp_rep", 1}, {"dp_shard", 2}, {"sp", 1}, {"tp", 1}}},
                  {"config", {{"model", "tiny"}, {"L", 2}, {"C", 64}, {"H", 4}, {"V", 256}, {"T", 64},
                              {"dtype", "fp32"}}},
                  {"ranks", {{"zero", 3}, {"world", 2}}},
                  {"gbs", {{"mbs", 4}, {"ga", 1}, {"dp", 2}, {"gbs", 8}, {"line", "GBS = MBS x GA x DP = 4 x 1 x 2 = 8"}}}};
    return json{{"displayTimeUnit", "ms"}, {"traceEvents", ev}, {"otherData", other}}.dump();
}

std::unique_ptr<ViewModel> two_rank_model() {
    LoadResult r = load_trace_text(two_rank_trace(), "two.json");
    REQUIRE(r.ok);
    return build_view_model(std::move(r.trace), "two.json");
}

}  // namespace

// ---- loading: every bad file is a message ----------------------------------------------

TEST_CASE("bad trace files become messages that name the file and say what is wrong", "[viz][load]") {
    SECTION("missing") {
        LoadResult r = load_trace(temp_path("no-such-file.json"));
        REQUIRE(!r.ok);
        REQUIRE_THAT(r.error, Catch::Contains("cannot open the trace") && Catch::Contains("no-such-file.json") &&
                                  Catch::Contains("shardscope train"));
    }
    SECTION("not JSON") {
        const std::string p = temp_path("notjson.json");
        write_text(p, "hello, I am not a trace");
        LoadResult r = load_trace(p);
        REQUIRE(!r.ok);
        REQUIRE_THAT(r.error, Catch::Contains("notjson.json") && Catch::Contains("not a JSON file"));
    }
    SECTION("truncated: a trace cut in the middle") {
        const std::string full = two_rank_trace();
        const std::string p = temp_path("truncated.json");
        write_text(p, full.substr(0, full.size() / 2));
        LoadResult r = load_trace(p);
        REQUIRE(!r.ok);
        REQUIRE_THAT(r.error, Catch::Contains("truncated.json") && Catch::Contains("not a JSON file"));
    }
    SECTION("JSON but not a trace") {
        LoadResult r = load_trace_text(R"({"hello": [1, 2]})", "other.json");
        REQUIRE(!r.ok);
        REQUIRE_THAT(r.error, Catch::Contains("other.json") && Catch::Contains("no \"traceEvents\""));
    }
    SECTION("a trace with a wrong field") {
        json t = json::parse(two_rank_trace());
        t["traceEvents"][2]["args"]["bytes"] = "4 kB";
        LoadResult r = load_trace_text(t.dump(), "wrong.json");
        REQUIRE(!r.ok);
        REQUIRE_THAT(r.error, Catch::Contains("wrong.json: traceEvents[2].args.bytes: expected an unsigned integer"));
    }
    SECTION("a rank the viewer cannot have (negative or absurd pid)") {
        json t = json::parse(two_rank_trace());
        t["traceEvents"][0]["pid"] = -3;
        LoadResult r = load_trace_text(t.dump(), "pid.json");
        REQUIRE(!r.ok);
        REQUIRE_THAT(r.error, Catch::Contains("pid.json: traceEvents[0].pid: expected an integer rank from 0 to 2^31 - 1, got -3"));
        t["traceEvents"][0]["pid"] = 2000000000;
        r = load_trace_text(t.dump(), "pid.json");
        REQUIRE(!r.ok);
        REQUIRE_THAT(r.error, Catch::Contains("pid 2000000000 is not a rank"));
    }
    SECTION("a group member or a byte count no run has (the checks trace summary shares, comm/trace/trace_check.h)") {
        json t = json::parse(two_rank_trace());
        t["traceEvents"][2]["args"]["group"] = {0, 2000000001};
        LoadResult r = load_trace_text(t.dump(), "group.json");
        REQUIRE(!r.ok);
        REQUIRE(r.fast);  // the streaming reader names the event as the file has it, as trace summary does
        REQUIRE(r.error == "group.json: traceEvents[2] (\"all_gather\"): group member 2000000001 is not a rank in [0, 4096)");
        REQUIRE(r.error == trace_problem(parse_chrome_trace(t.dump()), "group.json", 4096));
        t = json::parse(two_rank_trace());
        t["traceEvents"][2]["args"]["bytes"] = uint64_t(1) << 60;
        r = load_trace_text(t.dump(), "bytes.json");
        REQUIRE(!r.ok);
        REQUIRE_THAT(r.error, Catch::Contains("is more than one call moves (at most 2^53)"));
    }
    SECTION("a field past 2^31: refused by both readers, not wrapped to a small int (audit 2, item 2)") {
        for (const auto& [field, value] : {std::make_pair("pid", int64_t(4294967299)), std::make_pair("step", int64_t(1) << 40),
                                           std::make_pair("layer", -(int64_t(1) << 40)), std::make_pair("microbatch", int64_t(-2))}) {
            json t = json::parse(two_rank_trace());
            json& ev = t["traceEvents"][2];
            (std::string(field) == "pid" ? ev[field] : ev["args"][field]) = value;
            Trace fast;
            REQUIRE(!fast_parse_chrome_trace(t.dump(), fast));
            LoadResult r = load_trace_text(t.dump(), "wrap.json");
            REQUIRE(!r.ok);
            REQUIRE_THAT(r.error, Catch::StartsWith(std::string("wrap.json: traceEvents[2].") +
                                                    (std::string(field) == "pid" ? "" : "args.") + field + ": expected"));
        }
        json t = json::parse(two_rank_trace());
        t["traceEvents"][2]["args"]["group"] = {0, int64_t(1) << 33};
        LoadResult r = load_trace_text(t.dump(), "wrap.json");
        REQUIRE(r.error == "wrap.json: traceEvents[2].args.group[1]: expected an integer rank from 0 to 2^31 - 1, got 8589934592");
    }
    SECTION("negative duration") {
        json t = json::parse(two_rank_trace());
        t["traceEvents"][0]["dur"] = -1.0;
        LoadResult r = load_trace_text(t.dump(), "dur.json");
        REQUIRE(!r.ok);
        REQUIRE_THAT(r.error, Catch::Contains("negative"));
    }
    SECTION("nested 100,000 deep: refused before either reader copies it (comm/trace/trace_check.h)") {
        const std::string deep = two_rank_trace().substr(0, two_rank_trace().size() - 1) + ",\"deep\":" +
                                 std::string(100000, '[') + std::string(100000, ']') + "}";
        LoadResult r = load_trace_text(deep, "deep.json");
        REQUIRE(!r.ok);
        REQUIRE_THAT(r.error, Catch::StartsWith("deep.json: arrays and objects nest more than 64 deep (line 1"));
    }
    SECTION("no events at all") {
        LoadResult r = load_trace_text(R"({"traceEvents": []})", "empty.json");
        REQUIRE(!r.ok);
        REQUIRE_THAT(r.error, Catch::Contains("no events"));
    }
    SECTION("a directory") {
        LoadResult r = load_trace(std::filesystem::path(temp_path("x")).parent_path().string());
        REQUIRE(!r.ok);
        REQUIRE_THAT(r.error, Catch::Contains("not a regular file"));
    }
}

TEST_CASE("a million events are refused quickly, before parsing, with the way out", "[viz][load]") {
    std::string text = "{\"traceEvents\":[";
    const std::string one = R"({"name":"x","ph":"X","pid":0,"tid":0,"ts":1,"dur":1},)";
    text.reserve(one.size() * 1000000 + 32);
    for (int i = 0; i < 1000000; ++i) text += one;
    text.back() = ']';
    text += "}";
    const std::string p = temp_path("million.json");
    write_text(p, text);
    const auto t0 = std::chrono::steady_clock::now();
    LoadResult r = load_trace(p);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    REQUIRE(!r.ok);
    REQUIRE_THAT(r.error, Catch::Contains("1000000 events") && Catch::Contains("--max-events"));
    REQUIRE(s < 2.0);  // a 50 MB read and one memchr scan; parsing it would take ~10x longer
    // With the limit raised, the same file loads (the limit is the only reason it was refused).
    LoadLimits big;
    big.max_events = 2000000;
    LoadResult ok = load_trace(p, big);
    REQUIRE(ok.ok);
    REQUIRE(ok.trace.events.size() == 1000000);
    std::filesystem::remove(p);
    // A file over max_bytes is refused unread.
    LoadLimits tiny;
    tiny.max_bytes = 10;
    const std::string small = temp_path("small.json");
    write_text(small, two_rank_trace());
    REQUIRE_THAT(load_trace(small, tiny).error, Catch::Contains("MiB is more than this viewer reads"));
}

namespace {

void require_same(const Trace& a, const Trace& b) {
    REQUIRE(a.events.size() == b.events.size());
    for (size_t i = 0; i < a.events.size(); ++i) {
        const TraceEvent& x = a.events[i];
        const TraceEvent& y = b.events[i];
        INFO("event " << i << " " << x.name);
        test::require_same_event(x, y);
    }
    REQUIRE(a.other_data == b.other_data);
    REQUIRE(a.format_version == b.format_version);
}

// A real 4-rank run: collectives on tp and dp groups, send/recv, spans, memory from a Ledger.
std::string four_rank_trace_file() {
    auto tracers = make_tracers(4, 0);
    CommOptions opts{10, {}};
    for (auto& t : tracers) opts.tracers.push_back(t.get());
    std::vector<Ledger> ledgers(4);
    run_threads(4, [&](Comm& comm) {
        const int r = comm.rank();
        Ledger& ledger = ledgers[size_t(r)];
        comm.tracer()->attach_ledger(ledger);
        ledger.alloc(Mem::params, 1000);
        const Group tp{"tp", {r / 2 * 2, r / 2 * 2 + 1}};
        const Group dp{"dp", {r % 2, r % 2 + 2}};
        std::vector<float> a(64, 1.0f), g(128);
        {
            ScopedSpan span(comm.tracer(), "h.0 forward", "fwd", {{"layer", 0}, {"shape", {4, 64}}, {"step", 1}});
            ledger.alloc(Mem::comm, 512);
            for (int i = 0; i < 3; ++i)
                comm.all_reduce(a.data(), 64, tp, ReduceOp::sum, {Payload::act, i, Phase::fwd, 0, 1});
            ledger.release(Mem::comm, 512);
        }
        comm.all_gather(a.data(), g.data(), 64, dp, {Payload::param, 0, Phase::fwd, 0, 1});
        if (r == 0) comm.send(a.data(), 8, 1, {Payload::act, 0, Phase::fwd, 0, 1}, "pp");
        if (r == 1) comm.recv(a.data(), 8, 0, {Payload::act, 0, Phase::fwd, 0, 1}, "pp");
        comm.tracer()->detach_ledger(ledger);
    }, opts);
    std::vector<const Tracer*> ts;
    for (auto& t : tracers) ts.push_back(t.get());
    const std::string path = temp_path("four.json");
    write_chrome_trace(path, ts, json{{"mesh", {{"world", 4}, {"tp", 2}, {"dp_shard", 2}, {"dp_rep", 1}, {"pp", 1},
                                                {"sp", 1}}},
                                      {"note", "x"}});
    return path;
}

}  // namespace

TEST_CASE("the streaming reader gives the same Trace as the full reader, and steps aside when unsure",
          "[viz][load]") {
    const std::string path = four_rank_trace_file();
    Trace fast;
    std::ifstream is(path);
    const std::string text((std::istreambuf_iterator<char>(is)), std::istreambuf_iterator<char>());
    REQUIRE(fast_parse_chrome_trace(text, fast));
    require_same(fast, parse_chrome_trace(text, path));  // the full reader (a JSON tree first)
    require_same(fast, read_chrome_trace(path));          // trace summary's: the streaming one, as here
    REQUIRE(fast.format_version == kTraceFormatVersion);
    REQUIRE(load_trace(path).fast);  // load_trace takes the fast path for the engine's own files

    REQUIRE(fast_parse_chrome_trace(two_rank_trace(), fast));
    require_same(fast, parse_chrome_trace(two_rank_trace()));

    // Fields in another order, unknown fields of every shape, a scalar otherData, no otherData.
    const std::string odd = R"({"otherData": 7, "junk": {"a": [1, {"b": 2}]}, "traceEvents": [
        {"args": {"step": 3, "list": [1, 2.5, "x"]}, "ts": 1.5, "unused": [[1]], "dur": 2, "pid": 1, "ph": "X",
         "name": "s", "extra": {"deep": {"x": 1}}},
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": {"nested": true}}},
        {"ph": "C", "name": "other_counter", "pid": 0, "ts": 3, "args": {"v": 1}},
        {"ph": "C", "name": "memory", "pid": 0, "ts": 4, "args": {"acts": 12, "params": 0}}]})";
    REQUIRE(fast_parse_chrome_trace(odd, fast));
    require_same(fast, parse_chrome_trace(odd));
    REQUIRE(fast.other_data == 7);
    REQUIRE(fast_parse_chrome_trace(R"({"traceEvents": []})", fast));
    REQUIRE(fast.other_data == json::object());

    // Where the full reader has something to say, the fast one steps aside.
    for (const char* bad : {
             R"({"traceEvents": [{"ph": "X", "name": "s", "pid": 0, "ts": 1}]})",                       // no dur
             R"({"traceEvents": [{"ph": "X", "name": "s", "pid": "0", "ts": 1, "dur": 1}]})",          // pid a string
             R"({"traceEvents": [{"ph": "X", "name": "s", "pid": 0, "ts": 1, "dur": 1, "args": 5}]})",  // args
             R"({"traceEvents": [{"ph": "X", "name": "s", "pid": 0, "ts": 1, "dur": 1, "args": [1]}]})",
             R"({"traceEvents": [{"ph": "X", "cat": "comm", "tid": 1, "name": "all_reduce", "pid": 0, "ts": 1,
                 "dur": 1, "args": {"axis": "dp", "group": [0], "bytes": 4, "payload": "bits", "layer": 0,
                 "phase": "fwd", "microbatch": 0, "step": 0}}]})",                                      // payload
             R"({"traceEvents": [{"ph": "C", "name": "memory", "pid": 0, "ts": 1, "args": {"acts": -1}}]})",
             R"({"traceEvents": [3]})", R"({"traceEvents": {}})", R"([1])", R"({"traceEvents": [)", "nope",
             R"({"other": 1})"}) {
        INFO(bad);
        REQUIRE(!fast_parse_chrome_trace(bad, fast));
    }
    // Nested span args are valid: the fast reader declines, the full one reads them.
    const std::string nested = R"({"traceEvents": [{"ph": "X", "name": "s", "pid": 0, "ts": 1, "dur": 1,
                                   "args": {"shape": {"B": 4}}}]})";
    REQUIRE(!fast_parse_chrome_trace(nested, fast));
    LoadResult r = load_trace_text(nested, "nested.json");
    REQUIRE(r.ok);
    REQUIRE(!r.fast);
    REQUIRE(r.trace.events[0].args["shape"]["B"] == 4);
}

TEST_CASE("the viewer reads a trace's format_version as trace summary does, and refuses a newer one",
          "[viz][load]") {
    // The version where write_chrome_trace puts it, last (after every event the streaming reader
    // has already taken), and first, where another writer might.
    auto last = [](const std::string& version) {
        std::string t = two_rank_trace();
        t.pop_back();  // the closing '}'
        return t + R"(,"format":"shardscope-trace","format_version":)" + version + "}";
    };
    auto first = [](const std::string& version) {
        return R"({"format_version":)" + version + R"(,"format":"shardscope-trace",)" + two_rank_trace().substr(1);
    };
    const std::string current = std::to_string(kTraceFormatVersion);
    for (const std::string& text : {last(current), first(current)}) {
        LoadResult r = load_trace_text(text, "v.json");
        REQUIRE(r.ok);
        REQUIRE(r.fast);
        REQUIRE(r.trace.format_version == kTraceFormatVersion);
    }
    LoadResult old = load_trace_text(two_rank_trace(), "old.json");  // no version: read as before
    REQUIRE(old.ok);
    REQUIRE(old.fast);
    REQUIRE(old.trace.format_version == 0);
    // Another tool's format_version, whatever its value, is its own: read as without one, fast.
    for (const std::string& format : {std::string(R"("format":"other",)"), std::string()}) {
        const std::string text = "{" + format + R"("format_version":99,)" + two_rank_trace().substr(1);
        LoadResult r = load_trace_text(text, "other.json");
        REQUIRE(r.ok);
        REQUIRE(r.fast);
        REQUIRE(r.trace.format_version == 0);
    }

    // A newer or bad version: the fast reader steps aside, and the window shows the full reader's message.
    for (const std::string bad : {std::to_string(kTraceFormatVersion + 1), std::string("4294967297"), std::string("0"),
                                  std::string("-1"), std::string("1.0"), std::string("\"1\""), std::string("null"),
                                  std::string("[1]"), std::string("{\"v\":1}")}) {
        for (const std::string& text : {last(bad), first(bad)}) {
            INFO(text.substr(0, 30) << " ... " << text.substr(text.size() - 30));
            Trace fast;
            REQUIRE(!fast_parse_chrome_trace(text, fast));
            std::string full = "(no error)";
            try {
                parse_chrome_trace(text, "v.json");
            } catch (const Error& e) {
                full = e.what();
            }
            REQUIRE_THAT(full, Catch::StartsWith("v.json: format_version"));
            const LoadResult r = load_trace_text(text, "v.json");
            REQUIRE(!r.ok);
            REQUIRE(r.error == full);
        }
    }
}

TEST_CASE("count_events_fast counts \"ph\" keys only", "[viz][load]") {
    REQUIRE(count_events_fast(R"({"traceEvents":[{"ph":"X"},{"ph":"C","name":"ph"}]})") == 2);
    REQUIRE(count_events_fast("") == 0);
    REQUIRE(count_events_fast("\"ph") == 0);
}

// ---- timeline ------------------------------------------------------------------------

TEST_CASE("a trace becomes two lanes per rank, coloured by payload, with steps", "[viz][timeline]") {
    auto vm = two_rank_model();
    const TimelineModel& m = vm->timeline;
    REQUIRE(m.world == 2);
    REQUIRE(m.lanes.size() == 4);
    const Lane& comm0 = m.lane(0, true);
    const Lane& comp0 = m.lane(0, false);
    REQUIRE(comm0.comm);
    REQUIRE(!comp0.comm);
    REQUIRE(comm0.bars.size() == 4);  // 2 steps x (all_gather, reduce_scatter)
    REQUIRE(comp0.bars.size() == 4);  // 2 steps x (forward, h.0 forward)
    // colours: param blue, grad orange, as the palette says
    REQUIRE(comm0.bars[0].rgba == pack(payload_color(Payload::param)));
    REQUIRE(comm0.bars[1].rgba == pack(payload_color(Payload::grad)));
    REQUIRE(payload_color(Payload::param) == Rgb{0, 114, 178});
    REQUIRE(comp0.bars[0].rgba == pack(span_color("fwd")));
    // nesting: "h.0 forward" is inside "forward"
    REQUIRE(comp0.bars[0].depth == 0);
    REQUIRE(comp0.bars[1].depth == 1);
    REQUIRE(comp0.depths == 2);
    REQUIRE(comm0.depths == 1);
    // times and steps
    REQUIRE(m.t_min == 0);
    REQUIRE(m.t_max == 1580);  // step 2's reduce_scatter ends at 1000 + 500 + 80
    REQUIRE(m.steps.size() == 2);
    REQUIRE(m.steps[1].step == 2);
    REQUIRE(m.steps[1].t0 == 1000);
    REQUIRE(m.steps[1].t1 == 1580);
    REQUIRE(default_window(m) == std::array<double, 2>{1000, 1580});
    REQUIRE(m.axes == std::vector<std::string>{"dp_shard"});
    REQUIRE(m.payload_calls[size_t(Payload::param)] == 4);
    REQUIRE(m.payload_calls[size_t(Payload::grad)] == 4);
    REQUIRE(m.payload_calls[size_t(Payload::act)] == 0);
}

TEST_CASE("the same collective on every rank of its group is one instance", "[viz][timeline]") {
    auto vm = two_rank_model();
    const TimelineModel& m = vm->timeline;
    REQUIRE(m.instances.size() == 4);  // 4 calls per rank on one group
    for (const auto& inst : m.instances) {
        REQUIRE(inst.size() == 2);
        const TraceEvent& a = vm->trace.events[inst[0]];
        const TraceEvent& b = vm->trace.events[inst[1]];
        REQUIRE(a.rank != b.rank);
        REQUIRE(a.name == b.name);
        REQUIRE(a.label.step == b.label.step);
    }
}

TEST_CASE("instances pair real collectives of a 4-rank run, groups and send/recv included", "[viz][timeline]") {
    auto tracers = make_tracers(4, 0);
    CommOptions opts{10, {}};
    for (auto& t : tracers) opts.tracers.push_back(t.get());
    run_threads(4, [](Comm& comm) {
        const int r = comm.rank();
        const Group tp{"tp", {r / 2 * 2, r / 2 * 2 + 1}};
        const Group dp{"dp", {r % 2, r % 2 + 2}};
        std::vector<float> a(64, 1.0f), g(128);
        for (int i = 0; i < 3; ++i) comm.all_reduce(a.data(), 64, tp, ReduceOp::sum, {Payload::act, i, Phase::fwd, 0, 1});
        comm.all_gather(a.data(), g.data(), 64, dp, {Payload::param, 0, Phase::fwd, 0, 1});
        if (r == 0) comm.send(a.data(), 8, 1, {Payload::act, 0, Phase::fwd, 0, 1}, "pp");
        if (r == 1) comm.recv(a.data(), 8, 0, {Payload::act, 0, Phase::fwd, 0, 1}, "pp");
    }, opts);
    std::vector<const Tracer*> ts;
    for (auto& t : tracers) ts.push_back(t.get());
    const std::string path = temp_path("four.json");
    write_chrome_trace(path, ts);
    LoadResult r = load_trace(path);
    REQUIRE(r.ok);
    auto vm = build_view_model(std::move(r.trace), path);
    // 2 tp groups x 3 all_reduces + 2 dp groups x 1 all_gather + 1 send/recv pair
    REQUIRE(vm->timeline.instances.size() == 9);
    int pairs = 0;
    for (const auto& inst : vm->timeline.instances) {
        const TraceEvent& first = vm->trace.events[inst[0]];
        if (first.name == "send" || first.name == "recv") {
            ++pairs;
            REQUIRE(inst.size() == 2);
            continue;
        }
        REQUIRE(inst.size() == first.group.size());
        for (uint32_t e : inst) {
            REQUIRE(vm->trace.events[e].group == first.group);
            REQUIRE(vm->trace.events[e].label.layer == first.label.layer);  // the k-th call matches the k-th call
        }
    }
    REQUIRE(pairs == 1);
    REQUIRE(vm->run.missing.size() >= 1);  // no otherData: defaults, and it says so
    REQUIRE(vm->run.shape.dp_shard == 4);
}

TEST_CASE("layout_lane: known bars give known rects; sub-pixel bars merge", "[viz][timeline]") {
    Lane lane;
    lane.comm = true;
    auto add = [&](double t0, double t1, uint32_t rgba) {
        Bar b;
        b.t0 = t0;
        b.t1 = t1;
        b.rgba = rgba;
        lane.bars.push_back(b);
        lane.max_dur = std::max(lane.max_dur, t1 - t0);
    };
    add(0, 10, 1);
    add(20, 30, 2);
    TimeView v{0, 100, 50, 200};  // 100 µs over 200 px starting at x = 50: 2 px per µs
    std::vector<DrawRect> out;
    layout_lane(lane, v, {}, out);
    REQUIRE(out.size() == 2);
    REQUIRE(out[0].x0 == 50);
    REQUIRE(out[0].x1 == 70);
    REQUIRE(out[1].x0 == 90);
    REQUIRE(out[1].x1 == 110);
    REQUIRE(out[1].rgba == 2);

    // 1000 bars of 0.1 µs back to back over 100 µs, seen at 1 px per 10 µs: ~10 rects, not 1000.
    Lane dense;
    for (int i = 0; i < 1000; ++i) {
        Bar b;
        b.t0 = i * 0.1;
        b.t1 = i * 0.1 + 0.1;
        b.rgba = i == 500 ? 7 : 3;
        if (i == 500) b.t1 += 0.05;  // the longest member gives the colour
        dense.bars.push_back(b);
        dense.max_dur = 0.15;
    }
    out.clear();
    layout_lane(dense, TimeView{0, 1000, 0, 100}, {}, out);
    REQUIRE(out.size() == 1);  // all touching: one run
    REQUIRE(out[0].merged == 1000);
    REQUIRE(out[0].rgba == 7);
    REQUIRE(out[0].x1 - out[0].x0 >= 1.0f);

    // Clipping: a bar half out of view is cut at the edge; bars outside are skipped.
    out.clear();
    layout_lane(lane, TimeView{5, 25, 0, 20}, {}, out);
    REQUIRE(out.size() == 2);
    REQUIRE(out[0].x0 == 0);
    REQUIRE(out[0].x1 == 5);
    REQUIRE(out[1].x0 == 15);
    REQUIRE(out[1].x1 == 20);

    // Painting a pixel row: pixel i covers [x0 + i, x0 + i + 1).
    std::vector<DrawRect> rs = {{2.0f, 4.0f, 5, 0, 1, 0}, {3.5f, 6.0f, 6, 1, 1, 0}, {1.0f, 9.0f, 9, 2, 1, 1}};
    std::vector<uint32_t> row(8, 77);
    paint_row(rs, 0, 1.0f, 8, row.data());  // depth 0 only; the later rect wins a shared pixel
    REQUIRE(row == std::vector<uint32_t>{0, 5, 6, 6, 6, 0, 0, 0});

    // Picking: x = 60 is on bar 0 (t = 5); x = 80 (t = 15) is 10 px from either: nothing.
    REQUIRE(pick_bar(lane, v, {}, 60, 0) == 0);
    REQUIRE(pick_bar(lane, v, {}, 80, 0) == -1);
    REQUIRE(pick_bar(lane, v, {}, 71.5, 0) == 0);  // 1.5 px after its end: within the slack
}

// An asynchronous trace: rank 0 issues a param all_gather at 10 that runs [30, 80] and blocks
// it for the last 15 µs; a second one runs [50, 90] at the same time (issued at 40, hid whole);
// then a blocking grad all_reduce [100, 120]. Rank 1 is blocking only.
std::string async_trace() {
    json ev = json::array();
    json a = coll(0, "all_gather", 30, 50, "dp", {0, 1}, 4096, "param", 0, "fwd", 1);
    a["args"]["issued_us"] = 10;
    a["args"]["exposed_us"] = 15;
    json b = coll(0, "all_gather", 50, 40, "dp", {0, 1}, 4096, "param", 1, "fwd", 1);
    b["args"]["issued_us"] = 40;
    b["args"]["exposed_us"] = 0;
    ev.push_back(a);
    ev.push_back(b);
    ev.push_back(coll(0, "all_reduce", 100, 20, "dp", {0, 1}, 4096, "grad", -1, "bwd", 1));
    ev.push_back(coll(1, "all_gather", 30, 50, "dp", {0, 1}, 4096, "param", 0, "fwd", 1));
    ev.push_back(coll(1, "all_gather", 80, 10, "dp", {0, 1}, 4096, "param", 1, "fwd", 1));
    ev.push_back(coll(1, "all_reduce", 100, 20, "dp", {0, 1}, 4096, "grad", -1, "bwd", 1));
    json other = {{"emulated_links", "emulated links (not measured): 1 GB/s, 6 us on every link"}};
    return json{{"traceEvents", ev}, {"otherData", other}}.dump();
}

TEST_CASE("overlap: the queued line and the exposed strip of an asynchronous call", "[viz][timeline][overlap]") {
    LoadResult r = load_trace_text(async_trace(), "async.json");
    REQUIRE(r.ok);
    REQUIRE(r.fast);  // the streaming reader reads issued_us and exposed_us itself
    Trace full = parse_chrome_trace(async_trace());
    require_same(r.trace, full);
    auto vm = build_view_model(std::move(r.trace), "async.json");
    const TimelineModel& m = vm->timeline;
    REQUIRE(m.has_overlap);
    REQUIRE(vm->run.emulated_links == "emulated links (not measured): 1 GB/s, 6 us on every link");
    REQUIRE(two_rank_model()->run.emulated_links.empty());
    REQUIRE(!two_rank_model()->timeline.has_overlap);  // a blocking-only trace draws no overlap parts

    const Lane& c0 = m.lane(0, true);
    REQUIRE(c0.bars.size() == 3);
    REQUIRE(c0.max_queue == 20);  // 30 - 10
    REQUIRE(c0.depths == 2);      // two calls in flight at once stack in two rows
    REQUIRE(c0.bars[1].depth == 1);
    const Bar& a = c0.bars[0];
    auto seg = [](const Bar& b, BarPart p) { return std::array<double, 2>{bar_segment(b, p).t0, bar_segment(b, p).t1}; };
    REQUIRE(seg(a, BarPart::call) == std::array<double, 2>{30, 80});
    REQUIRE(seg(a, BarPart::queued) == std::array<double, 2>{10, 30});
    REQUIRE(seg(a, BarPart::exposed) == std::array<double, 2>{65, 80});  // the last 15 µs of the call
    REQUIRE(bar_segment(c0.bars[1], BarPart::exposed).empty());          // hid whole under compute
    const Bar& blocking = c0.bars[2];
    REQUIRE(bar_segment(blocking, BarPart::queued).empty());             // issued when it ran
    REQUIRE(seg(blocking, BarPart::exposed) == std::array<double, 2>{100, 120});  // exposed end to end

    // Laid out at 1 px per µs from x = 0: the parts become rects of their own colours.
    const TimeView v{0, 200, 0, 200};
    std::vector<DrawRect> out;
    layout_lane(c0, v, {}, out, BarPart::queued);
    REQUIRE(out.size() == 2);
    REQUIRE(out[0].x0 == 10);
    REQUIRE(out[0].x1 == 30);
    REQUIRE(out[0].rgba == queued_rgba(a.rgba));
    REQUIRE((out[0].rgba >> 24) < 255);  // lighter: drawn translucent over the lane
    REQUIRE(out[1].x0 == 40);
    REQUIRE(out[1].depth == 1);
    out.clear();
    layout_lane(c0, v, {}, out, BarPart::exposed);
    REQUIRE(out.size() == 2);
    REQUIRE(out[0].x0 == 65);
    REQUIRE(out[0].x1 == 80);
    REQUIRE(out[0].rgba == pack(exposed_color()));
    REQUIRE(out[1].x0 == 100);
    REQUIRE(out[1].x1 == 120);
    // A queued line whose call starts after the view still shows where it is in view.
    out.clear();
    layout_lane(c0, TimeView{0, 20, 0, 20}, {}, out, BarPart::queued);
    REQUIRE(out.size() == 1);
    REQUIRE(out[0].x0 == 10);
    REQUIRE(out[0].x1 == 20);
    // Filters apply to the parts as to the bars: hiding param hides its lines and strips.
    TimelineFilter no_param;
    no_param.payload_mask &= ~(1u << int(Payload::param));
    out.clear();
    layout_lane(c0, v, no_param, out, BarPart::exposed);
    REQUIRE(out.size() == 1);
    REQUIRE(out[0].x0 == 100);

    // The summary the Comm panel shows carries the same overlap rows.
    const auto& ov = vm->summary.overlap;
    REQUIRE(ov.size() == 4);  // rank 0 step 1 and total, rank 1 step 1 and total
    REQUIRE(ov[0].comm_us == Approx(80));     // [30, 90] + [100, 120]
    REQUIRE(ov[0].exposed_us == Approx(35));  // 15 + 0 + 20
    REQUIRE(ov[2].comm_us == Approx(80));     // rank 1: [30, 90] + [100, 120], all exposed
    REQUIRE(ov[2].hidden_fraction() == Approx(0));
}

TEST_CASE("filters hide bars by payload, axis and step", "[viz][timeline]") {
    auto vm = two_rank_model();
    const Lane& comm0 = vm->timeline.lane(0, true);
    TimeView all{0, 2000, 0, 2000};
    auto count = [&](const TimelineFilter& f) {
        std::vector<DrawRect> out;
        layout_lane(comm0, all, f, out);
        return out.size();
    };
    REQUIRE(count({}) == 4);
    TimelineFilter only_grads;
    only_grads.payload_mask = 1u << int(Payload::grad);
    REQUIRE(count(only_grads) == 2);
    TimelineFilter step2;
    step2.step = 2;
    REQUIRE(count(step2) == 2);
    TimelineFilter no_axes;
    no_axes.axis_mask = 0;
    REQUIRE(count(no_axes) == 0);
}

TEST_CASE("TimeView zooms about the cursor and pans by pixels", "[viz][timeline]") {
    TimeView v{0, 100, 0, 100};
    v.zoom(2, 50);  // about t = 50
    REQUIRE(v.t0 == Approx(25));
    REQUIRE(v.t1 == Approx(75));
    v.pan_pixels(10);  // drag right 10 px = 5 µs earlier
    REQUIRE(v.t0 == Approx(20));
    REQUIRE(v.x_of(20) == Approx(0));
    REQUIRE(v.t_of(100) == Approx(70));
    v.fit(0, 1000, 0.1);
    REQUIRE(v.t0 == Approx(-100));
    REQUIRE(v.t1 == Approx(1100));
    // Zooming stops where double precision would: at t = 1e15 µs no closer than 1e3 µs.
    TimeView far{1e15, 1e15 + 1e6, 0, 100};
    for (int i = 0; i < 200; ++i) far.zoom(2, 50);
    REQUIRE(far.t1 - far.t0 >= 999.0);
    REQUIRE(far.t1 > far.t0);
}

// ---- memory --------------------------------------------------------------------------

TEST_CASE("memory series: the sample in force, the peak, and pixel columns that keep the saw-tooth",
          "[viz][memory]") {
    auto vm = two_rank_model();
    const RankMemory& r0 = vm->memory.ranks[0];
    REQUIRE(r0.points.size() == 6);
    REQUIRE(r0.peak == 1);  // 2048 params + 4096 gathered at t = 20
    REQUIRE(r0.points[1].total == 6144);
    REQUIRE(vm->memory.max_total == 6144);
    REQUIRE(sample_at(r0, -1) == nullptr);
    REQUIRE(sample_at(r0, 19.9)->total == 2048);
    REQUIRE(sample_at(r0, 20)->total == 6144);
    REQUIRE(sample_at(r0, 500)->total == 2048);
    REQUIRE(sample_at(r0, 500)->mem[int(Mem::params)] == 2048);

    // Two columns of 1000 µs: each holds one tooth (2048 -> 6144 -> 2048).
    std::vector<MemColumn> cols;
    columns(r0, 0, 2000, 2, cols);
    REQUIRE(cols.size() == 2);
    REQUIRE(cols[0].lo == 2048);
    REQUIRE(cols[0].hi == 6144);
    REQUIRE(cols[0].top == 1);
    REQUIRE(cols[1].hi == 6144);
    REQUIRE(cols[1].top == 4);
    // A column inside the flat part after a tooth: carried-in value only.
    columns(r0, 100, 200, 1, cols);
    REQUIRE(cols[0].lo == 2048);
    REQUIRE(cols[0].hi == 2048);
    // Only the comm category: the tooth is 0 -> 4096 -> 0, and its column keeps the tooth's sample.
    const uint32_t comm_only = 1u << int(Mem::comm);
    REQUIRE(masked_total(r0.points[1], comm_only) == 4096);
    REQUIRE(masked_total(r0.points[1], kAllCategories) == 6144);
    columns(r0, 0, 1000, 1, cols, comm_only);
    REQUIRE(cols[0].lo == 0);
    REQUIRE(cols[0].hi == 4096);
    REQUIRE(cols[0].top == 1);
    // Before the first sample: nothing.
    columns(r0, -100, -50, 1, cols);
    REQUIRE(cols[0].top == -1);
}

// ---- grid ----------------------------------------------------------------------------

TEST_CASE("grid layout: blocks per (pp, replica), rows per shard, tp fastest", "[viz][grid]") {
    MeshShape s;
    s.pp = 2;
    s.dp_rep = 2;
    s.dp_shard = 2;
    s.tp = 2;
    GridLayout g = layout_grid(ProcessMesh(16, s));
    REQUIRE(!g.shard_along_x);
    REQUIRE(g.blocks.size() == 4);
    REQUIRE(g.width == Approx(2 + kBlockGap + 2));
    REQUIRE(g.height == Approx(2 + kBlockGap + 2));
    // rank 3: pp 0, rep 0, shard 1, tp 1 -> (1, 1)
    REQUIRE(g.cells[3].x == 1);
    REQUIRE(g.cells[3].y == 1);
    // rank 4: pp 0, rep 1, shard 0, tp 0 -> second block down
    REQUIRE(g.cells[4].x == 0);
    REQUIRE(g.cells[4].y == Approx(2 + kBlockGap));
    // rank 8: pp 1 -> second block across
    REQUIRE(g.cells[8].x == Approx(2 + kBlockGap));
    REQUIRE(g.cells[8].coord.pp_rank == 1);

    // 8-way ZeRO: one row of 8; 20-way wraps after kWrap.
    MeshShape z;
    z.dp_shard = 8;
    GridLayout row = layout_grid(ProcessMesh(8, z));
    REQUIRE(row.shard_along_x);
    REQUIRE(row.width == 8);
    REQUIRE(row.height == 1);
    REQUIRE(row.cells[7].x == 7);
    z.dp_shard = 20;
    GridLayout wrap = layout_grid(ProcessMesh(20, z));
    REQUIRE(wrap.height == 3);
    REQUIRE(wrap.cells[9].x == 1);
    REQUIRE(wrap.cells[9].y == 1);

    // sp groups are set apart when tp > 1.
    MeshShape sp;
    sp.sp = 2;
    sp.tp = 2;
    GridLayout spl = layout_grid(ProcessMesh(4, sp));
    REQUIRE(spl.cells[2].x == Approx(2 + kSpGap));
}

// ---- run info and the view model -------------------------------------------------------

TEST_CASE("otherData gives the mesh, the model and the GBS line", "[viz][run]") {
    auto vm = two_rank_model();
    const RunInfo& run = vm->run;
    REQUIRE(run.has_mesh);
    REQUIRE(run.shape.dp_shard == 2);
    REQUIRE(run.model == "tiny");
    REQUIRE(run.zero == 3);
    REQUIRE(run.gbs == 8);
    REQUIRE(run.gbs_line == "GBS = MBS x GA x DP = 4 x 1 x 2 = 8");
    REQUIRE(run.title() == "ZeRO-3 \xC2\xB7 2 ranks (dp_shard 2) \xC2\xB7 model tiny \xC2\xB7 fp32");
    REQUIRE(vm->steps == 2);
    // summary totals: 8 collectives of 4096 bytes; moved = bytes x (n-1)/n
    REQUIRE(vm->summary.total.calls == 8);
    REQUIRE(vm->summary.total.bytes == 8 * 4096);
    REQUIRE(vm->summary.total.bus_bytes == Approx(8 * 4096 * 0.5));

    // A mesh that does not match the trace's ranks is ignored, and said so.
    json t = json::parse(two_rank_trace());
    t["otherData"]["mesh"]["dp_shard"] = 4;
    LoadResult r = load_trace_text(t.dump(), "x.json");
    REQUIRE(r.ok);
    RunInfo bad = read_run_info(r.trace);
    REQUIRE(!bad.has_mesh);
    REQUIRE(bad.shape.dp_shard == 2);
    REQUIRE(bad.missing.front() == "mesh (does not match the trace's ranks)");
    // Local SGD's sync (plan/comm.h, CommCall::every): predicted on steps H, 2H, ... only.
    t = json::parse(two_rank_trace());
    t["otherData"]["prediction"]["comm"] = json::array(
        {{{"payload", "grad"}, {"bytes", 100}, {"calls", 2}},
         {{"payload", "optim"}, {"bytes", 40}, {"calls", 1}, {"every", 4}}});
    r = load_trace_text(t.dump(), "x.json");
    REQUIRE(r.ok);
    const Prediction sync = read_run_info(r.trace).predicted;
    CHECK(sync.sync_every == 4);
    CHECK(sync.bytes_on_step(size_t(Payload::grad), 3) == 100);
    CHECK(sync.bytes_on_step(size_t(Payload::optim), 3) == 0);
    CHECK(sync.bytes_on_step(size_t(Payload::optim), 4) == 40);
    CHECK(sync.bytes_on_step(size_t(Payload::optim), 8) == 40);
    // otherData of the wrong type: defaults, no throw.
    t["otherData"] = 5;
    r = load_trace_text(t.dump(), "x.json");
    REQUIRE(r.ok);
    REQUIRE(read_run_info(r.trace).model == "?");
}

// ---- pipeline schedule ---------------------------------------------------------------------

namespace {

using Op = PipeOp;

// 1F1B, p = 2, m = 4, in Megatron's order (src/schedule/pipeline_schedule.h): rank 0 warms
// up with one forward, then pairs one forward with one backward; rank 1 (the last stage)
// has no warm-up. Each action as train writes it into otherData.pipeline.actions.
const std::vector<std::vector<PipeAction>> k1f1b = {
    {{Op::forward, 0, 0}, {Op::send_act, 0, 0}, {Op::forward, 1, 0}, {Op::send_act, 1, 0}, {Op::recv_grad, 0, 0},
     {Op::backward, 0, 0}, {Op::forward, 2, 0}, {Op::send_act, 2, 0}, {Op::recv_grad, 1, 0}, {Op::backward, 1, 0},
     {Op::forward, 3, 0}, {Op::send_act, 3, 0}, {Op::recv_grad, 2, 0}, {Op::backward, 2, 0}, {Op::recv_grad, 3, 0},
     {Op::backward, 3, 0}},
    {{Op::recv_act, 0, 0}, {Op::forward, 0, 0}, {Op::backward, 0, 0}, {Op::send_grad, 0, 0}, {Op::recv_act, 1, 0},
     {Op::forward, 1, 0}, {Op::backward, 1, 0}, {Op::send_grad, 1, 0}, {Op::recv_act, 2, 0}, {Op::forward, 2, 0},
     {Op::backward, 2, 0}, {Op::send_grad, 2, 0}, {Op::recv_act, 3, 0}, {Op::forward, 3, 0}, {Op::backward, 3, 0},
     {Op::send_grad, 3, 0}}};

json actions_json(const std::vector<std::vector<PipeAction>>& lists) {
    static const char* kOps[] = {"recv_act", "forward", "send_act", "recv_grad", "backward", "send_grad"};
    json out = json::array();
    for (const auto& list : lists) {
        json l = json::array();
        for (const PipeAction& a : list) l.push_back({kOps[int(a.op)], a.micro, a.chunk});
        out.push_back(l);
    }
    return out;
}

// A 2-rank pp trace: otherData.pipeline = @p pipeline (absent if null), and the forward
// and backward spans train records (args step, microbatch, stage) for two steps.
PipelineView pp_view(const json& pipeline) {
    json ev = json::array();
    for (int step = 1; step <= 2; ++step)
        for (int r = 0; r < 2; ++r)
            for (int micro = 0; micro < 4; ++micro) {
                const double base = 1000.0 * step + 100 * micro + 10 * r;
                for (const char* name : {"forward", "backward"})
                    ev.push_back({{"name", name}, {"cat", name[0] == 'f' ? "fwd" : "bwd"}, {"ph", "X"}, {"pid", r},
                                  {"tid", 0}, {"ts", base + (name[0] == 'f' ? 0 : 40)}, {"dur", name[0] == 'f' ? 20 : 40},
                                  {"args", {{"step", step}, {"microbatch", micro}, {"stage", r}}}});
            }
    json other = {{"mesh", {{"world", 2}, {"pp", 2}, {"dp_rep", 1}, {"dp_shard", 1}, {"sp", 1}, {"tp", 1}}}};
    if (!pipeline.is_null()) other["pipeline"] = pipeline;
    LoadResult r = load_trace_text(json{{"traceEvents", ev}, {"otherData", other}}.dump(), "pp.json");
    REQUIRE(r.ok);
    std::unique_ptr<ViewModel> vm;
    REQUIRE_NOTHROW(vm = build_view_model(std::move(r.trace), "pp.json"));
    return vm->pipeline;
}

}  // namespace

TEST_CASE("pipeline: 1F1B p=2 m=4 simulates to the hand-drawn chart, bubble (p-1)/m", "[viz][pipeline]") {
    std::string error;
    const PipeTimeline t = simulate_pipeline(k1f1b, 1, error);
    REQUIRE(error.empty());
    // Forward 1, backward 2, messages free (pipeline.h's chart):
    //   rank 0 | F0 F1 .  .  B0 B0 F2 B1 B1 F3 B2 B2 .  B3 B3
    //   rank 1 | .  F0 B0 B0 F1 B1 B1 F2 B2 B2 F3 B3 B3 .  .
    struct Want {
        int rank;
        double start, end;
        bool backward;
        int micro;
    };
    const Want want[] = {{0, 0, 1, false, 0},  {0, 1, 2, false, 1},  {0, 4, 6, true, 0},   {0, 6, 7, false, 2},
                         {0, 7, 9, true, 1},   {0, 9, 10, false, 3}, {0, 10, 12, true, 2}, {0, 13, 15, true, 3},
                         {1, 1, 2, false, 0},  {1, 2, 4, true, 0},   {1, 4, 5, false, 1},  {1, 5, 7, true, 1},
                         {1, 7, 8, false, 2},  {1, 8, 10, true, 2},  {1, 10, 11, false, 3}, {1, 11, 13, true, 3}};
    REQUIRE(t.boxes.size() == 16);
    for (size_t i = 0; i < 16; ++i) {
        INFO("box " << i << ": " << pipe_box_label(t.boxes[i], 1) << " on rank " << t.boxes[i].rank);
        CHECK(t.boxes[i].rank == want[i].rank);
        CHECK(t.boxes[i].start == want[i].start);  // sums of 1s and 2s: exact in a double
        CHECK(t.boxes[i].end == want[i].end);
        CHECK(t.boxes[i].backward == want[i].backward);
        CHECK(t.boxes[i].micro == want[i].micro);
    }
    REQUIRE(t.makespan == 15);  // 3 m + 3 (p-1)
    REQUIRE(t.busy == 24);      // 3 m on each of 2 ranks
    REQUIRE(t.bubble == Approx(1.0 / 4).epsilon(1e-12));  // (p-1)/m = 1/4, counted: (2 x 15 - 24) / 24
    REQUIRE(pipe_box_label(t.boxes[2], 1) == "B0");
    REQUIRE(pipe_box_label(PipeBox{0, 0, 1, false, 3, 1}, 2) == "F3b");
}

TEST_CASE("pipeline: GPipe's counted bubble is (p-1)/m for p 1..5, m 1..8", "[viz][pipeline]") {
    for (int p = 1; p <= 5; ++p)
        for (int m = 1; m <= 8; ++m) {
            // Huang et al. 2019, fig. 2c: every forward, then every backward in reverse.
            std::vector<std::vector<PipeAction>> lists(static_cast<size_t>(p));
            for (int r = 0; r < p; ++r) {
                auto& l = lists[size_t(r)];
                for (int i = 0; i < m; ++i) {
                    if (r > 0) l.push_back({Op::recv_act, i, 0});
                    l.push_back({Op::forward, i, 0});
                    if (r < p - 1) l.push_back({Op::send_act, i, 0});
                }
                for (int i = m - 1; i >= 0; --i) {
                    if (r < p - 1) l.push_back({Op::recv_grad, i, 0});
                    l.push_back({Op::backward, i, 0});
                    if (r > 0) l.push_back({Op::send_grad, i, 0});
                }
            }
            std::string error;
            const PipeTimeline t = simulate_pipeline(lists, 1, error);
            INFO("p = " << p << ", m = " << m);
            REQUIRE(error.empty());
            REQUIRE(t.makespan == 3 * m + 3 * (p - 1));
            REQUIRE(t.bubble == Approx(double(p - 1) / m).epsilon(1e-12));
        }
}

TEST_CASE("pipeline: the viewer's boxes are the engine's simulation, interleaved too", "[viz][pipeline]") {
    // The panel draws make_pipe_schedule's lists as train writes them; its step length
    // and bubble are the engine's own (check_pipe_schedule), not a second count.
    for (Schedule kind : {Schedule::gpipe, Schedule::one_f_one_b, Schedule::interleaved})
        for (int p = 2; p <= 4; ++p)
            for (int m = p; m <= 2 * p; m += p) {
                const PipeSpec spec{kind, p, m, kind == Schedule::interleaved ? 3 : 1};
                const PipeSchedule s = make_pipe_schedule(spec);
                const PipeStats st = check_pipe_schedule(s);
                std::string error;
                const PipeTimeline t = simulate_pipeline(s.ranks, spec.v, error);
                INFO(schedule_name(kind) << " p=" << p << " m=" << m << " v=" << spec.v << ": " << error);
                REQUIRE(error.empty());
                REQUIRE(t.boxes.size() == size_t(2 * p * m * spec.v));  // a forward and a backward per (micro, vs)
                // Ticks / v in doubles: each box edge is k / v for a whole k, one rounding each.
                REQUIRE(t.makespan == Approx(st.makespan).epsilon(1e-12));
                REQUIRE(t.bubble == Approx(st.bubble_fraction).epsilon(1e-12));
                for (const PipeBox& b : t.boxes)
                    REQUIRE(b.end - b.start == Approx((b.backward ? 2.0 : 1.0) / spec.v).epsilon(1e-12));
            }
}

TEST_CASE("pipeline: otherData.pipeline read from a trace, with the measured step beside it", "[viz][pipeline]") {
    const json pipeline = {{"pp", 2},          {"schedule", "1f1b"}, {"pp_virtual", 1},       {"split", {2, 2}},
                           {"micro_batches", 4}, {"bubble", 0.25},   {"actions", actions_json(k1f1b)}};
    const PipelineView pv = pp_view(pipeline);
    INFO(pv.message);
    REQUIRE(pv.drawable());
    REQUIRE(pv.pp == 2);
    REQUIRE(pv.m == 4);
    REQUIRE(pv.v == 1);
    REQUIRE(pv.schedule == "1f1b");
    REQUIRE(pv.split == std::vector<int>{2, 2});
    REQUIRE(pv.bubble_formula == 0.25);
    REQUIRE(pv.simulated.bubble == Approx(0.25).epsilon(1e-12));
    // Measured: step 2 (the first warms up), 4 forwards and 4 backwards per rank, µs from the step's start.
    INFO(pv.measured_message);
    REQUIRE(pv.measured_message.empty());
    REQUIRE(pv.measured_step == 2);
    REQUIRE(pv.measured_ranks == std::vector<int>{0, 1});
    REQUIRE(pv.measured.boxes.size() == 16);
    const PipeBox& first = pv.measured.boxes.front();
    REQUIRE(first.rank == 0);
    REQUIRE(first.start == 0);
    REQUIRE(first.end == 20);
    REQUIRE(pv.measured.makespan == 390);  // rank 1's last backward: 10 + 300 + 40 + 40
    REQUIRE(pv.measured.busy == 2 * 4 * 60);
    // Without the optional fields, p, m and v come from the lists and the formula from them.
    const PipelineView bare = pp_view({{"actions", actions_json(k1f1b)}});
    REQUIRE(bare.drawable());
    REQUIRE(bare.m == 4);
    REQUIRE(bare.bubble_formula == 0.25);
}

TEST_CASE("pipeline: no pipeline, or a malformed one, is a message, never a throw", "[viz][pipeline]") {
    // pp = 1 or an older trace: the view model of the two-rank ZeRO-3 trace has none.
    REQUIRE_THAT(two_rank_model()->pipeline.message, Catch::StartsWith("no pipeline in this run"));
    REQUIRE_THAT(pp_view(json()).message, Catch::StartsWith("no pipeline in this run"));

    auto message = [](const json& pipeline) {
        const PipelineView pv = pp_view(pipeline);
        REQUIRE(!pv.drawable());
        REQUIRE(pv.simulated.boxes.empty());
        return pv.message;
    };
    using Catch::Contains;
    REQUIRE(message(5) == "otherData.pipeline is not an object");
    REQUIRE_THAT(message(json::object()), Contains("has no actions"));
    auto actions = [&](const char* text) { return message({{"actions", json::parse(text)}}); };
    REQUIRE_THAT(actions(R"("F0 F1")"), Contains("actions is not a list"));
    REQUIRE_THAT(actions("[]"), Contains("actions is empty"));
    REQUIRE_THAT(actions(R"([[["forward", 0, 0]], 7])"), Contains("actions[1] is not a list"));
    REQUIRE_THAT(actions(R"([[["forward", 0]]])"), Contains("actions[0][0] is not [op, micro-batch, chunk]"));
    REQUIRE_THAT(actions(R"([[["forward", 1e30, 0]]])"), Contains("actions[0][0] is not"));
    REQUIRE_THAT(actions(R"([[["jump", 0, 0]]])"), Contains("unknown op \"jump\""));
    REQUIRE_THAT(actions(R"([[["forward", -1, 0]]])"), Contains("micro-batch out of range"));
    REQUIRE_THAT(actions(R"([[["forward", 18446744073709551615, 0]]])"), Contains("micro-batch out of range"));
    REQUIRE_THAT(actions(R"([[["forward", 0, 1000]]])"), Contains("chunk out of range"));
    // Fields that contradict the lists.
    REQUIRE_THAT(message({{"pp", 4}, {"actions", actions_json(k1f1b)}}), Contains("pp = 4 but actions has 2 lists"));
    REQUIRE_THAT(message({{"micro_batches", 2}, {"actions", actions_json(k1f1b)}}),
                 Contains("micro_batches = 2 but an action uses micro-batch 3"));
    // Lists that cannot run: a receive across the pipeline's end, and a receive whose send never comes.
    REQUIRE_THAT(actions(R"([[["recv_act", 0, 0], ["forward", 0, 0]]])"),
                 Contains("pp rank 0, action 0 (recv_act of micro-batch 0, chunk 0) crosses an end of the pipeline"));
    auto stuck = k1f1b;
    stuck[0].erase(stuck[0].begin() + 1);  // rank 0 never sends micro-batch 0's activation
    REQUIRE_THAT(message({{"actions", actions_json(stuck)}}),
                 Contains("deadlock: pp rank 0, action 3 (recv_grad of micro-batch 0, chunk 0); "
                          "pp rank 1, action 0 (recv_act of micro-batch 0, chunk 0) wait for sends that never come"));
    REQUIRE_THAT(actions(R"([[["send_act", 0, 0]], [["recv_act", 0, 0]]])"), Contains("no forward or backward"));
}

// ---- GBS calculator ----------------------------------------------------------------------

TEST_CASE("GBS calculator: the 512-GPU question", "[viz][gbs]") {
    GbsInput in;  // 512 GPUs, 8 per node, MBS 16, GA 1, target 1024, GPT-2 (12 heads, 12 layers)
    GbsResult r = compute_gbs(in);
    REQUIRE(r.ok);
    REQUIRE(r.dp == 512);
    REQUIRE(r.gbs == 8192);
    REQUIRE(r.nodes == 64);
    REQUIRE(r.warnings.size() == 1);
    REQUIRE_THAT(r.warnings[0], Catch::Contains("GBS 8192 is above the target 1024") && Catch::Contains("MBS <= 2"));
    // Giving 8 ranks to ... TP 4 x PP 2 leaves DP 64: GBS 1024, on target.
    in.tp = 4;
    in.pp = 2;
    r = compute_gbs(in);
    REQUIRE(r.ok);
    REQUIRE(r.dp == 64);
    REQUIRE(r.gbs == 1024);
    REQUIRE(r.warnings.empty());
    REQUIRE(r.lines[0] == "DP = world / (TP x PP x SP) = 512 / (4 x 2 x 1) = 64");
    REQUIRE(r.lines[2] == "GBS = MBS x GA x DP = 16 x 1 x 64 = 1024 sequences per step");
    // Replicas: dp_rep 4 -> dp_shard 16; GBS unchanged.
    in.dp_rep = 4;
    r = compute_gbs(in);
    REQUIRE(r.shape.dp_shard == 16);
    REQUIRE(r.gbs == 1024);
}

TEST_CASE("GBS calculator: impossible layouts say what would work", "[viz][gbs]") {
    GbsInput in;
    in.tp = 5;
    GbsResult r = compute_gbs(in);
    REQUIRE(!r.ok);
    REQUIRE_THAT(r.error, Catch::Contains("TP=5 does not divide n_head=12"));
    in.tp = 4;
    in.pp = 3;
    in.sp = 1;
    r = compute_gbs(in);  // 12 does not divide 512
    REQUIRE(!r.ok);
    REQUIRE_THAT(r.error, Catch::Contains("does not divide 512 GPUs"));
    in.pp = 1;
    in.tp = 16;
    in.n_head = 16;
    r = compute_gbs(in);
    REQUIRE(r.ok);
    REQUIRE_THAT(r.warnings.back(), Catch::Contains("spans more than one node"));
    in.tp = 1;
    in.dp_shard = 7;
    in.dp_rep = 0;
    r = compute_gbs(in);
    REQUIRE(!r.ok);  // 7 does not divide DP 512
}
