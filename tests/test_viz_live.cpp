// test_viz_live.cpp — the Live run panel's run (viz/app/live.cpp), without a window:
// its phases (running -> finished -> shown, never "neither"), a failed run's error,
// the trace names (an earlier session's are kept), and the stop: Stop, or the
// LiveRun going away with the run still going, ends it within a step.
//
// Builds viz/app/live.cpp with the engine; no ImGui, GLFW or OpenGL.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "viz/app/live.h"

using namespace ss::viz;

namespace {

const std::string kOut = std::string(SS_BINARY_DIR) + "/test_viz_live_out";

// A small, quick layout: tiny on 2 ranks, ZeRO-3, one sequence per rank.
LiveUi small_ui(const std::string& dir, int steps) {
    std::filesystem::remove_all(dir);
    LiveUi ui;
    ui.out_dir = dir;
    ui.cfg.ranks = 2;
    ui.cfg.zero = 3;
    ui.cfg.mbs = 1;
    ui.cfg.steps = steps;
    return ui;
}

struct Result {
    bool done = false;
    std::string trace, error;
};

// What the headless viewer's loop does (viz/app/main.cpp): poll until the run is
// handed over, checking on the way that the run is active the whole time.
Result wait_for(LiveUi& ui, double seconds) {
    Result r;
    const auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - t0 < std::chrono::duration<double>(seconds)) {
        const bool active = live_active(ui);
        if (live_poll(ui, r.trace, r.error)) {
            r.done = true;
            break;
        }
        REQUIRE(active);  // not handed over yet: still active (the early exit this replaced)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return r;
}

std::string log_of(LiveRun& run) {
    std::lock_guard<std::mutex> lock(run.mu);
    return run.log;
}

}  // namespace

TEST_CASE("a live run is active until live_poll hands its trace over, once", "[viz][live]") {
    LiveUi ui = small_ui(kOut + "/ok", 2);
    REQUIRE_FALSE(live_active(ui));
    live_start(ui);
    REQUIRE(live_active(ui));
    live_start(ui);  // a second Run while one is going: nothing
    const Result r = wait_for(ui, 120);
    REQUIRE(r.done);
    INFO(log_of(*ui.run));
    REQUIRE(r.error.empty());
    REQUIRE(r.trace == kOut + "/ok/live-1.json");
    REQUIRE(std::filesystem::exists(r.trace));
    REQUIRE_FALSE(live_active(ui));
    std::string t, e;
    REQUIRE_FALSE(live_poll(ui, t, e));  // handed over once
}

TEST_CASE("a failed live run hands over its error", "[viz][live]") {
    LiveUi ui = small_ui(kOut + "/bad", 2);
    ui.cfg.ranks = 6;
    ui.cfg.tp = 3;  // the panel offers it (it does not check the heads); train() says why not
    live_start(ui);
    const Result r = wait_for(ui, 60);
    REQUIRE(r.done);
    REQUIRE_THAT(r.error, Catch::Contains("TP=3 does not divide n_head=4"));
    REQUIRE_FALSE(std::filesystem::exists(r.trace));
}

TEST_CASE("a live run's trace is the first live-N.json not there yet", "[viz][live]") {
    LiveUi ui = small_ui(kOut + "/names", 1);
    std::filesystem::create_directories(ui.out_dir);
    std::ofstream(ui.out_dir + "/live-1.json") << "an earlier session's trace";
    live_start(ui);
    const Result r = wait_for(ui, 120);
    REQUIRE(r.done);
    REQUIRE(r.error.empty());
    REQUIRE(r.trace == ui.out_dir + "/live-2.json");
    std::ifstream kept(ui.out_dir + "/live-1.json");
    std::string first;
    std::getline(kept, first);
    REQUIRE(first == "an earlier session's trace");
}

TEST_CASE("Stop ends a live run before its next step, with no trace", "[viz][live][stop]") {
    LiveUi ui = small_ui(kOut + "/stop", 100000);  // only the stop can end it within the test
    live_start(ui);
    const auto t0 = std::chrono::steady_clock::now();
    while (log_of(*ui.run).find("step    1/") == std::string::npos &&
           std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60))
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    live_stop(ui);
    const Result r = wait_for(ui, 30);  // a step or two of tiny: well under a second
    INFO(log_of(*ui.run));
    REQUIRE(r.done);
    REQUIRE_THAT(r.error, Catch::StartsWith("rank 0: stopped by the viewer before step "));
    REQUIRE_FALSE(std::filesystem::exists(r.trace));
}

TEST_CASE("a LiveRun destroyed with its run going stops it and waits a step, not the run", "[viz][live][stop]") {
    // The window closing, or the headless --live-timeout, while a run is going: the
    // worker is stopped and joined (never detached, never left to finish its steps).
    auto t0 = std::chrono::steady_clock::now();
    {
        LiveUi ui = small_ui(kOut + "/close", 100000);
        live_start(ui);
        std::this_thread::sleep_for(std::chrono::milliseconds(200));  // building the model, or in a step
        t0 = std::chrono::steady_clock::now();
    }  // ~LiveUi -> ~LiveRun: stop, join
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    REQUIRE(seconds < 30);  // 100000 steps would take hours
}
