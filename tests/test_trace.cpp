// test_trace.cpp — the Tracer records exactly what was called, the Chrome trace
// reads back as it was written, and a corrupt file is refused with a clear error.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "comm/comm.h"
#include "comm/threads/threads_backend.h"
#include "comm/trace/trace.h"
#include "comm/trace/trace_check.h"
#include "comm/trace/trace_nodes.h"
#include "comm/trace/trace_overlap.h"
#include "comm/trace/trace_summary.h"
#include "core/check.h"
#include "core/ledger.h"
#include "core/text.h"
#include "trace_equal.h"

using namespace ss;
using nlohmann::json;

namespace {

std::string temp_path(const std::string& name) {
    auto dir = std::filesystem::path(SS_BINARY_DIR) / "test_trace_out";
    std::filesystem::create_directories(dir);
    return (dir / name).string();
}

void write_text(const std::string& path, const std::string& text) {
    std::ofstream(path) << text;
}

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

// The script every rank of a 4-rank world runs: tp = [0,1] [2,3], dp = [0,2] [1,3].
void script(Comm& comm) {
    const int r = comm.rank();
    const Group tp{"tp", {r / 2 * 2, r / 2 * 2 + 1}};
    const Group dp{"dp", {r % 2, r % 2 + 2}};
    std::vector<float> a(1000, 1.0f), g(2 * 10);
    std::vector<uint16_t> h(2 * 64);
    {
        ScopedSpan span(comm.tracer(), "h.0 forward", "fwd");
        span.set_arg("layer", 0);
        comm.all_reduce(a.data(), 1000, tp, ReduceOp::sum, {Payload::act, 0, Phase::fwd, 0, 7});
    }
    comm.all_gather(a.data(), g.data(), 10, dp, {Payload::param, 1, Phase::fwd, 1, 7});
    comm.reduce_scatter(h.data(), h.data() + (dp.index_of(r)) * 64, 64, DType::bf16, dp, ReduceOp::avg,
                        {Payload::grad, 1, Phase::bwd, 1, 7});
    comm.all_to_all(a.data(), a.data() + 500, 250, tp, {Payload::act, 2, Phase::fwd, 0, 7});
    comm.broadcast(a.data(), 3, 1, tp, {Payload::scalar, -1, Phase::step, -1, 7});
    if (r == 0) comm.send(a.data(), 5, 2, {Payload::act_grad, 3, Phase::bwd, 0, 7}, "pp");
    if (r == 2) comm.recv(a.data(), 5, 0, {Payload::act_grad, 3, Phase::bwd, 0, 7}, "pp");
    comm.barrier(comm.world_group(), {Payload::scalar, -1, Phase::step, -1, 7});
}

struct Expected {
    const char* op;
    const char* axis;
    std::vector<int> group;
    uint64_t bytes;
    Payload payload;
    int layer;
    Phase phase;
    int microbatch;
    int peer;
};

std::vector<Expected> expected_for(int r) {
    std::vector<int> tp{r / 2 * 2, r / 2 * 2 + 1}, dp{r % 2, r % 2 + 2};
    std::vector<Expected> e = {
        {"all_reduce", "tp", tp, 4000, Payload::act, 0, Phase::fwd, 0, -1},           // count*4
        {"all_gather", "dp", dp, 80, Payload::param, 1, Phase::fwd, 1, -1},           // 10*2 ranks*4
        {"reduce_scatter", "dp", dp, 256, Payload::grad, 1, Phase::bwd, 1, -1},       // 64*2 ranks*2 (bf16)
        {"all_to_all", "tp", tp, 2000, Payload::act, 2, Phase::fwd, 0, -1},           // 250*2 ranks*4
        {"broadcast", "tp", tp, 12, Payload::scalar, -1, Phase::step, -1, -1},        // 3*4
    };
    if (r == 0) e.push_back({"send", "pp", {0, 2}, 20, Payload::act_grad, 3, Phase::bwd, 0, 2});
    if (r == 2) e.push_back({"recv", "pp", {0, 2}, 20, Payload::act_grad, 3, Phase::bwd, 0, 0});
    e.push_back({"barrier", "world", {0, 1, 2, 3}, 0, Payload::scalar, -1, Phase::step, -1, -1});
    return e;
}

void require_collectives(const std::vector<TraceEvent>& events, int r) {
    std::vector<const TraceEvent*> got;
    for (const auto& ev : events)
        if (ev.kind == TraceEvent::Kind::collective) got.push_back(&ev);
    auto want = expected_for(r);
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) {
        INFO("rank " << r << " collective " << i << " (" << want[i].op << ")");
        const TraceEvent& ev = *got[i];
        REQUIRE(ev.rank == r);
        REQUIRE(ev.tid == kCommLane);
        REQUIRE(ev.cat == "comm");
        REQUIRE(ev.name == want[i].op);
        REQUIRE(ev.axis == want[i].axis);
        REQUIRE(ev.group == want[i].group);
        REQUIRE(ev.bytes == want[i].bytes);
        REQUIRE(ev.label.payload == want[i].payload);
        REQUIRE(ev.label.layer == want[i].layer);
        REQUIRE(ev.label.phase == want[i].phase);
        REQUIRE(ev.label.microbatch == want[i].microbatch);
        REQUIRE(ev.label.step == 7);
        REQUIRE(ev.peer == want[i].peer);
        REQUIRE(ev.dur_us >= 0);
        REQUIRE(ev.gpu_us == -1);  // the threads backend has no device time (and the file no gpu_us)
        if (i) REQUIRE(ev.ts_us >= got[i - 1]->ts_us + got[i - 1]->dur_us);  // one after another
    }
}

}  // namespace

TEST_CASE("a scripted run records exactly the expected collectives", "[trace]") {
    auto tracers = make_tracers(4, 0);
    CommOptions opts{10, {}};
    for (auto& t : tracers) opts.tracers.push_back(t.get());
    run_threads(4, script, opts);
    for (int r = 0; r < 4; ++r) {
        auto events = tracers[r]->events();
        require_collectives(events, r);
        // and one compute span, around the all_reduce
        int spans = 0;
        for (const auto& ev : events)
            if (ev.kind == TraceEvent::Kind::span) {
                ++spans;
                REQUIRE(ev.name == "h.0 forward");
                REQUIRE(ev.cat == "fwd");
                REQUIRE(ev.tid == kComputeLane);
                REQUIRE(ev.args == json{{"layer", 0}});
                REQUIRE(ev.dur_us >= events.front().dur_us);
            }
        REQUIRE(spans == 1);
    }
}

TEST_CASE("the Chrome trace reads back as written, with lane names and otherData", "[trace]") {
    auto tracers = make_tracers(4, 0);
    CommOptions opts{10, {}};
    for (auto& t : tracers) opts.tracers.push_back(t.get());
    std::vector<Ledger> ledgers(4);
    run_threads(4, [&](Comm& comm) {
        Ledger& ledger = ledgers[comm.rank()];
        comm.tracer()->attach_ledger(ledger);
        ledger.alloc(Mem::params, 1000);
        ledger.alloc(Mem::grads, 1000);
        script(comm);
        ledger.release(Mem::grads, 1000);
        comm.tracer()->detach_ledger(ledger);
    }, opts);

    const std::string path = temp_path("sub/dir/run.json");  // the directories are created
    const json other = {{"config", {{"tp", 2}, {"dp", 2}}}, {"gbs", 8}};
    write_chrome_trace(path, tracers, other);
    REQUIRE(!std::filesystem::exists(path + ".tmp"));

    // The raw JSON is what Perfetto needs.
    json j = json::parse(std::ifstream(path));
    REQUIRE(j["displayTimeUnit"] == "ms");
    REQUIRE(j["otherData"] == other);
    int process_names = 0, comm_lanes = 0;
    for (const auto& e : j["traceEvents"]) {
        if (e["ph"] == "M" && e["name"] == "process_name") {
            REQUIRE(e["args"]["name"] == "rank " + std::to_string(e["pid"].get<int>()));
            ++process_names;
        }
        if (e["ph"] == "M" && e["name"] == "thread_name" && e["tid"] == 1) {
            REQUIRE(e["args"]["name"] == "comm");
            ++comm_lanes;
        }
        if (e["ph"] == "X" && e["cat"] == "comm") REQUIRE(e["tid"] == 1);
        if (e["ph"] == "C") {
            REQUIRE(e["name"] == "memory");
            REQUIRE(e["args"].contains("params"));
            REQUIRE(e["args"].contains("workspace"));
        }
    }
    REQUIRE(process_names == 4);
    REQUIRE(comm_lanes == 4);

    // read_chrome_trace gives back the same events.
    Trace t = read_chrome_trace(path);
    REQUIRE(t.world() == 4);
    REQUIRE(t.other_data == other);
    for (int r = 0; r < 4; ++r) {
        std::vector<TraceEvent> mine;
        for (const auto& ev : t.events)
            if (ev.rank == r) mine.push_back(ev);
        require_collectives(mine, r);
        std::vector<uint64_t> params, grads;
        for (const auto& ev : mine)
            if (ev.kind == TraceEvent::Kind::memory) {
                params.push_back(ev.mem[int(Mem::params)]);
                grads.push_back(ev.mem[int(Mem::grads)]);
            }
        // attach (0), params (1000), grads (1000), grads released
        REQUIRE(params == std::vector<uint64_t>{0, 1000, 1000, 1000});
        REQUIRE(grads == std::vector<uint64_t>{0, 0, 1000, 0});
    }
}

