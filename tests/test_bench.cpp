// test_bench.cpp — the `shardscope bench` commands run and print their tables.
//
// Not timing (the machine is shared and noisy): each command runs on the tiny
// model for a few steps, exits 0, and prints every header and row it promises;
// the --json files hold one row per configuration with positive speeds.
#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "cli_run.h"

using Catch::Matchers::Contains;

namespace {
std::string tmp(const std::string& name) { return std::string(SS_BINARY_DIR) + "/test_bench_" + name; }

nlohmann::json read_json(const std::string& path) {
    std::ifstream f(path);
    REQUIRE(f.good());
    return nlohmann::json::parse(f);
}

// How many lines of @p text match @p pattern (ECMAScript, whole line).
size_t count_lines(const std::string& text, const std::string& pattern) {
    std::regex re(pattern);
    size_t n = 0, at = 0;
    while (at < text.size()) {
        size_t end = text.find('\n', at);
        if (end == std::string::npos) end = text.size();
        if (std::regex_match(text.substr(at, end - at), re)) ++n;
        at = end + 1;
    }
    return n;
}
}  // namespace

TEST_CASE("bench dp: one rank, then DDP naive and bucketed, ZeRO-1/2/3 on 2 and 4 ranks", "[cli][bench]") {
    const std::string json = tmp("dp.json");
    CliResult r = run_shardscope("bench dp --model tiny --steps 2 --warmup 1 --rounds 2 --no-torch --json " + json);
    INFO(r.output);
    REQUIRE(r.code == 0);
    REQUIRE_THAT(r.output, Contains("weak scaling: MBS 8 per rank"));
    REQUIRE_THAT(r.output, Contains("config                   ranks   median ms    tokens/s  speed-up  efficiency"));
    // A row: name, ranks, then four numbers (speed-up with an x, efficiency in %).
    const std::string num = R"(\s+[0-9.]+)";
    REQUIRE(count_lines(r.output, "one rank\\s+1" + num + num + num + "x" + num + "%") == 1);
    for (const char* name : {"DDP naive \\(per tensor\\)", "DDP bucketed \\(1 MiB\\)", "ZeRO-1", "ZeRO-2", "ZeRO-3"})
        for (int n : {2, 4}) {
            INFO(name << " at " << n << " ranks");
            REQUIRE(count_lines(r.output, std::string(name) + "\\s+" + std::to_string(n) + num + num + num + "x" +
                                              num + "%.*") == 1);
        }
    // More ranks than cores: the header says so and the rows are marked.
    const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
    REQUIRE_THAT(r.output, Contains("this machine has " + std::to_string(cores) + " cores"));
    REQUIRE(count_lines(r.output, ".*\\(oversubscribed\\)") == (cores < 4 ? 5u : 0u) + (cores < 2 ? 5u : 0u));
    REQUIRE_THAT(r.output, !Contains("pytorch DDP gloo") && !Contains("ratio"));  // --no-torch
    nlohmann::json j = read_json(json);
    REQUIRE(j["scaling"] == "weak");
    REQUIRE(j["rows"].size() == 11);
    for (const auto& row : j["rows"]) {
        REQUIRE(row["tokens_per_s"].get<double>() > 0);
        REQUIRE(row["median_ms"].get<double>() > 0);
    }
    REQUIRE(j["rows"][0]["speedup"].get<double>() == 1.0);  // one rank against itself
    REQUIRE(j["rows"][0]["round_median_ms"].size() == 2);   // one median per round
}

TEST_CASE("bench dp: a world of one is not a comparison", "[cli][bench][errors]") {
    CliResult r = run_shardscope("bench dp --model tiny --steps 1 --warmup 0 --no-torch --ranks 1");
    INFO(r.output);
    REQUIRE(r.code == 1);
    REQUIRE_THAT(r.output, Contains("--ranks 1: bench dp compares N >= 2 ranks with one rank"));
}

TEST_CASE("bench trace: off and on alternated, the overhead, and a trace file", "[cli][bench]") {
    const std::string json = tmp("trace.json"), trace = tmp("trace_out.json");
    std::remove(trace.c_str());
    CliResult r = run_shardscope("bench trace --model tiny --steps 2 --warmup 1 --rounds 2 --trace " + trace +
                                 " --json " + json);
    INFO(r.output);
    REQUIRE(r.code == 0);
    REQUIRE_THAT(r.output, Contains("on 4 rank(s) (threads backend, DDP naive (per tensor))"));
    REQUIRE_THAT(r.output, Contains("tracing    median ms   faults / step   each run's median ms, in order"));
    const std::string num = R"(\s+[0-9.]+)";
    REQUIRE(count_lines(r.output, "off" + num + num + num + num) == 1);  // median, faults, then one per round
    REQUIRE(count_lines(r.output, "on" + num + num + num + num) == 1);
    REQUIRE_THAT(r.output, Contains("overhead = (on - off) / off = "));
    REQUIRE(read_json(trace)["traceEvents"].size() > 0);  // the traced runs wrote a Chrome trace
    nlohmann::json j = read_json(json);
    REQUIRE(j["off_run_medians_ms"].size() == 2);
    REQUIRE(j["on_run_medians_ms"].size() == 2);
    REQUIRE(j["on_minor_faults_per_step"].size() == 2);
}

TEST_CASE("bench without a subcommand is still the one-rank run; bench comm is wired", "[cli][bench]") {
    CliResult plain = run_shardscope("bench --model tiny --steps 2 --warmup 1 --no-torch");
    INFO(plain.output);
    REQUIRE(plain.code == 0);
    REQUIRE_THAT(plain.output, Contains("one rank"));
    REQUIRE(count_lines(plain.output, R"(shardscope\s+[0-9.]+\s+[0-9]+)") == 1);
    REQUIRE_THAT(plain.output, !Contains("bench dp"));

    CliResult comm = run_shardscope("bench comm --ops all_reduce --min-bytes 1024 --max-bytes 4096 --iters 1 --warmup 0");
    INFO(comm.output);
    REQUIRE(comm.code == 0);
    REQUIRE_THAT(comm.output, Contains("all_reduce"));
}
