// test_viz_xvfb.cpp — shardscope-viz draws real traces, headless, under Xvfb.
//
// A real 8-rank run is traced (`shardscope train --ranks 8 --zero 3`), every
// panel is rendered to PNG (`shardscope-viz TRACE --screenshot ... --panel all`
// under xvfb-run) and the pictures are read back (stb_image) and checked:
//
//   - no panel is blank (many colours, no colour covering almost everything);
//   - the timeline shows the payload colours of the collectives the trace has
//     (ZeRO-3: param blue and grad orange) and NOT those it lacks (no act green;
//     the legend draws an absent payload as an outline, never filled);
//   - with tensor parallelism (--tp 2) the act green appears;
//   - a pipeline run (--pp 2 --ga 4) draws its schedule: each micro-batch's colour;
//   - live mode (--live-run) trains in the viewer's process and draws the trace it wrote;
//     a failed run, or one past --live-timeout, exits 1 with no picture;
//   - a scripted mouse (--exercise) goes through hover, selection, zoom and every tab;
//   - the memory panel shows the Ledger categories' colours, the grid its tints;
//   - a missing, truncated or too large trace gives exit code 1, the message on
//     stderr, and a picture of the error (never a crash or a hang).
//
// Links ss_viz_model (for the palette) and libstb; needs xvfb-run (scripts/deps.sh
// installs xvfb and xauth), or a display.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "cli_run.h"
#include "stb/stb_image.h"
#include "viz/model/palette.h"

using namespace ss;
using namespace ss::viz;

namespace {

const std::string kOut = std::string(SS_BINARY_DIR) + "/test_viz_xvfb_out";

// The command prefix that gives shardscope-viz an X server: xvfb-run when it is
// installed (24-bit screen; the picture itself is drawn offscreen at --size),
// else the display this test runs on.
std::string x_prefix() {
    if (run_shell("command -v xvfb-run").code == 0) return "xvfb-run -a -s '-screen 0 1280x1024x24' ";
    if (std::getenv("DISPLAY")) return "";
    FAIL("no X server for the screenshot test: install xvfb and xauth (scripts/deps.sh does), or set DISPLAY");
    return "";
}

// Runs shardscope-viz ARGS and returns ITS exit code: xvfb-run sometimes fails to clean up
// its temporary directory and then exits 5 whatever the program did, so the program's code
// is printed from inside the X session and read back.
CliResult run_viz(const std::string& args) {
    const std::string inner = std::string("timeout 120 ") + SS_VIZ_EXE + " " + args + "; echo \"viz-exit=$?\"";
    CliResult r = run_shell(x_prefix() + "sh -c '" + inner + "'");
    const size_t at = r.output.rfind("viz-exit=");
    r.code = at == std::string::npos ? -1 : std::atoi(r.output.c_str() + at + 9);
    return r;
}

struct Image {
    int w = 0, h = 0;
    std::map<uint32_t, long> counts;  // pixels per RGB colour
    long count(Rgb c) const {
        auto it = counts.find((uint32_t(c.r) << 16) | (uint32_t(c.g) << 8) | c.b);
        return it == counts.end() ? 0 : it->second;
    }
};

Image load_png(const std::string& path) {
    Image img;
    int n = 0;
    unsigned char* px = stbi_load(path.c_str(), &img.w, &img.h, &n, 3);
    REQUIRE(px != nullptr);
    for (long i = 0; i < long(img.w) * img.h; ++i)
        img.counts[(uint32_t(px[3 * i]) << 16) | (uint32_t(px[3 * i + 1]) << 8) | px[3 * i + 2]] += 1;
    stbi_image_free(px);
    return img;
}

// Not blank: a real picture has hundreds of colours (text is anti-aliased) and no single
// colour covers more than @p max_share of it (a blank frame is one colour; tables and forms
// are mostly background, the timeline and memory plots are not).
void require_not_blank(const Image& img, const std::string& what, double max_share = 0.85) {
    INFO(what << ": " << img.counts.size() << " colours");
    REQUIRE(img.w > 0);
    REQUIRE(img.counts.size() > 100);
    long most = 0;
    for (const auto& [c, n] : img.counts) most = std::max(most, n);
    REQUIRE(double(most) / (double(img.w) * img.h) < max_share);
}

std::string make_trace(const std::string& name, const std::string& flags, int ranks = 8) {
    std::filesystem::create_directories(kOut);
    const std::string path = kOut + "/" + name + ".json";
    CliResult r = run_shardscope("train --model tiny --ranks " + std::to_string(ranks) + " --steps 2 --quiet " + flags +
                                 " --trace " + path);
    INFO(r.output);
    REQUIRE(r.code == 0);
    return path;
}

}  // namespace