TEST_CASE("gpu_us is written only where measured, and reads back as written", "[trace]") {
    // What Comm records under the nccl backend (an all_reduce timed with CUDA
    // events) and under any backend for a call without device time (send).
    Tracer tracer(0, TraceClock::now(), 0);
    TraceEvent timed;
    timed.kind = TraceEvent::Kind::collective;
    timed.tid = kCommLane;
    timed.name = "all_reduce";
    timed.cat = "comm";
    timed.ts_us = 10;
    timed.dur_us = 50;
    timed.axis = "dp";
    timed.group = {0, 1};
    timed.bytes = 4000;
    timed.count = 1000;
    timed.dtype = "fp32";
    timed.label = {Payload::grad, -1, Phase::bwd, -1, 3};
    timed.gpu_us = 12.345;  // a multiple of 1 ns: the writer's rounding keeps it exact
    TraceEvent untimed = timed;
    untimed.name = "send";
    untimed.ts_us = 70;
    untimed.peer = 1;
    untimed.gpu_us = -1;
    tracer.record(timed);
    tracer.record(untimed);
    const std::string path = temp_path("gpu_us.json");
    write_chrome_trace(path, std::vector<const Tracer*>{&tracer});

    const json file = json::parse(std::ifstream(path));
    std::vector<json> raw;  // the collectives' args, as in the file
    for (const auto& e : file["traceEvents"])
        if (e["ph"] == "X") raw.push_back(e["args"]);
    REQUIRE(raw.size() == 2);
    REQUIRE(raw[0]["gpu_us"] == 12.345);
    REQUIRE(!raw[1].contains("gpu_us"));  // no key at all: traces of other backends are unchanged

    Trace t = read_chrome_trace(path);
    REQUIRE(t.events.size() == 2);
    REQUIRE(t.events[0].name == "all_reduce");
    REQUIRE(t.events[0].gpu_us == 12.345);
    REQUIRE(t.events[0].dur_us == 50);
    REQUIRE(t.events[1].name == "send");
    REQUIRE(t.events[1].gpu_us == -1);
}

namespace {

// A collective of rank @p rank in step @p step, [ts, ts + dur], with the overlap fields as given.
TraceEvent call(int rank, int step, double ts, double dur, double issued = -1, double exposed = -1) {
    TraceEvent e;
    e.kind = TraceEvent::Kind::collective;
    e.tid = kCommLane;
    e.name = "all_gather";
    e.cat = "comm";
    e.rank = rank;
    e.ts_us = ts;
    e.dur_us = dur;
    e.axis = "dp";
    e.group = {0, 1};
    e.bytes = 800;
    e.label = {Payload::param, 0, Phase::fwd, 0, step};
    e.issued_us = issued;
    e.exposed_us = exposed;
    return e;
}

}  // namespace

TEST_CASE("issued_us and exposed_us are written only where recorded, and read back as written", "[trace][overlap]") {
    Tracer tracer(0, TraceClock::now(), 0);
    tracer.record(call(0, 1, 100, 50, /*issued=*/20.125, /*exposed=*/7.5));  // asynchronous, partly hidden
    tracer.record(call(0, 1, 200, 30, /*issued=*/180, /*exposed=*/0));       // hid whole: 0 is written
    tracer.record(call(0, 1, 300, 10));                                       // blocking: neither key
    const std::string path = temp_path("overlap.json");
    write_chrome_trace(path, std::vector<const Tracer*>{&tracer});

    const json file = json::parse(std::ifstream(path));
    std::vector<json> raw;
    for (const auto& e : file["traceEvents"])
        if (e["ph"] == "X") raw.push_back(e["args"]);
    REQUIRE(raw.size() == 3);
    REQUIRE(raw[0]["issued_us"] == 20.125);
    REQUIRE(raw[0]["exposed_us"] == 7.5);
    REQUIRE(raw[1]["exposed_us"] == 0);
    REQUIRE(!raw[2].contains("issued_us"));  // a blocking call's event is as it always was
    REQUIRE(!raw[2].contains("exposed_us"));

    const Trace t = read_chrome_trace(path);
    REQUIRE(t.events.size() == 3);
    REQUIRE(t.events[0].issued_us == 20.125);
    REQUIRE(t.events[0].exposed_us == 7.5);
    REQUIRE(t.events[1].issued_us == 180);
    REQUIRE(t.events[1].exposed_us == 0);
    REQUIRE(t.events[2].issued_us == -1);  // absent: -1, which the readers take as ts and dur
    REQUIRE(t.events[2].exposed_us == -1);
    REQUIRE(issued_time_us(t.events[2]) == 300);
    REQUIRE(exposed_time_us(t.events[2]) == 10);
    REQUIRE(has_overlap_fields(t.events[0]));
    REQUIRE(!has_overlap_fields(t.events[2]));
    REQUIRE(trace_problem(t, path, 4096).empty());
}

TEST_CASE("overlap fields out of range: refused from a file, clamped in memory", "[trace][overlap]") {
    const std::string path = temp_path("overlap_bad.json");
    const std::string args =
        R"("axis":"dp","group":[0,1],"bytes":8,"payload":"grad","layer":0,"phase":"bwd","microbatch":0,"step":1)";
    auto read_text = [&](const std::string& extra) {
        write_text(path, R"({"traceEvents":[{"name":"all_reduce","cat":"comm","ph":"X","pid":0,"tid":1,"ts":10,)"
                         R"("dur":4,"args":{)" + args + extra + "}}]}");
        return error_of([&] { read_chrome_trace(path); });
    };
    REQUIRE(read_text("") == "(no error)");  // an older trace: no keys at all
    REQUIRE(read_text(R"(,"exposed_us":-3)") ==
            path + ": traceEvents[0].args.exposed_us: expected a number >= 0 (microseconds), got -3");
    REQUIRE(read_text(R"(,"issued_us":"early")") ==
            path + ": traceEvents[0].args.issued_us: expected a number >= 0 (microseconds), got \"early\"");
    // Well-typed but inconsistent (issued after the start, exposed longer than the call): read,
    // then clamped by every reader, so no total can pass the call's own time.
    REQUIRE(read_text(R"(,"issued_us":99,"exposed_us":1000)") == "(no error)");
    const TraceEvent e = read_chrome_trace(path).events[0];
    REQUIRE(issued_time_us(e) == 10);
    REQUIRE(exposed_time_us(e) == 4);
    // In memory (not from a file) a NaN is possible: trace_problem names it, the clamps survive it.
    TraceEvent nan = call(0, 1, 10, 4, -1, std::nan(""));
    REQUIRE(exposed_time_us(nan) == 4);
    Trace t;
    t.events = {nan};
    REQUIRE(trace_problem(t, "mem", 4096).find("issued_us or exposed_us is neither -1") != std::string::npos);
}

TEST_CASE("overlap_by_step: comm is a union, exposed is clipped to it, hidden = 1 - exposed / comm",
          "[trace][overlap]") {
    const std::vector<TraceEvent> events = {
        call(0, -1, 0, 10),                   // setup broadcast-like call, blocking: exposed whole
        call(0, 1, 100, 40, 60, 10),          // [100, 140], issued at 60, blocked its last 10 us
        call(0, 1, 120, 40, 110, 5),          // [120, 160] in flight with the first: union [100, 160] = 60
        call(0, 1, 200, 20),                  // blocking: 20 exposed; union 60 + 20 = 80, exposed 35
        call(0, 2, 300, 10, 250, 500),        // exposed past dur: clamped to 10, so 0% hidden
        call(1, 1, 100, 50, 0, 0),            // rank 1 hid its call whole
        call(1, 1, 110, 10, 100, 0),          // inside the first: adds nothing to the union
    };
    const std::vector<OverlapRow> rows = overlap_by_step(events);
    REQUIRE(rows.size() == 6);  // rank 0: setup, 1, 2, total; rank 1: 1, total
    auto check = [](const OverlapRow& r, int rank, int step, uint64_t calls, uint64_t async, double comm,
                    double exposed) {
        INFO("rank " << rank << " step " << step);
        REQUIRE(r.rank == rank);
        REQUIRE(r.step == step);
        REQUIRE(r.calls == calls);
        REQUIRE(r.async_calls == async);
        REQUIRE(r.comm_us == Approx(comm));
        REQUIRE(r.exposed_us == Approx(exposed));
    };
    check(rows[0], 0, kOverlapSetup, 1, 0, 10, 10);
    check(rows[1], 0, 1, 3, 2, 80, 35);
    REQUIRE(rows[1].hidden_fraction() == Approx(1.0 - 35.0 / 80.0));
    check(rows[2], 0, 2, 1, 1, 10, 10);
    REQUIRE(rows[2].hidden_fraction() == Approx(0.0));
    check(rows[3], 0, kOverlapTotal, 5, 3, 100, 55);  // its own union: 10 + 80 + 10
    check(rows[4], 1, 1, 2, 2, 50, 0);
    REQUIRE(rows[4].hidden_fraction() == Approx(1.0));
    check(rows[5], 1, kOverlapTotal, 2, 2, 50, 0);

    // Two blocking calls that overlap (a clock that made them look so): each says it was blocked
    // its whole dur, 40 + 40 = 80, but the rank cannot be blocked longer than the union, 60.
    const auto clipped = overlap_by_step({call(0, 1, 0, 40), call(0, 1, 20, 40)});
    REQUIRE(clipped[0].comm_us == Approx(60));
    REQUIRE(clipped[0].exposed_us == Approx(60));
    REQUIRE(clipped[0].hidden_fraction() == Approx(0.0));
    REQUIRE(overlap_by_step({}).empty());
}

