// test_diagram.cpp — docs/img's pictures are what the current code draws, byte for byte,
// and `shardscope diagram` says what to change for bad input.
//
// Each picture of docs/img/ is drawn again by the built `shardscope diagram` (src/diagram/)
// and compared with the committed file: a change to the engine that moves a chunk, a
// slice or a schedule's box fails here until ./scripts/diagrams draws the pictures again.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "cli_run.h"

using Catch::Matchers::Contains;

namespace {

std::string tmp(const std::string& name) { return std::string(SS_BINARY_DIR) + "/test_diagram_" + name; }

std::string read_all(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::ostringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// The committed pictures and the lines that draw them (the same as scripts/diagrams).
struct Picture {
    std::string file;
    std::string args;
};
// The loss curves of tutorials/14 are drawn from the two reports committed beside them.
const std::string kImg = std::string(SS_SOURCE_DIR) + "/docs/img/";
const Picture kPictures[] = {
    {"zero-stages.svg", "diagram zero --model tiny --ranks 4"},
    {"hpz-partitions.svg", "diagram hpz --model tiny --ranks 8 --hpz 4"},
    {"tp-mlp.svg", "diagram tp --model tiny --tp 2"},
    {"ulysses-all-to-all.svg", "diagram ulysses --model tiny --sp 2 --tokens 8"},
    {"ring-attention.svg", "diagram ring --model tiny --sp 4"},
    {"ring-attention-contiguous.svg", "diagram ring --model tiny --sp 4 --ring-split contiguous"},
    {"pipeline-1f1b.svg", "diagram 1f1b --pp 4 --ga 8 --schedule 1f1b"},
    {"precision-losses.svg", "diagram losses --run fp32=" + kImg + "precision-losses-fp32.json --run bf16=" + kImg +
                                 "precision-losses-bf16.json"},
};

}  // namespace

TEST_CASE("every picture in docs/img is what the current code draws", "[diagram]") {
    for (const Picture& p : kPictures) {
        const std::string committed = std::string(SS_SOURCE_DIR) + "/docs/img/" + p.file;
        const std::string fresh = tmp(p.file);
        const CliResult r = run_shardscope(std::string(p.args) + " --out " + fresh);
        INFO(p.args << "\n" << r.output);
        REQUIRE(r.code == 0);
        const std::string want = read_all(committed), got = read_all(fresh);
        INFO("docs/img/" << p.file << " is not what `shardscope " << p.args
                         << "` draws now; draw every picture again with ./scripts/diagrams and commit docs/img/");
        REQUIRE(!want.empty());
        CHECK(got == want);
    }
}

TEST_CASE("a picture is the same bytes every time it is drawn", "[diagram]") {
    const std::string a = tmp("again_a.svg"), b = tmp("again_b.svg");
    REQUIRE(run_shardscope("diagram 1f1b --pp 4 --ga 8 --schedule interleaved --pp-virtual 2 --out " + a).code == 0);
    REQUIRE(run_shardscope("diagram 1f1b --pp 4 --ga 8 --schedule interleaved --pp-virtual 2 --out " + b).code == 0);
    CHECK(read_all(a) == read_all(b));
    CHECK_THAT(read_all(a), Contains("(p-1)/(v m)"));
    REQUIRE(run_shardscope("diagram ulysses --sp 4 --out " + a).code == 0);  // 4 heads over 4 ranks
    CHECK_THAT(read_all(a), Contains("H/sp = 1 heads"));
}

TEST_CASE("diagram ring draws ring_step's cells: contiguous rank r works r + 1/2 blocks, zig-zag sp/2 each",
          "[diagram]") {
    const std::string a = tmp("ring8.svg");
    REQUIRE(run_shardscope("diagram ring --sp 8 --ring-split contiguous --out " + a).code == 0);  // 8 tokens per rank
    std::string svg = read_all(a);
    CHECK_THAT(svg, Contains("sp = 8"));
    CHECK_THAT(svg, Contains("contiguous split"));
    CHECK_THAT(svg, Contains(">1 of 8 steps, work 0.5</text>"));  // rank 0: only its own block, causal
    CHECK_THAT(svg, Contains(">8 of 8 steps, work 7.5</text>"));  // rank 7: every block
    CHECK_THAT(svg, Contains("rank 7 sends K7 V7 to rank 0"));
    REQUIRE(run_shardscope("diagram ring --sp 8 --out " + a).code == 0);  // zig-zag, the default
    svg = read_all(a);
    CHECK_THAT(svg, Contains("zig-zag split"));
    CHECK_THAT(svg, Contains("Q of t0..t3, t60..t63"));      // rank 0: chunks 0 and 15 of 16
    CHECK_THAT(svg, Contains(">hh causal, th, tt causal<"));  // every rank's own step
    CHECK_THAT(svg, !Contains("work 0.5</text>"));
    size_t even = 0;  // every rank: 8 of 8 steps, half a (T/sp)^2 block each
    for (size_t at = svg.find(">8 of 8 steps, work 4</text>"); at != std::string::npos;
         at = svg.find(">8 of 8 steps, work 4</text>", at + 1))
        ++even;
    CHECK(even == 8);
    REQUIRE(run_shardscope("diagram ring --out " + a).code == 0);  // ring's --sp default is 4
    CHECK_THAT(read_all(a), Contains("sp = 4"));
}

TEST_CASE("diagram losses draws each --run's steps with a legend", "[diagram]") {
    const std::string r1 = tmp("run1.json"), r2 = tmp("run2.json"), out = tmp("losses.svg");
    std::ofstream(r1) << R"({"steps": [{"step": 1, "loss": 5.5}, {"step": 2, "loss": 5.1}, {"step": 3, "loss": 4.8}]})";
    std::ofstream(r2) << R"({"steps": [{"step": 1, "loss": 5.6}, {"step": 2, "loss": 5.3}, {"step": 3, "loss": 5.0}]})";
    const CliResult r = run_shardscope("diagram losses --run zero3=" + r1 + " --run ddp=" + r2 + " --out " + out);
    INFO(r.output);
    REQUIRE(r.code == 0);
    const std::string svg = read_all(out);
    CHECK_THAT(svg, Contains(">zero3</text>"));
    CHECK_THAT(svg, Contains(">ddp</text>"));
    CHECK_THAT(svg, Contains("<polyline"));
    CHECK_THAT(svg, Contains(">4.8</text>"));  // a y tick: 4.8 .. 5.6 in steps of 0.2
}

TEST_CASE("diagram says what to change for bad input and writes nothing", "[diagram]") {
    const std::string out = tmp("bad.svg");
    std::remove(out.c_str());
    struct Bad {
        std::string args, says;
    };
    const Bad bad[] = {
        {"diagram venn", "choose zero, hpz, tp, ulysses, ring, 1f1b or losses"},
        {"diagram hpz --ranks 8 --hpz 3", "--hpz 3 must divide the ZeRO shard group of 8 ranks"},
        {"diagram hpz --ranks 8 --hpz 8", "and be smaller than it"},  // train's rules: 2 <= K < N
        {"diagram hpz --ranks 8 --hpz 1", "give K >= 2"},
        {"diagram hpz --ranks 8 --hpz 0", "--hpz 0 is hpZ off"},
        {"diagram ulysses --sp 3", "Ulysses needs sp to divide the heads H = 4"},
        {"diagram ulysses --sp 2 --tokens 7", "choose a multiple of --sp 2"},
        {"diagram ring --sp 3", "divide T = 64 (model tiny); choose --sp in {2, 4, 8}"},
        {"diagram ring --sp 1", "draws 2 to 8 ranks"},
        {"diagram ring --sp 16", "choose --sp in {2, 4, 8}"},
        {"diagram tp --tp 3", "TP=3 does not divide n_head"},
        {"diagram 1f1b --pp 4 --ga 6 --schedule interleaved --pp-virtual 2", "to be a multiple of --pp 4"},
        {"diagram losses", "needs at least one --run"},
        {"diagram losses --run nolabel", "write it as LABEL=FILE.json"},
        {"diagram losses --run a=/nonexistent/run.json", "make it with `shardscope train --json"},
    };
    for (const Bad& b : bad) {
        const CliResult r = run_shardscope(b.args + " --out " + out);
        INFO(b.args << "\n" << r.output);
        CHECK(r.code != 0);
        CHECK_THAT(r.output, Contains(b.says));
        CHECK(read_all(out).empty());
    }
}