TEST_CASE("every panel of a real 8-rank ZeRO-3 trace renders, with the payload colours it has", "[viz][xvfb]") {
    const std::string trace = make_trace("zero3", "--zero 3");
    const std::string png = kOut + "/zero3.png";
    CliResult r = run_viz(trace + " --screenshot " + png + " --panel all --size 1400x900");
    INFO(r.output);
    REQUIRE(r.code == 0);
    for (const char* p : {"", "-timeline", "-memory", "-grid", "-comm", "-pipeline", "-gbs", "-live"}) {
        const std::string file = kOut + "/zero3" + p + ".png";
        REQUIRE(std::filesystem::exists(file));
        const Image img = load_png(file);
        REQUIRE(img.w == 1400);
        REQUIRE(img.h == 900);
        // The timeline and memory panels are dense pictures; the others are tables and forms on a background.
        const std::string name = p;
        const bool dense = name.empty() || name == "-timeline" || name == "-memory";
        // ZeRO-3 has no pipeline: that panel is a few lines saying so, and how to make a trace that has one.
        require_not_blank(img, file, dense ? 0.85 : (name == "-pipeline" ? 0.98 : 0.95));
    }
    // Timeline: ZeRO-3 moves parameters (all_gather) and gradients (reduce_scatter), no activations.
    const Image tl = load_png(kOut + "/zero3-timeline.png");
    CHECK(tl.count(payload_color(Payload::param)) > 2000);
    CHECK(tl.count(payload_color(Payload::grad)) > 2000);
    CHECK(tl.count(payload_color(Payload::act)) == 0);
    CHECK(tl.count(payload_color(Payload::act_grad)) == 0);
    // The overview shows them too.
    const Image ov = load_png(kOut + "/zero3.png");
    CHECK(ov.count(payload_color(Payload::param)) > 500);
    CHECK(ov.count(payload_color(Payload::grad)) > 500);
    // Memory: the stacked categories.
    const Image mem = load_png(kOut + "/zero3-memory.png");
    for (Mem m : {Mem::params, Mem::optim, Mem::acts, Mem::comm, Mem::workspace}) {
        INFO(mem_name(m));
        CHECK(mem.count(memory_color(m)) > 200);
    }
    // Grid: 8 ranks of dp_shard, each its own tint.
    const Image grid = load_png(kOut + "/zero3-grid.png");
    for (int i = 0; i < 8; ++i) {
        INFO("dp_shard rank " << i);
        CHECK(grid.count(axis_index_color(i, 8)) > 300);
    }
}

TEST_CASE("tensor parallelism shows as activation traffic (green) in the timeline", "[viz][xvfb]") {
    const std::string trace = make_trace("tp2", "--tp 2 --zero 1");
    const std::string png = kOut + "/tp2.png";
    CliResult r = run_viz(trace + " --screenshot " + png + " --panel timeline --size 1400x900");
    INFO(r.output);
    REQUIRE(r.code == 0);
    const Image tl = load_png(png);
    require_not_blank(tl, png);
    CHECK(tl.count(payload_color(Payload::act)) > 1000);
    // The interactive paths (hover, pick, click-select, wheel zoom, every tab) under a scripted mouse.
    CliResult ex = run_viz(trace + " --exercise 280 --size 1400x900");
    INFO(ex.output);
    CHECK(ex.code == 0);
    CHECK_THAT(ex.output, Catch::Contains("exercise: 280 frames"));
}

TEST_CASE("a pipeline run's schedule is drawn: boxes per micro-batch on each pp rank", "[viz][xvfb]") {
    // 2 pp ranks, 4 micro-batches (GA 4), 1F1B: otherData.pipeline and the forward/backward spans.
    const std::string trace = make_trace("pp2", "--layers 4 --pp 2 --ga 4", 2);
    const std::string png = kOut + "/pp2-pipeline.png";
    CliResult r = run_viz(trace + " --screenshot " + png + " --panel pipeline --size 1400x900");
    INFO(r.output);
    REQUIRE(r.code == 0);
    const Image img = load_png(png);
    require_not_blank(img, png, 0.95);
    // Each micro-batch's colour fills boxes in both charts (a simulated forward box alone is
    // ~60 x 170 px at this size); the legend's swatches are ~12 x 12.
    for (int micro = 0; micro < 4; ++micro) {
        INFO("micro-batch " << micro);
        CHECK(img.count(axis_index_color(micro, 4)) > 3000);
    }
    CHECK(img.count(axis_index_color(4, 4)) == 0);  // no fifth micro-batch
    // The hover paths (tooltips over boxes) under the scripted mouse, every tab of a pp trace.
    CliResult ex = run_viz(trace + " --exercise 80 --size 1400x900");
    INFO(ex.output);
    CHECK(ex.code == 0);
}