TEST_CASE("trace summary prints the overlap table, and the emulated links above every table",
          "[trace][overlap]") {
    Trace t;
    t.events = {call(0, 1, 100, 40, 60, 10), call(0, 1, 200, 20)};
    std::string text = format_trace_summary(summarize_trace(t), "t.json");
    REQUIRE(text.find("emulated") == std::string::npos);
    const size_t overlap = text.find("\noverlap\n");
    REQUIRE(overlap != std::string::npos);
    REQUIRE(text.find("0      1              2        1        0.060         0.030     50.0%") != std::string::npos);
    REQUIRE(text.find("0      total          2        1        0.060         0.030     50.0%") != std::string::npos);

    t.other_data["emulated_links"] = "emulated links (not measured): 1 GB/s, 6 us on every link";
    text = format_trace_summary(summarize_trace(t), "t.json");
    const size_t note = text.find("emulated links (not measured): 1 GB/s, 6 us on every link\n");
    REQUIRE(note != std::string::npos);
    REQUIRE(note < text.find("axis "));  // above the first table
    t.other_data["emulated_links"] = 3;  // not a string: not a note
    REQUIRE(summarize_trace(t).emulated_links.empty());
    // --rank picks the table's rows too.
    t.events.push_back(call(1, 1, 0, 5));
    TraceFilter only1;
    only1.rank = 1;
    const TraceSummary s = summarize_trace(t, only1);
    REQUIRE(s.overlap.size() == 2);
    REQUIRE(s.overlap[0].rank == 1);
}

// Audit 2, item 6: under --emulate the bandwidth columns printed 0.000 (bytes over time-scaled time), and
// the prediction's links were called "defaults measured on the development machine".
TEST_CASE("trace summary under time-scaled emulated links: the cluster's bandwidths, the prediction's links named",
          "[trace][overlap][prediction]") {
    Trace t;
    t.events = {call(0, 1, 100, 800)};  // 800 B in 800 us: 0.001 GB/s as the run timed it
    const std::string plain = format_trace_summary(summarize_trace(t), "t.json");
    REQUIRE(plain.find("0.001         0.001\n") != std::string::npos);
    REQUIRE(plain.find("time-scaled") == std::string::npos);
    // --link: emulated but not scaled; the columns and the text stay as they were.
    t.other_data["emulated_links"] = "emulated links (not measured): 1 GB/s, 6 us on every link";
    REQUIRE(summarize_trace(t).time_scale == 1);
    REQUIRE(format_trace_summary(summarize_trace(t), "t.json").find("algbw and busbw are the emulated") == std::string::npos);
    // --emulate: times are 1000 x the cluster's, so its bandwidth is 1000 x the run's.
    t.other_data["emulated_links"] = "emulated links (not measured): intra 360 GB/s 2 us, inter 40 GB/s 6 us, "
                                     "8 ranks per node, time-scaled x 1000 (h100x8-ib400 on this CPU's 989 GFLOP/s)";
    const TraceSummary s = summarize_trace(t);
    REQUIRE(s.time_scale == 1000);
    REQUIRE(s.rows[0].algbw_gbs(s.time_scale) == Approx(1.0));
    const std::string text = format_trace_summary(s, "t.json");
    REQUIRE(text.find("       0.800         1.000         0.500\n") != std::string::npos);  // time (ms), algbw, busbw
    REQUIRE(text.find("time is the run's, time-scaled x 1000 by --emulate; algbw and busbw are the emulated "
                      "cluster's:\nbytes / (time / 1000)") != std::string::npos);
    // The prediction's links are the emulated ones; only its compute is the preset's defaults.
    t.other_data["steps"] = nlohmann::json::array({{{"ms", 9.0}}});
    t.other_data["prediction"] = {{"time", {{"step_s", 0.009}}},
                                  {"cluster", {{"hw", "cpu-local"}, {"source", "defaults measured on the dev machine"}}}};
    const std::string pred = format_trace_summary(summarize_trace(t), "t.json");
    REQUIRE(pred.find("  the prediction's hardware numbers: its links are the run's emulated links, as the run timed "
                      "them (time-scaled where --emulate scaled them); its compute: defaults measured on the dev "
                      "machine\n") != std::string::npos);
    REQUIRE(prediction_hardware_text(step_time_check(t.other_data), false) == "defaults measured on the dev machine");
    t.other_data["emulated_links"] = "emulated links (not measured): time-scaled x nan";  // no number: no scale
    REQUIRE(summarize_trace(t).time_scale == 1);
    // train writes the factor as a number too (the sentence rounds it): the number wins.
    t.other_data["emulated_time_scale"] = 9254.7;
    REQUIRE(summarize_trace(t).time_scale == 9254.7);
    t.other_data["emulated_time_scale"] = -2;  // nonsense: no scale
    REQUIRE(summarize_trace(t).time_scale == 1);
}

TEST_CASE("trace summary puts the run's step time beside the planner's prediction, and their ratio",
          "[trace][prediction]") {
    Trace t;
    t.events = {call(0, 1, 100, 40)};
    // No measured steps: nothing to compare, nothing printed.
    REQUIRE(step_time_check(t.other_data).steps == 0);
    REQUIRE(format_trace_summary(summarize_trace(t), "t.json").find("step time") == std::string::npos);

    // Step 1 warms up: the median of steps 2-4 (40, 44, 42 ms) is 42 ms; predicted 35 ms.
    t.other_data["steps"] = nlohmann::json::array();
    for (double ms : {90.0, 40.0, 44.0, 42.0}) t.other_data["steps"].push_back({{"ms", ms}, {"tokens_per_s", 1e5 / ms}});
    t.other_data["prediction"] = {{"time", {{"step_s", 0.035}, {"tokens_per_s", 1e5 / 35}}},
                                  {"cluster", {{"hw", "cpu-local"}, {"source", "defaults"}}}};
    const StepTimeCheck c = step_time_check(t.other_data);
    REQUIRE(c.steps == 4);
    REQUIRE(c.first_counted == 2);
    REQUIRE(c.measured_ms == 42.0);
    REQUIRE(c.predicted_ms == Approx(35.0));
    REQUIRE(c.ratio() == Approx(1.2));
    std::string text = format_trace_summary(summarize_trace(t), "t.json");
    const size_t at = text.find("step time of the whole run, measured beside the planner's prediction");
    REQUIRE(at != std::string::npos);
    REQUIRE(at > text.find("\noverlap\n"));  // last
    REQUIRE(text.find("measured        42.00 ms a step") != std::string::npos);
    REQUIRE(text.find("(median of steps 2-4; step 1 warms up)") != std::string::npos);
    REQUIRE(text.find("predicted       35.00 ms a step") != std::string::npos);
    REQUIRE(text.find("(a prediction: plan --hw cpu-local)") != std::string::npos);
    REQUIRE(text.find("measured / predicted = 1.20") != std::string::npos);
    REQUIRE(text.find("the prediction's hardware numbers: defaults") != std::string::npos);
    REQUIRE(text.find("the prediction differs from the run") == std::string::npos);
    // What the planner models otherwise than the run (local SGD as synchronous replicas): said.
    t.other_data["prediction"]["caveat"] = "the replicas sync every 4 steps (local SGD), and ...";
    REQUIRE(step_time_check(t.other_data).caveat == "the replicas sync every 4 steps (local SGD), and ...");
    REQUIRE(format_trace_summary(summarize_trace(t), "t.json")
                .find("the prediction differs from the run: the replicas sync every 4 steps") != std::string::npos);

    // Emulated links: the measured line says so. A run the planner could not model: why.
    t.other_data["emulated_links"] = "emulated links (not measured): 1 GB/s, 6 us on every link";
    REQUIRE(format_trace_summary(summarize_trace(t), "t.json").find("step 1 warms up; on emulated links)") !=
            std::string::npos);
    t.other_data["prediction"] = {{"unavailable", "the planner cannot model this run: PP=2 does not divide L=3"}};
    text = format_trace_summary(summarize_trace(t), "t.json");
    REQUIRE(text.find("predicted  none: the planner cannot model this run: PP=2 does not divide L=3") !=
            std::string::npos);
    REQUIRE(text.find("measured / predicted") == std::string::npos);
    // One step: that step, said so; fields of the wrong type are left out.
    t.other_data["steps"] = nlohmann::json::array({{{"ms", 7.5}, {"tokens_per_s", "fast"}}});
    t.other_data["prediction"] = 3;
    const StepTimeCheck one = step_time_check(t.other_data);
    REQUIRE(one.measured_ms == 7.5);
    REQUIRE(one.measured_tokens_per_s == 0);
    REQUIRE(format_step_time_check(one, false).find("(step 1, the only one)") != std::string::npos);
    // A prediction that is there but unreadable says so (audit 2, item 8: it read "the trace holds no prediction").
    REQUIRE(format_step_time_check(one, false)
                .find("predicted  none: the trace's prediction is malformed: otherData.prediction is 3, not an object\n") !=
            std::string::npos);
    t.other_data["prediction"] = {{"time", {{"step_s", "x"}}}};
    REQUIRE(step_time_check(t.other_data).malformed ==
            "otherData.prediction.time.step_s is \"x\", not a number of seconds > 0");
    t.other_data["prediction"] = {{"cluster", {{"hw", "h100"}}}};
    REQUIRE(step_time_check(t.other_data).malformed == "otherData.prediction has no \"time\"");
    t.other_data.erase("prediction");
    REQUIRE(step_time_check(t.other_data).malformed.empty());
    REQUIRE(format_step_time_check(step_time_check(t.other_data), false).find("the trace holds no prediction") !=
            std::string::npos);
}

