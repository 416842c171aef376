// test_cli.cpp — `shardscope train` end to end: output, files, and a clear
// error with a non-zero exit for every kind of bad input.
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "model/safetensors.h"
#include "train/data.h"
#include "odd_vocab.h"

using Catch::Matchers::Contains;

namespace {
std::string tmp(const std::string& name) { return std::string(SS_BINARY_DIR) + "/test_cli_" + name; }
void write_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream f(path, std::ios::binary);
    f << bytes;
}
}  // namespace

TEST_CASE("train prints steps, memory and the GBS line, and writes its files", "[cli]") {
    std::string json = tmp("run.json"), save = tmp("save.safetensors"), grads = tmp("grads.safetensors");
    CliResult r = run_shardscope("train --model tiny --mbs 2 --ga 2 --steps 3 --json " + json + " --save " + save +
                                 " --dump-grads " + grads);
    INFO(r.output);
    REQUIRE(r.code == 0);
    REQUIRE_THAT(r.output, Contains("step    3/3 | loss"));
    REQUIRE_THAT(r.output, Contains("GBS = MBS x GA x DP = 2 x 2 x 1 = 4 sequences"));
    REQUIRE_THAT(r.output, Contains("optim"));
    std::ifstream jf(json);
    nlohmann::json j = nlohmann::json::parse(jf);
    REQUIRE(j["steps"].size() == 3);
    REQUIRE(j["gbs"]["gbs"] == 4);
    REQUIRE(j["memory"]["params"]["live_bytes"] == 4 * j["num_params"].get<int64_t>());
    ss::StFile s = ss::read_safetensors(save);
    REQUIRE(s.get("h.1.mlp.c_fc.weight").shape == ss::Shape{64, 256});
    ss::StFile g = ss::read_safetensors(grads);
    REQUIRE(g.tensors.size() == s.tensors.size());
    // A saved model starts the next run where this one stopped: its first loss is lower than a fresh start's.
    CliResult again = run_shardscope("train --model tiny --mbs 2 --ga 2 --steps 1 --init " + save);
    INFO(again.output);
    REQUIRE(again.code == 0);
}

TEST_CASE("an odd vocabulary under TP: the run says the padding, files keep V rows, --init reshards",
          "[cli][vocab]") {
    const std::string data = odd_vocab_tokens(101), save = tmp("vocab101.safetensors");
    CliResult r = run_shardscope("train --model tiny --vocab 101 --ranks 2 --tp 2 --steps 2 --data " + data +
                                 " --save " + save);
    INFO(r.output);
    REQUIRE(r.code == 0);
    REQUIRE_THAT(r.output, Contains("vocabulary: V = 101 padded to Vp = 256 (multiple of 128 x TP 2"));
    REQUIRE(ss::read_safetensors(save).get("wte.weight").shape == ss::Shape{101, 64});
    // The file loads under another TP degree and another padding (TP 4, D 1: Vp = 104).
    CliResult again = run_shardscope("train --model tiny --vocab 101 --ranks 4 --tp 4 --vocab-divisible-by 1 "
                                     "--steps 1 --data " + data + " --init " + save);
    INFO(again.output);
    REQUIRE(again.code == 0);
    REQUIRE_THAT(again.output, Contains("padded to Vp = 104 (multiple of 1 x TP 4"));
    // No padding, no line.
    CliResult none = run_shardscope("train --model tiny --steps 1");
    REQUIRE(none.code == 0);
    REQUIRE_THAT(none.output, !Contains("padded to"));
    CliResult plan = run_shardscope("plan --model gpt2 --gpus 2 --tp 2");
    INFO(plan.output);
    REQUIRE(plan.code == 0);
    REQUIRE_THAT(plan.output, Contains("vocabulary: V = 50257 padded to Vp = 50432 (multiple of 128 x TP 2"));
    for (const char* help : {"train --help", "plan --help"}) {
        CliResult h = run_shardscope(help);
        REQUIRE_THAT(h.output, Contains("--vocab-divisible-by") && Contains("--make-vocab-size-divisible-by"));
    }
}

TEST_CASE("bad input: a clear error, exit code 1, no crash", "[cli][errors]") {
    struct Case {
        std::string args, message;
    };
    std::string bad_tokens = tmp("bad.bin"), short_tokens = tmp("short.bin"), corrupt = tmp("corrupt.safetensors");
    write_bytes(bad_tokens, std::string(100, 'x'));
    {  // a valid header that promises more tokens than the file holds
        std::vector<uint16_t> toks(5000, 1);
        ss::write_token_file(short_tokens, toks);
        std::ifstream in(short_tokens, std::ios::binary);
        std::string all((std::istreambuf_iterator<char>(in)), {});
        write_bytes(short_tokens, all.substr(0, all.size() / 2));
    }
    write_bytes(corrupt, std::string("\x10\x00\x00\x00\x00\x00\x00\x00{not json at all", 24));
    // A real checkpoint of another shape.
    CliResult mk = run_shardscope("train --model tiny --steps 0 --save " + tmp("tiny.safetensors"));
    REQUIRE(mk.code == 0);

    std::vector<Case> cases = {
        {"train --model gpt5", "unknown model 'gpt5'"},
        {"train --model tiny --dim 65", "C=65 is not divisible by H=4"},
        {"train --model tiny --seq 100", "longer than the positional table (maxT=64)"},
        {"train --model tiny --data /nonexistent/tokens.bin", "/nonexistent/tokens.bin"},
        {"train --model tiny --data " + bad_tokens, bad_tokens},
        {"train --model tiny --data " + short_tokens, "truncated"},
        {"train --model tiny --init " + corrupt, corrupt},
        {"train --model tiny --layers 3 --init " + tmp("tiny.safetensors"), "h.2"},
        {"train --model tiny --dim 32 --init " + tmp("tiny.safetensors"), "shape"},
        {"train --model tiny --mbs 0", "--mbs must be at least 1"},
        {"train --model tiny --dtype fp8", "unknown dtype 'fp8'"},
        {"train --model tiny --vocab-divisible-by 0", "--vocab-divisible-by 0 must be at least 1"},
        {"plan --model gpt2 --vocab-divisible-by -1", "--vocab-divisible-by -1 must be at least 1"},
    };
    for (const Case& c : cases) {
        CliResult r = run_shardscope(c.args);
        INFO("shardscope " << c.args << "\n" << r.output);
        CHECK(r.code == 1);
        CHECK_THAT(r.output, Contains("error:"));
        CHECK_THAT(r.output, Contains(c.message));
    }
}