TEST_CASE("live mode runs the engine in the viewer and draws the trace it wrote", "[viz][xvfb]") {
    const std::string dir = kOut + "/live";
    std::filesystem::remove_all(dir);
    const std::string png = kOut + "/live.png";
    // --live-run presses Run (tiny, 8 ranks, ZeRO-3, 2 steps); the picture waits for the run's end.
    CliResult r = run_viz("--live-run --live-out " + dir + " --screenshot " + png + " --panel timeline --size 1400x900");
    INFO(r.output);
    REQUIRE(r.code == 0);
    REQUIRE(std::filesystem::exists(dir + "/live-1.json"));
    const Image tl = load_png(png);
    require_not_blank(tl, png);
    CHECK(tl.count(payload_color(Payload::param)) > 2000);  // ZeRO-3's gathers, from the run just made
    CHECK(tl.count(payload_color(Payload::grad)) > 2000);
}

TEST_CASE("headless --live-run exits 1 when the run fails or runs past --live-timeout", "[viz][xvfb]") {
    std::filesystem::create_directories(kOut);
    // A run that fails: its trace's folder is a file. The exit code waits for the run's
    // result (it once read "not running, not finished" between two flags and exited 0).
    const std::string not_a_dir = kOut + "/live-out-is-a-file";
    std::ofstream(not_a_dir) << "a file";
    const std::string png = kOut + "/live-failed.png";
    std::filesystem::remove(png);
    CliResult failed = run_viz("--live-run --live-out " + not_a_dir + " --screenshot " + png + " --panel live");
    INFO(failed.output);
    CHECK(failed.code == 1);
    CHECK_THAT(failed.output, Catch::Contains("shardscope-viz: error: the live run failed: "));

    // A run past the limit (0 s: it has not ended when the loop first looks): stopped, exit 1.
    const std::string dir = kOut + "/live-timeout";
    std::filesystem::remove_all(dir);
    const std::string late = kOut + "/live-late.png";
    std::filesystem::remove(late);
    CliResult timed_out = run_viz("--live-run --live-timeout 0 --live-out " + dir + " --screenshot " + late);
    INFO(timed_out.output);
    CHECK(timed_out.code == 1);
    CHECK_THAT(timed_out.output, Catch::Contains("the live run did not end within --live-timeout 0 s; it is stopped"));
    CHECK_FALSE(std::filesystem::exists(late));
}

TEST_CASE("a bad trace is an error on stderr, exit code 1, and a picture of the error", "[viz][xvfb]") {
    std::filesystem::create_directories(kOut);
    const std::string truncated = kOut + "/truncated.json";
    std::ofstream(truncated) << R"({"traceEvents":[{"name":"memory","ph":"C","pid":0,"ts":1,"args":{"params":)";
    const std::string million = kOut + "/million.json";
    {
        std::ofstream os(million);
        os << "{\"traceEvents\":[";
        for (int i = 0; i < 1000000; ++i) os << (i ? "," : "") << R"({"ph":"X","name":"x","pid":0,"ts":1,"dur":1})";
        os << "]}";
    }
    struct Case {
        std::string file, message;
    };
    for (const Case& c : {Case{kOut + "/no-such.json", "cannot open the trace"},
                          Case{truncated, "not a JSON file"},
                          Case{million, "1000000 events is more than this viewer draws"}}) {
        const std::string png = kOut + "/error.png";
        std::filesystem::remove(png);
        CliResult r = run_viz(c.file + " --screenshot " + png + " --size 1000x600");
        INFO(r.output);
        CHECK(r.code == 1);
        CHECK_THAT(r.output, Catch::Contains("shardscope-viz: error:") && Catch::Contains(c.message));
        REQUIRE(std::filesystem::exists(png));
        const Image img = load_png(png);
        CHECK(img.count(Rgb{80, 20, 20}) > 5000);  // the error box
    }
    std::filesystem::remove(million);
    // Bad flags are usage errors.
    CHECK(run_viz("--panel nope --screenshot x.png").code != 0);
    CHECK(run_viz("--size 10x10 --screenshot x.png").code != 0);
}