// Audit 2, item 5: a run resumed at step 4 traced steps 4-6, and the summary said "steps 2-3; step 1 warms up".
TEST_CASE("the measured step time names the trace's own step numbers: a resumed run's first step warms up",
          "[trace][prediction]") {
    nlohmann::json other;
    other["steps"] = nlohmann::json::array();
    for (int step : {4, 5, 6}) other["steps"].push_back({{"step", step}, {"ms", 10.0 * step}, {"tokens_per_s", 1.0}});
    const StepTimeCheck c = step_time_check(other);
    REQUIRE(c.steps == 3);
    REQUIRE(c.warmup_step == 4);
    REQUIRE(c.first_counted == 5);
    REQUIRE(c.last_counted == 6);
    REQUIRE(c.measured_ms == 55.0);  // the median of steps 5 and 6
    REQUIRE(measured_steps_text(c) == "median of steps 5-6; step 4 warms up");
    REQUIRE(format_step_time_check(c, false).find("(median of steps 5-6; step 4 warms up)\n") != std::string::npos);
    other["steps"] = nlohmann::json::array({{{"step", 7}, {"ms", 3.0}}});
    REQUIRE(measured_steps_text(step_time_check(other)) == "step 7, the only one");
    // Without step numbers (an older trace): their places, from 1.
    other["steps"] = nlohmann::json::array({{{"ms", 3.0}}, {{"ms", 4.0}}, {{"step", "x"}, {"ms", 5.0}}});
    REQUIRE(measured_steps_text(step_time_check(other)) == "median of steps 2-3; step 1 warms up");
}

TEST_CASE("trace summary counts what crosses nodes: a call's moved bytes, all across when its group spans nodes",
          "[trace][nodes]") {
    // 4 ranks, 2 per node: node 0 = {0, 1}, node 1 = {2, 3}.
    REQUIRE_FALSE(group_spans_nodes({0, 1}, 2));
    REQUIRE(group_spans_nodes({0, 1, 2, 3}, 2));
    REQUIRE(group_spans_nodes({1, 2}, 2));
    REQUIRE_FALSE(group_spans_nodes({2, 3}, 2));
    REQUIRE_FALSE(group_spans_nodes({0, 1, 2, 3}, 0));  // no nodes known: nothing crosses
    REQUIRE_FALSE(group_spans_nodes({}, 2));

    auto ev = [](int rank, int step, const char* op, std::vector<int> group, uint64_t bytes, const char* axis) {
        TraceEvent e = call(rank, step, 10.0 * step, 1);
        e.name = op;
        e.group = std::move(group);
        e.bytes = bytes;
        e.axis = axis;
        return e;
    };
    Trace t;
    t.events = {
        ev(0, 0, "broadcast", {0, 1, 2, 3}, 100, "world"),     // setup: factor 1, spans nodes: 100 across
        ev(0, 1, "all_gather", {0, 1}, 800, "hpz"),            // (n-1)/n = 1/2: 400 inside
        ev(0, 1, "all_gather", {0, 1, 2, 3}, 800, "dp_shard"), // 3/4: 600 across (all of it, not 2 of 3 peers)
        ev(0, 1, "all_to_all", {0, 2}, 400, "qgz_cross"),      // 1/2: 200 across (one rank per node)
        ev(0, 1, "all_reduce", {0, 1}, 100, "dp"),             // 2(n-1)/n = 1: 100 inside
        ev(0, 2, "send", {0, 1}, 50, "pp"),                    // factor 1, same node: 50 inside
        ev(1, 2, "recv", {0, 1}, 50, "pp"),                    // the same message on the other side
        ev(1, 2, "send", {1, 2}, 70, "pp"),                    // src and dst on two nodes: 70 across
    };
    REQUIRE(moved_across_nodes(t.events[2], 2) == Approx(600));
    REQUIRE(moved_across_nodes(t.events[1], 2) == 0);
    REQUIRE(moved_across_nodes(t.events[2], 0) == 0);

    // No gpus_per_node in the trace: no such counts, and the tables print as before.
    TraceSummary plain = summarize_trace(t);
    REQUIRE(plain.gpus_per_node == 0);
    REQUIRE(plain.nodes.empty());
    REQUIRE(plain.total.across_bytes == 0);
    std::string text = format_trace_summary(plain, "t.json");
    REQUIRE(text.find("across") == std::string::npos);
    REQUIRE(text.find("crosses nodes") == std::string::npos);

    // The trace's own node size (train writes otherData.gpus_per_node whenever it knows it).
    t.other_data["gpus_per_node"] = 2;
    const TraceSummary s = summarize_trace(t);
    REQUIRE(s.gpus_per_node == 2);
    REQUIRE(s.total.bus_bytes == Approx(100 + 400 + 600 + 200 + 100 + 50 + 50 + 70));
    REQUIRE(s.total.across_bytes == Approx(100 + 600 + 200 + 70));
    // Rows: per rank, setup first, the steps, the total last (as the overlap table).
    REQUIRE(s.nodes.size() == 6);
    auto check = [](const NodeTrafficRow& r, int rank, int step, uint64_t calls, double inside, double across) {
        INFO("rank " << rank << " step " << step);
        REQUIRE(r.rank == rank);
        REQUIRE(r.step == step);
        REQUIRE(r.calls == calls);
        REQUIRE(r.inside == Approx(inside));
        REQUIRE(r.across == Approx(across));
    };
    check(s.nodes[0], 0, kOverlapSetup, 1, 0, 100);
    check(s.nodes[1], 0, 1, 4, 400 + 100, 600 + 200);
    check(s.nodes[2], 0, 2, 1, 50, 0);
    check(s.nodes[3], 0, kOverlapTotal, 6, 550, 900);
    check(s.nodes[4], 1, 2, 2, 50, 70);  // the recv counts as the send does, like the moved column
    check(s.nodes[5], 1, kOverlapTotal, 2, 50, 70);
    text = format_trace_summary(s, "t.json", /*exact=*/true);
    REQUIRE(text.find("  across nodes\n") != std::string::npos);  // the bandwidth table's last column
    REQUIRE(text.find("dp_shard   all_gather      param            1          800          600") !=
            std::string::npos);
    REQUIRE(text.find("crosses nodes (2 ranks per node") != std::string::npos);
    REQUIRE(text.find("0      1              4            500            800    61.5%") != std::string::npos);
    REQUIRE(text.find("\ncrosses nodes") < text.find("\noverlap\n"));
    // Audit 2, item 7: the note said "as two-tier links time them" of a run that had none (--gpus-per-node alone).
    REQUIRE(text.find("as two-tier links time them") == std::string::npos);
    REQUIRE(text.find("the rule\ntwo-tier emulated links time calls by; this run had none.") != std::string::npos);
    t.other_data["emulated_links"] = "emulated links (not measured): intra 100 GB/s 1 us, inter 10 GB/s 5 us, 2 ranks per node";
    text = format_trace_summary(summarize_trace(t), "t.json");
    REQUIRE(text.find("on, as two-tier links time them (a ring over two nodes") != std::string::npos);
    REQUIRE(text.find("this run had none") == std::string::npos);
    t.other_data.erase("emulated_links");

    // --gpus-per-node N overrides the trace's: with 4 per node every group lies in one node.
    const TraceSummary one_node = summarize_trace(t, {}, 4);
    REQUIRE(one_node.gpus_per_node == 4);
    REQUIRE(one_node.total.across_bytes == 0);
    // A value that is not a positive integer is no node size.
    for (const json& bad : {json(0), json(-2), json(2.5), json("4")}) {
        t.other_data["gpus_per_node"] = bad;
        REQUIRE(trace_gpus_per_node(t.other_data) == 0);
    }
}

TEST_CASE("the memory throttle keeps the peak of each window and the last sample", "[trace]") {
    Ledger ledger;
    Tracer tracer(0, TraceClock::now(), /*memory_interval_us=*/1e9);  // one window for the whole test
    tracer.attach_ledger(ledger);      // written at once: the first sample
    ledger.alloc(Mem::acts, 100);      // held
    ledger.alloc(Mem::acts, 50);       // held: the peak, 150
    ledger.release(Mem::acts, 150);    // held
    ledger.alloc(Mem::workspace, 10);  // held: the last
    std::vector<uint64_t> totals;
    for (const auto& ev : tracer.events()) {
        uint64_t total = 0;
        for (auto b : ev.mem) total += b;
        totals.push_back(total);
    }
    REQUIRE(totals == std::vector<uint64_t>{0, 150, 10});

    Tracer every(0, TraceClock::now(), 0);
    Ledger l2;
    every.attach_ledger(l2);
    l2.alloc(Mem::acts, 100);
    l2.release(Mem::acts, 100);
    REQUIRE(every.events().size() == 3);
}

namespace {

// A collective as Comm records one, distinct in every field for index i.
TraceEvent collective_event(int i, int group_size) {
    TraceEvent ev;
    ev.kind = TraceEvent::Kind::collective;
    ev.tid = kCommLane;
    ev.name = i % 2 ? "reduce_scatter" : "all_gather";
    ev.cat = "comm";
    ev.ts_us = 0.1 * i + 1.0 / 3;
    ev.dur_us = 2.5e-3 * i;
    ev.axis = "dp_shard_sp";
    for (int r = 0; r < group_size; ++r) ev.group.push_back((r * 7 + i) % 4096);
    ev.bytes = (uint64_t(1) << 40) + uint64_t(i);
    ev.count = uint64_t(i) * 3;
    ev.dtype = "uint8";
    ev.label = Label{Payload::grad, i % 12, Phase::bwd, i % 5, i};
    ev.peer = i % 3 - 1;
    ev.gpu_us = i % 4 ? -1 : 1e-7 * i;
    ev.issued_us = ev.ts_us - 0.5;
    ev.exposed_us = 0.0;
    return ev;
}

}  // namespace

TEST_CASE("the Tracer gives back every field of every event as recorded, across its log's blocks", "[trace]") {
    Tracer tracer(6, TraceClock::now(), 0);
    std::vector<TraceEvent> expected;
    auto record = [&](TraceEvent ev) {
        ev.rank = 6;  // the tracer's rank, whatever the event said
        expected.push_back(ev);
        ev.rank = -3;
        tracer.record(std::move(ev));
    };
    TraceEvent span;
    span.name = std::string(40, 'n') + " (a name past the string's own buffer)";
    span.cat = "fwd";
    span.ts_us = 12.75;
    span.dur_us = 1e6;
    span.file_index = 17;
    span.args = json{{"layer", 3}, {"x", 0.1}, {"big", 18446744073709551615ull}, {"neg", -5},
                     {"nested", {{"a", json::array({1, 2.5, "s", nullptr, true})}}}, {"s", "text \"quoted\""}};
    record(span);
    span.args = json{{"nan", std::nan("")}, {"inf", -HUGE_VAL}, {"not utf-8", "\xff\xfe"}};  // as given: no throw
    record(span);
    span.args = json::object();  // an empty object is kept, and is not null
    record(span);
    span.args = nullptr;
    span.name.clear();  // empty strings too
    span.cat.clear();
    record(span);
    TraceEvent mem;
    mem.kind = TraceEvent::Kind::memory;
    mem.name = mem.cat = "memory";
    for (int c = 0; c < kMemCategories; ++c) mem.mem[size_t(c)] = (uint64_t(1) << 50) + uint64_t(c);
    record(mem);
    // Enough events of 64-rank groups (some 450 bytes each) for several 1 MiB blocks.
    for (int i = 0; i < 12000; ++i) record(collective_event(i, i % 3 ? 64 : 1));

    std::vector<TraceEvent> got = tracer.events();
    REQUIRE(got.size() == expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
        INFO("event " << i);
        test::require_same_event(got[i], expected[i]);
    }
    // Read twice, the same; cleared, none.
    REQUIRE(tracer.events().size() == expected.size());
    tracer.clear();
    REQUIRE(tracer.events().empty());
    record(mem);
    REQUIRE(tracer.events().size() == 1);
}

#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
TEST_CASE("recording keeps nothing on the malloc heap, where the engine's tensors live", "[trace]") {
    // event_log.h: events kept on the heap, one by one, fill the holes freed tensors leave, and
    // the heap grows step after step (320 MB -> 1.06 GB for `train --model small --ranks 8 --zero 3
    // --steps 20 --trace`). Here 20,000 collectives of 64-rank groups and spans with args are
    // recorded; the heap's bytes in use may move by what the log's block list and malloc's own
    // caches of freed blocks hold, a few KiB, not by any part of an event: a std::vector of
    // TraceEvents would keep 20,000 x 336 bytes, and even 4 bytes an event would be 80,000.
    Tracer tracer(0, TraceClock::now(), 0);
    auto some = [&](int n, int from) {
        for (int i = from; i < from + n; ++i) {
            tracer.record(collective_event(i, 64));
            ScopedSpan s(&tracer, "forward", "fwd", json{{"layer", i % 12}, {"microbatch", i % 4}});
        }
    };
    some(200, 0);  // the first block, the block list, malloc's caches
    const size_t before = mallinfo2().uordblks;
    some(20000, 200);
    const size_t after = mallinfo2().uordblks;
    INFO("heap in use before " << before << " B, after " << after << " B");
    REQUIRE(after <= before + 64 * 1024);  // 64 KiB: under 4 bytes an event (the bound above)
    REQUIRE(tracer.events().size() == 2 * 20200);
}
#endif

TEST_CASE("tracing off records nothing, and a null span is free", "[trace]") {
    std::vector<int> traced(2, -1);  // rank threads must not call Catch2's REQUIRE
    run_threads(2, [&](Comm& comm) {
        traced[comm.rank()] = comm.tracer() != nullptr;
        ScopedSpan span(nullptr, "nothing");
        span.set_arg("x", 1);
        float x = 1;
        comm.all_reduce(&x, 1, comm.world_group(), ReduceOp::sum, {});
    });
    REQUIRE(traced == std::vector<int>{0, 0});
}

TEST_CASE("bytes and bus bandwidth factors follow nccl-tests", "[trace]") {
    REQUIRE(collective_bytes("all_reduce", 1000, 4, 8) == 4000);
    REQUIRE(collective_bytes("all_gather", 1000, 4, 8) == 32000);
    REQUIRE(collective_bytes("reduce_scatter", 1000, 2, 8) == 16000);
    REQUIRE(collective_bytes("all_to_all", 1000, 4, 8) == 32000);
    REQUIRE(collective_bytes("broadcast", 1000, 4, 8) == 4000);
    REQUIRE(collective_bytes("barrier", 0, 4, 8) == 0);
    REQUIRE(busbw_factor("all_reduce", 8) == Approx(2.0 * 7 / 8));
    REQUIRE(busbw_factor("all_gather", 8) == Approx(7.0 / 8));
    REQUIRE(busbw_factor("broadcast", 8) == 1.0);
    REQUIRE(busbw_factor("all_reduce", 1) == 0.0);
}

TEST_CASE("a corrupt trace is refused with the file, event and field", "[trace]") {
    const std::string path = temp_path("corrupt.json");
    auto read_text = [&](const std::string& text) {
        write_text(path, text);
        return error_of([&] { read_chrome_trace(path); });
    };
    const std::string ok_args =
        R"("axis":"tp","group":[0,1],"bytes":4000,"payload":"grad","layer":0,"phase":"bwd","microbatch":0,"step":1)";
    auto collective = [&](const std::string& args) {
        return R"({"traceEvents":[{"ph":"M","name":"process_name","pid":0,"args":{"name":"rank 0"}},)"
               R"({"name":"all_reduce","cat":"comm","ph":"X","pid":0,"tid":1,"ts":1,"dur":2,"args":{)" +
               args + "}}]}";
    };
    REQUIRE(read_text(collective(ok_args)) == "(no error)");

    std::string m = read_text("{\"traceEvents\": [");
    REQUIRE(m.rfind(path + ": not a JSON file", 0) == 0);
    REQUIRE(read_text("[1, 2]") == path + ": expected a JSON object {\"traceEvents\": [...]}, got a JSON array");
    REQUIRE(read_text("{\"events\": []}").find(path + ": no \"traceEvents\" field") == 0);
    REQUIRE(read_text("{\"traceEvents\": {}}") == path + ": \"traceEvents\" must be an array, got a JSON object");
    REQUIRE(read_text(R"({"traceEvents": [3]})") == path + ": traceEvents[0]: expected an event object, got a JSON number");

    std::string bad_bytes = ok_args;
    bad_bytes.replace(bad_bytes.find("4000"), 4, "\"4 kB\"");
    REQUIRE(read_text(collective(bad_bytes)) ==
            path + ": traceEvents[1].args.bytes: expected an unsigned integer, got \"4 kB\"");
    std::string bad_payload = ok_args;
    bad_payload.replace(bad_payload.find("grad"), 4, "gradient");
    REQUIRE(read_text(collective(bad_payload)).find(path + ": traceEvents[1].args.payload: unknown payload \"gradient\"") == 0);
    std::string bad_group = ok_args;
    bad_group.replace(bad_group.find("[0,1]"), 5, "[0,\"x\"]");
    REQUIRE(read_text(collective(bad_group)) ==
            path + ": traceEvents[1].args.group[1]: expected an integer rank from 0 to 2^31 - 1, got \"x\"");
    // Audit 2, item 2: ints past 2^31 were cast first, so 2^32 + 3 read as rank 3. Now the
    // 64-bit value is checked against the field's range, and the field is named.
    auto with = [&](const std::string& from, const std::string& to) {
        std::string a = ok_args;
        a.replace(a.find(from), from.size(), to);
        return read_text(collective(a));
    };
    const std::string rank_range = "expected an integer rank from 0 to 2^31 - 1, got ";
    const std::string label_range = "expected -1 (none) or an integer from 0 to 2^31 - 1, got ";
    REQUIRE(with("[0,1]", "[0,4294967297]") == path + ": traceEvents[1].args.group[1]: " + rank_range + "4294967297");
    REQUIRE(with("[0,1]", "[0,-1]") == path + ": traceEvents[1].args.group[1]: " + rank_range + "-1");
    REQUIRE(with("\"layer\":0", "\"layer\":-1099511627776") ==
            path + ": traceEvents[1].args.layer: " + label_range + "-1099511627776");
    REQUIRE(with("\"microbatch\":0", "\"microbatch\":-2") == path + ": traceEvents[1].args.microbatch: " + label_range + "-2");
    REQUIRE(with("\"step\":1", "\"step\":4294967298") == path + ": traceEvents[1].args.step: " + label_range + "4294967298");
    REQUIRE(with("\"step\":1", "\"step\":18446744073709551615") ==
            path + ": traceEvents[1].args.step: " + label_range + "18446744073709551615");
    REQUIRE(with("\"step\":1", "\"step\":2147483647") == "(no error)");  // the largest int is a step
    REQUIRE(read_text(collective(ok_args + R"(,"peer":2147483648)")) ==
            path + ": traceEvents[1].args.peer: " + rank_range + "2147483648");
    REQUIRE(read_text(R"({"traceEvents":[{"ph":"X","name":"a","pid":4294967299,"tid":0,"ts":1,"dur":1}]})") ==
            path + ": traceEvents[0].pid: " + rank_range + "4294967299");
    REQUIRE(read_text(R"({"traceEvents":[{"ph":"X","name":"a","pid":0,"tid":4294967297,"ts":1,"dur":1}]})") ==
            path + ": traceEvents[0].tid: expected an integer from -2^31 to 2^31 - 1, got 4294967297");
    // A span's "step" argument that is no int is no step (it threw a JSON type error in trace summary).
    for (const char* step : {"\"x\"", "4294967298", "-2"}) {
        const Trace t = parse_chrome_trace(std::string(R"({"traceEvents":[{"ph":"X","name":"a","pid":0,"tid":0,"ts":1,"dur":1,"args":{"step":)") +
                                           step + "}}]}");
        REQUIRE(event_step(t.events[0]) == -1);
        REQUIRE(summarize_trace(t).spans == 1);
    }
    REQUIRE(read_text(collective(ok_args + R"(,"gpu_us":0)")) == "(no error)");  // 0 is a time (count 0 is fast)
    REQUIRE(read_text(collective(ok_args + R"(,"gpu_us":-3.5)")) ==
            path + ": traceEvents[1].args.gpu_us: expected a number >= 0 (microseconds), got -3.5");
    REQUIRE(read_text(collective(ok_args + R"(,"gpu_us":"fast")")) ==
            path + ": traceEvents[1].args.gpu_us: expected a number >= 0 (microseconds), got \"fast\"");
    REQUIRE(read_text(collective(ok_args + R"(,"gpu_us":null)")) ==
            path + ": traceEvents[1].args.gpu_us: expected a number >= 0 (microseconds), got null");
    REQUIRE(read_text(R"({"traceEvents":[{"ph":"X","name":"a","pid":0,"tid":0,"ts":"soon","dur":1}]})") ==
            path + ": traceEvents[0].ts: expected a number, got \"soon\"");
    REQUIRE(read_text(R"({"traceEvents":[{"ph":"X","name":"a","tid":0,"ts":1,"dur":1}]})") ==
            path + ": traceEvents[0]: missing field \"pid\"");
    REQUIRE(error_of([&] { read_chrome_trace(temp_path("no-such-file.json")); })
                .rfind("cannot open the trace " + temp_path("no-such-file.json"), 0) == 0);
}

TEST_CASE("a trace says its format version; a newer one is refused, none is read as before", "[trace]") {
    Tracer tracer(0, TraceClock::now(), 0);
    tracer.record(call(0, 1, 100, 50));
    const std::string path = temp_path("versioned.json");
    write_chrome_trace(path, std::vector<const Tracer*>{&tracer}, json{{"config", {{"dp", 2}}}});

    // Written: top-level keys, last, so otherData is the run's alone (trace_io.cpp says why last).
    std::ifstream is(path);
    const std::string text((std::istreambuf_iterator<char>(is)), std::istreambuf_iterator<char>());
    const std::string tail = ",\n\"format\":\"shardscope-trace\",\"format_version\":" +
                             std::to_string(kTraceFormatVersion) + "}\n";
    REQUIRE(text.size() > tail.size());
    REQUIRE(text.substr(text.size() - tail.size()) == tail);
    const json file = json::parse(text);
    REQUIRE(file["format"] == kTraceFormat);
    REQUIRE(file["format_version"] == kTraceFormatVersion);
    REQUIRE(file["otherData"] == json{{"config", {{"dp", 2}}}});
    const Trace t = read_chrome_trace(path);
    REQUIRE(t.format_version == kTraceFormatVersion);
    REQUIRE(t.events.size() == 1);

    // The same file with another version, or none.
    const std::string body = text.substr(0, text.size() - tail.size());
    auto read_with = [&](const std::string& keys) {
        write_text(path, body + keys + "}\n");
        return error_of([&] { read_chrome_trace(path); });
    };
    const std::string newer = std::to_string(kTraceFormatVersion + 1);
    REQUIRE(read_with(R"(,"format":"shardscope-trace","format_version":)" + newer) ==
            path + ": format_version " + newer + ", but this shardscope reads format_version " +
                std::to_string(kTraceFormatVersion) + " and older: written by a newer shardscope; read it with that "
                "version, or write it again with this one (`shardscope train --trace FILE`)");
    // Refused before any event is read: a newer format may use the same fields otherwise.
    write_text(path, R"({"format_version":)" + newer +
                         R"(,"format":"shardscope-trace","traceEvents":[{"ph":"X","pid":"new"}]})");
    REQUIRE_THAT(error_of([&] { read_chrome_trace(path); }),
                 Catch::Matchers::StartsWith(path + ": format_version " + newer + ","));
    const std::string ours = R"(,"format":"shardscope-trace")";
    REQUIRE_THAT(read_with(ours + R"(,"format_version":18446744073709551615)"),
                 Catch::Matchers::StartsWith(path + ": format_version 18446744073709551615, but this shardscope"));

    // Not a positive integer: refused as any bad field is.
    for (const std::string bad : {"0", "-1", "1.0", "\"1\"", "null", "[1]", "{}", "true"})
        REQUIRE(read_with(ours + R"(,"format_version":)" + bad) ==
                path + ": format_version: expected a positive integer, got " + bad);

    // Another tool's format_version (its "format" another name, or none) is its own: not ours to
    // judge, and the file reads as one without a version.
    for (const std::string format : {std::string(R"(,"format":"perfetto")"), std::string(R"(,"format":7)"),
                                     std::string()})
        for (const std::string version : {newer, std::string("\"x\""), std::string("[2]")}) {
            INFO(format << " " << version);
            REQUIRE(read_with(format + R"(,"format_version":)" + version) == "(no error)");
            REQUIRE(read_chrome_trace(path).format_version == 0);
        }

    // No version (a trace written before the key, or a Chrome trace of another tool): read as before.
    REQUIRE(read_with("") == "(no error)");
    const Trace old = read_chrome_trace(path);
    REQUIRE(old.format_version == 0);
    REQUIRE(old.events.size() == 1);
    REQUIRE(old.other_data == t.other_data);
    const std::string other_tool = R"({"traceEvents":[{"name":"a","ph":"X","pid":0,"ts":1,"dur":1}]})";
    REQUIRE(parse_chrome_trace(other_tool).format_version == 0);
    // The committed traces, all written before versions (the fuzzers' seeds), still read, every check passed.
    for (const char* seed : {"trace/zero3-2ranks.json", "trace/no-other-data.json", "trace/memory-only.json",
                             "trace/async-overlap.json", "trace/gpu-timed.json", "viz_load/pp2-pipeline.json"}) {
        INFO(seed);
        const Trace s = read_checked_trace(std::string(SS_SOURCE_DIR) + "/tests/fuzz/corpus/" + seed);
        REQUIRE(s.format_version == 0);
        REQUIRE(!s.events.empty());
    }
    const std::string seeds = std::string(SS_SOURCE_DIR) + "/tests/fuzz/corpus/trace/";
    REQUIRE(read_checked_trace(seeds + "versioned.json").format_version == 1);
    REQUIRE_THAT(error_of([&] { read_checked_trace(seeds + "newer-version.json"); }),
                 Catch::Matchers::Contains("newer-version.json: format_version 2, but"));
}

TEST_CASE("trace summary adds up bytes and time and applies the busbw factors", "[trace]") {
    // Two all_reduce events of 1 MB in 1 ms on a 4-rank dp group, and one
    // all_gather of 1 MB in 2 ms: algbw 1 GB/s and 0.5 GB/s.
    auto x = [](int pid, const char* op, int bytes, double dur, const char* payload) {
        return std::string(R"({"name":")") + op + R"(","cat":"comm","ph":"X","pid":)" + std::to_string(pid) +
               R"(,"tid":1,"ts":0,"dur":)" + std::to_string(dur) +
               R"(,"args":{"axis":"dp","group":[0,1,2,3],"bytes":)" + std::to_string(bytes) +
               R"(,"payload":")" + payload + R"(","layer":-1,"phase":"bwd","microbatch":-1,"step":0}})";
    };
    Trace t = parse_chrome_trace("{\"traceEvents\":[" + x(0, "all_reduce", 1000000, 1000, "grad") + "," +
                                 x(3, "all_reduce", 1000000, 1000, "grad") + "," +
                                 x(1, "all_gather", 1000000, 2000, "param") + "]}");
    TraceSummary s = summarize_trace(t);
    REQUIRE(s.world == 4);
    REQUIRE(s.collectives == 3);
    REQUIRE(s.rows.size() == 2);
    REQUIRE(s.rows[0].op == "all_reduce");  // all_reduce sorts before all_gather
    REQUIRE(s.rows[0].calls == 2);
    REQUIRE(s.rows[0].bytes == 2000000);
    REQUIRE(s.rows[0].algbw_gbs() == Approx(1.0));
    REQUIRE(s.rows[0].busbw_gbs() == Approx(1.5));  // 2(n-1)/n = 1.5 at n = 4
    REQUIRE(s.rows[1].algbw_gbs() == Approx(0.5));
    REQUIRE(s.rows[1].busbw_gbs() == Approx(0.375));  // (n-1)/n = 0.75
    REQUIRE(s.by_payload.size() == 2);
    REQUIRE(s.total.bytes == 3000000);
    REQUIRE(s.total.time_us == Approx(4000));
    std::string table = format_trace_summary(s, "t.json");
    REQUIRE(table.find("dp         all_reduce      grad             2      1.9 MiB") != std::string::npos);
    REQUIRE(s.gpu_timed == 0);
    REQUIRE(table.find("CUDA events") == std::string::npos);  // no device times, no footnote

    // The same, with one all_reduce timed on the GPU: 1 MB in 0.5 ms there (its
    // dur, 1 ms, also counts the host's part). The summary takes the device time.
    std::string timed = x(0, "all_reduce", 1000000, 1000, "grad");
    timed.replace(timed.find(R"("step":0)"), 8, R"("step":0,"gpu_us":500)");
    Trace tg = parse_chrome_trace("{\"traceEvents\":[" + timed + "," + x(3, "all_reduce", 1000000, 1000, "grad") +
                                  "," + x(1, "all_gather", 1000000, 2000, "param") + "]}");
    TraceSummary sg = summarize_trace(tg);
    REQUIRE(sg.gpu_timed == 1);
    REQUIRE(sg.rows[0].time_us == Approx(1500));  // 500 (gpu_us) + 1000 (dur, not measured)
    REQUIRE(sg.rows[0].algbw_gbs() == Approx(2e6 / 1500 * 1e-3));
    REQUIRE(sg.rows[1].time_us == Approx(2000));
    REQUIRE(sg.total.time_us == Approx(3500));
    REQUIRE(summarize_trace(tg, TraceFilter{3, -1}).gpu_timed == 0);  // rank 3's event has none
    const std::string table_g = format_trace_summary(sg, "t.json");
    REQUIRE(table_g.find("times: CUDA events (device time) where measured (1 of 3 events), else host wall time.\n") !=
            std::string::npos);
    const std::string last = "else host wall time.\n";
    // The last line of the bandwidth tables' notes, just before the overlap table.
    REQUIRE(table_g.rfind(last) + last.size() == table_g.find("\noverlap\n"));
}

// Audit 2, item 3: rows were printed into 256-byte buffers; a 300-digit time or a long path lost the newline.
TEST_CASE("trace summary prints whole lines however long a number or the file's name", "[trace]") {
    Trace t;
    t.events = {call(0, 1, 100, 1e300)};  // in memory: trace_problem refuses it in a file
    const std::string source = std::string(300, 'd') + "/t.json";
    const std::string text = format_trace_summary(summarize_trace(t), source);
    REQUIRE(text.rfind(source + ": 1 ranks, 1 collective events, 0 compute spans\n\n", 0) == 0);
    const size_t row = text.find("\ndp ");
    REQUIRE(row != std::string::npos);
    const std::string line = text.substr(row + 1, text.find('\n', row + 1) - row - 1);
    REQUIRE(line.size() > 300);  // the time, 1e297 ms in %.3f, whole
    REQUIRE(line.substr(line.size() - 5) == "0.000");  // the row ends with busbw, not cut
    const std::string overlap = format_overlap_table(summarize_trace(t).overlap);
    REQUIRE(overlap.find("%\n0      total ") != std::string::npos);  // the step's row ends with its %, then the total's
    REQUIRE(overlap.substr(overlap.size() - 7) == "  0.0%\n");
    REQUIRE(format_largest_calls(largest_calls(t, {}, 1)).find("  [0,1]\n") != std::string::npos);
}

TEST_CASE("trace summary --top lists the largest calls by bytes, then time, within the filter", "[trace]") {
    auto ev = [](int rank, int step, const char* op, uint64_t bytes, double dur, int layer) {
        TraceEvent e = call(rank, step, 10.0 * step, dur);
        e.name = op;
        e.bytes = bytes;
        e.group = {0, 1, 2, 3};
        e.label.layer = layer;
        return e;
    };
    Trace t;
    t.events = {ev(0, 1, "all_gather", 800, 5, 0), ev(1, 1, "all_reduce", 4000, 2, -1),
                ev(2, 2, "all_gather", 800, 9, 1), ev(3, 2, "reduce_scatter", 100, 1, 1)};
    t.events.push_back(t.events[0]);
    t.events.back().kind = TraceEvent::Kind::span;  // a compute span is never a call
    t.events.back().bytes = 1 << 20;

    const std::vector<TraceEvent> top = largest_calls(t, {}, 3);
    REQUIRE(top.size() == 3);
    REQUIRE(top[0].name == "all_reduce");  // most bytes
    REQUIRE(top[1].rank == 2);             // 800 bytes in 9 us before 800 bytes in 5 us
    REQUIRE(top[2].rank == 0);
    REQUIRE(largest_calls(t, {}, 10).size() == 4);  // N past the calls: all of them
    REQUIRE(largest_calls(t, {}, 0).empty());
    TraceFilter step2;
    step2.step = 2;
    const std::vector<TraceEvent> in2 = largest_calls(t, step2, 1);
    REQUIRE(in2.size() == 1);
    REQUIRE(in2[0].rank == 2);

    const std::string text = format_largest_calls(top, /*exact=*/true);
    // moved = bytes x factor: all_reduce 2(n-1)/n = 1.5 at n = 4; the gradient norm's layer is "-".
    REQUIRE(text.find("all_reduce      dp         param             4000         6000      0.002     1     1     -  [0,1,2,3]\n") !=
            std::string::npos);
    REQUIRE(text.find("all_gather      dp         param              800          600      0.009     2     2     1  [0,1,2,3]\n") !=
            std::string::npos);
    REQUIRE(format_largest_calls({}).find("no collectives") != std::string::npos);

    // Calls of one size: each call's copies side by side, the call with the slowest copy
    // first (by time alone the two calls' copies would interleave: 9, 7, 6, 3).
    Trace same;
    auto copy = [&](int rank, int layer, double dur) {
        TraceEvent e = ev(rank, 1, "all_gather", 800, dur, layer);
        e.group = layer == 0 ? std::vector<int>{0, 1} : std::vector<int>{2, 3};
        return e;
    };
    same.events = {copy(0, 0, 6), copy(1, 0, 9), copy(2, 1, 7), copy(3, 1, 3)};
    const std::vector<TraceEvent> pairs = largest_calls(same, {}, 4);
    REQUIRE(pairs.size() == 4);
    CHECK(pairs[0].rank == 1);
    CHECK(pairs[1].rank == 0);
    CHECK(pairs[2].rank == 2);
    CHECK(pairs[3].rank == 3);
}

// Issue 14, 4.8: `trace summary` took what the viewer refused. Both now ask
// comm/trace/trace_check.h; these are its checks, one by one.
TEST_CASE("trace_problem refuses what no run writes: ranks, times and bytes out of bounds", "[trace][check]") {
    auto x = [](int pid, const std::string& dur, const std::string& group, const std::string& bytes) {
        return std::string(R"({"name":"all_reduce","cat":"comm","ph":"X","pid":)") + std::to_string(pid) +
               R"(,"tid":1,"ts":0,"dur":)" + dur + R"(,"args":{"axis":"dp","group":)" + group + R"(,"bytes":)" +
               bytes + R"(,"payload":"grad","layer":-1,"phase":"bwd","microbatch":-1,"step":0}})";
    };
    auto problem = [](const std::string& events) {
        return trace_problem(parse_chrome_trace("{\"traceEvents\":[" + events + "]}"), "t.json", 4096);
    };
    REQUIRE(problem(x(0, "5", "[0,1]", "4096") + "," + x(1, "5", "[0,1]", "4096")).empty());
    REQUIRE(problem("") == "t.json: the trace has no events (a run with --trace writes at least its memory)");
    REQUIRE(problem(x(0, "-1", "[0,1]", "8")) == "t.json: traceEvents[0] (\"all_reduce\"): dur -1 is negative");
    REQUIRE(problem(x(0, "5", "[0,1]", "8") + "," + x(2000000000, "5", "[0,1]", "8")) ==
            "t.json: traceEvents[1] (\"all_reduce\"): pid 2000000000 is not a rank in [0, 4096)");
    Trace negative = parse_chrome_trace("{\"traceEvents\":[" + x(0, "5", "[0,1]", "8") + "]}");
    negative.events[0].rank = -1;  // the reader refuses it in a file (an integer rank from 0 to 2^31 - 1)
    REQUIRE(trace_problem(negative, "t.json", 4096) == "t.json: traceEvents[0] (\"all_reduce\"): pid -1 is not a rank in [0, 4096)");
    REQUIRE(problem(x(0, "5", "[0,2000000001]", "8")) ==
            "t.json: traceEvents[0] (\"all_reduce\"): group member 2000000001 is not a rank in [0, 4096)");
    REQUIRE(problem(x(0, "5", "[0,1]", "18446744073709551615")) ==
            "t.json: traceEvents[0] (\"all_reduce\"): bytes 18446744073709551615 is more than one call moves (at most 2^53)");
    // Audit 2, item 4: the index is the file's, metadata counted, as the readers' type errors say
    // (it was the index among the events kept: "event 0" for what the file has at traceEvents[1]).
    const std::string meta = R"({"name":"process_name","ph":"M","pid":0,"args":{"name":"rank 0"}})";
    REQUIRE(problem(meta + "," + x(0, "-1", "[0,1]", "8")) == "t.json: traceEvents[1] (\"all_reduce\"): dur -1 is negative");
    Trace recorded;  // events recorded in memory have no file index: their place in trace.events
    recorded.events = {TraceEvent{}, TraceEvent{}};
    recorded.events[1].name = "all_reduce";
    recorded.events[1].dur_us = -1;
    REQUIRE(trace_problem(recorded, "t.json", 4096) == "t.json: event 1 (\"all_reduce\"): dur -1 is negative");
    // Audit 2, item 3: times past 1e12 us (11.6 days) are damage, named with the event.
    REQUIRE(problem(x(0, "1e300", "[0,1]", "8")) ==
            "t.json: traceEvents[0] (\"all_reduce\"): dur 1e+300 is past 1e+12 us (11.6 days), longer than any run");
    REQUIRE(problem(x(0, "1e12", "[0,1]", "8")).empty());  // the bound itself is allowed
    Trace late = parse_chrome_trace("{\"traceEvents\":[" + x(0, "5", "[0,1]", "8") + "]}");
    late.events[0].ts_us = -2e12;
    REQUIRE(trace_problem(late, "t.json", 4096) ==
            "t.json: traceEvents[0] (\"all_reduce\"): ts -2e+12 is past 1e+12 us (11.6 days), longer than any run");
    late.events[0].ts_us = 0;
    late.events[0].gpu_us = 5e12;
    REQUIRE_THAT(trace_problem(late, "t.json", 4096), Catch::Matchers::Contains("gpu_us 5e+12 is past 1e+12 us"));
    // Each call within 2^53, but 2048 of them at 2^53 reach 2^64: the 2048th (traceEvents[2047]) overflows.
    const std::string big = x(0, "5", "[0,1]", std::to_string(kMaxTraceCallBytes));
    std::string many = big;
    for (int i = 1; i < 2047; ++i) many += "," + big;
    REQUIRE(problem(many).empty());  // 2047 x 2^53 < 2^64
    many += "," + big;
    REQUIRE(problem(many) == "t.json: traceEvents[2047] (\"all_reduce\"): the bytes of all collectives add up past 2^64");
}

// Audit 2, item 8: small things a damaged or unusual trace got wrong.
TEST_CASE("trace summary: the axis column fits its longest name, gpus_per_node < 1 is refused, bytes are escaped",
          "[trace][check]") {
    Trace t;
    t.events = {call(0, 1, 100, 40), call(0, 1, 200, 40)};
    t.events[1].axis = "dp_shard+sp";  // 11 characters: the column was 10 wide
    const std::string text = format_trace_summary(summarize_trace(t), "t.json");
    REQUIRE(text.find("\naxis        op ") != std::string::npos);
    REQUIRE(text.find("\ndp          all_gather ") != std::string::npos);
    REQUIRE(text.find("\ndp_shard+sp all_gather ") != std::string::npos);
    const std::string top = format_largest_calls(largest_calls(t, {}, 2));
    REQUIRE(top.find("op              axis        payload") == 0);
    REQUIRE(top.find("all_gather      dp_shard+sp param ") != std::string::npos);
    // At most 10 characters, the tables are as they were.
    t.events[1].axis = "dp_shard";
    REQUIRE(format_trace_summary(summarize_trace(t), "t.json").find("\naxis       op ") != std::string::npos);

    // otherData.gpus_per_node of 0 or less was taken for "not known" without a word.
    for (const json& bad : {json(0), json(-3), json(2.5), json("4"), json(int64_t(1) << 32)}) {
        t.other_data["gpus_per_node"] = bad;
        REQUIRE(trace_problem(t, "t.json", 4096) ==
                "t.json: otherData.gpus_per_node: expected the ranks per node, an integer from 1 to 2^31 - 1, got " +
                    bad.dump() + "; remove the key (`trace summary --gpus-per-node N` then gives the node size)");
    }
    t.other_data["gpus_per_node"] = 4;
    REQUIRE(trace_problem(t, "t.json", 4096).empty());

    // A byte that is no text, quoted by the JSON parser's message, is written as \xNN.
    REQUIRE(printable("a\x9d\x01\x7f~") == "a\\x9d\\x01\\x7f~");
    const std::string junk = error_of([] { parse_chrome_trace("\x9d\xff", "junk.json"); });
    REQUIRE_THAT(junk, Catch::Matchers::StartsWith("junk.json: not a JSON file (") &&
                           Catch::Matchers::Contains("last read: '\\x9d'"));
    for (unsigned char c : junk) REQUIRE((c >= 0x20 && c < 0x7f));
}

TEST_CASE("trace summary says which ranks a cut-down trace lacks, before any total", "[trace]") {
    // An audit removed ranks 2 and 3 of a 4-rank trace: it read as a 2-rank run, without a word.
    Trace t;
    t.events = {call(0, 1, 100, 40), call(1, 1, 100, 40)};
    REQUIRE(summarize_trace(t).missing_ranks.empty());
    REQUIRE(format_trace_summary(summarize_trace(t), "t.json").find("INCOMPLETE") == std::string::npos);
    t.other_data["mesh"] = {{"world", 4}};
    const TraceSummary s = summarize_trace(t);
    REQUIRE(s.mesh_world == 4);
    REQUIRE(s.missing_ranks == std::vector<int>{2, 3});
    const std::string text = format_trace_summary(s, "t.json");
    REQUIRE(text.find("INCOMPLETE: the run had 4 ranks (otherData.mesh); no event of ranks 2, 3 in this file") <
            text.find("\naxis"));
    t.events[1].rank = 2;  // a hole in the middle shows without a mesh too
    t.other_data = json::object();
    REQUIRE(summarize_trace(t).missing_ranks == std::vector<int>{1});
}

// Audit 2, item 1: otherData of 100,000 nested `[` crashed `trace summary` (a recursive copy).
TEST_CASE("a trace nested deeper than kMaxTraceNesting is refused before it is parsed", "[trace][check]") {
    const std::string event = R"({"name":"a","ph":"X","pid":0,"tid":0,"ts":1,"dur":1})";
    auto with_other = [&](const std::string& other) {
        return "{\"traceEvents\":[\n" + event + "\n],\n\"otherData\":" + other + "}";
    };
    auto nested = [](int n) { return std::string(size_t(n), '[') + std::string(size_t(n), ']'); };
    // The document's object is level 1: 63 arrays in otherData reach 64, the limit; the 64th (column 76) passes it.
    REQUIRE(parse_chrome_trace(with_other(nested(kMaxTraceNesting - 1)), "t.json").other_data.is_array());
    REQUIRE(json_nesting_problem(with_other(nested(kMaxTraceNesting)), "t.json") ==
            "t.json: arrays and objects nest more than 64 deep (line 4, column 76); a trace nests a few levels "
            "(`shardscope train --trace` writes 6), so this file is damaged or not a trace");
    // Brackets inside strings, escaped quotes included, are text.
    REQUIRE(json_nesting_problem(with_other("{\"s\":\"\\\"" + std::string(100, '[') + "\"}"), "t.json").empty());
    // 100,000 levels: refused with the message, from the text and from a file, no crash.
    const std::string deep = with_other(nested(100000));
    REQUIRE_THAT(error_of([&] { parse_chrome_trace(deep, "deep.json"); }),
                 Catch::Matchers::StartsWith("deep.json: arrays and objects nest more than 64 deep (line 4"));
    const std::string path = temp_path("deep.json");
    write_text(path, deep);
    REQUIRE_THAT(error_of([&] { read_checked_trace(path); }),
                 Catch::Matchers::StartsWith(path + ": arrays and objects nest more than 64 deep"));
    // The engine's own traces (pipeline actions are the deepest, 6) pass.
    const json other = {{"pipeline", {{"actions", json::array({json::array({json::array({"forward", 0, 0})})})}}}};
    REQUIRE(json_nesting_problem(with_other(other.dump()), "t.json").empty());
    REQUIRE(json_nesting_problem(with_other(other.dump()), "t.json", 5) != "");
}

TEST_CASE("read_checked_trace refuses a file over the cap before reading it, and a directory", "[trace][check]") {
    // A sparse file: 1.1 GB by its size, no disk used, never read (a reader that read it would take
    // seconds and gigabytes, as `trace summary` did).
    const std::string huge = temp_path("huge.json");
    {
        std::ofstream f(huge);
    }
    std::filesystem::resize_file(huge, 1100ull * 1000 * 1000);
    REQUIRE(error_of([&] { read_checked_trace(huge, TraceLimits{}, "trace summary"); }) ==
            huge + ": 1049 MiB is more than trace summary reads (1024 MiB); trace fewer steps or ranks "
                   "(`shardscope train --steps 2 --trace ...`)");
    std::filesystem::remove(huge);
    const std::string dir = std::filesystem::path(huge).parent_path().string();
    REQUIRE_THAT(error_of([&] { read_checked_trace(dir); }), Catch::Matchers::Contains(dir + ": not a regular file (a directory)"));
    // A good trace passes every check and reads as read_chrome_trace reads it.
    const std::string good = temp_path("good.json");
    write_text(good, R"({"traceEvents":[{"name":"a","ph":"X","pid":1,"tid":0,"ts":1,"dur":1}]})");
    REQUIRE(read_checked_trace(good).world() == 2);
}

TEST_CASE("check_trace_filter names the ranks and steps a trace has", "[trace][check]") {
    const Trace t = parse_chrome_trace(R"({"traceEvents":[)"
                                       R"({"name":"a","ph":"X","pid":0,"tid":0,"ts":1,"dur":1,"args":{"step":1}},)"
                                       R"({"name":"a","ph":"X","pid":1,"tid":0,"ts":1,"dur":1,"args":{"step":2}},)"
                                       R"({"name":"a","ph":"X","pid":3,"tid":0,"ts":1,"dur":1,"args":{"step":3}}]})");
    check_trace_filter(t, TraceFilter{3, 2});  // both exist: no throw
    REQUIRE(error_of([&] { check_trace_filter(t, TraceFilter{99, -1}); }) ==
            "--rank 99: the trace has no events of rank 99; its ranks are 0-1, 3");
    REQUIRE(error_of([&] { check_trace_filter(t, TraceFilter{-1, 7}); }) ==
            "--step 7: the trace has no events of step 7; its steps are 1-3");
}
