// test_cli.cpp — `shardscope train` end to end: output, files, and a clear
// error with a non-zero exit for every kind of bad input.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "model/safetensors.h"
#include "train/data.h"

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
    };
    for (const Case& c : cases) {
        CliResult r = run_shardscope(c.args);
        INFO("shardscope " << c.args << "\n" << r.output);
        CHECK(r.code == 1);
        CHECK_THAT(r.output, Contains("error:"));
        CHECK_THAT(r.output, Contains(c.message));
    }
}

namespace {
std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(f)), {});
}
}  // namespace

// issue 14, section 4, item 1: nan and inf never reach a file.
TEST_CASE("nan and inf stop the run before anything is saved, and a good --save file stays", "[cli][errors][nan]") {
    const std::string keep = tmp("keep.safetensors"), ck = tmp("nan_ckpt");
    std::filesystem::remove_all(ck);
    CliResult good = run_shardscope("train --model tiny --steps 1 --quiet --save " + keep);
    REQUIRE(good.code == 0);
    const std::string good_bytes = slurp(keep);

    struct Case {
        std::string args, message;
    };
    const std::vector<Case> refused = {
        {"--lr inf", "--lr must be a finite number above 0 (got inf)"},
        {"--lr nan", "--lr must be a finite number above 0 (got nan)"},
        {"--lr -1e-3", "--lr must be a finite number above 0"},
        {"--weight-decay nan", "--weight-decay must be a finite number of 0 or more (got nan)"},
        {"--weight-decay -0.1", "--weight-decay must be a finite number of 0 or more"},
        // A finite but absurd rate: step 1's weights are ~1e30 and step 2's forward overflows.
        {"--lr 1e30 --save-every 1 --checkpoint-dir " + ck, "step 2: the loss on rank 0 is"},
    };
    for (const Case& c : refused) {
        CliResult r = run_shardscope("train --model tiny --steps 3 --quiet --save " + keep + " " + c.args);
        INFO("train " << c.args << "\n" << r.output);
        CHECK(r.code == 1);
        CHECK_THAT(r.output, Contains(c.message));
        CHECK(slurp(keep) == good_bytes);  // the good file was not replaced
    }
    // The overflowing run saved step 1 (finite weights) and nothing after: latest names step 1.
    CHECK(slurp(ck + "/latest") == "step-00000001\n");
    CHECK(!std::filesystem::exists(ck + "/step-00000002"));

    // An --init with a nan weight is refused, naming the tensor.
    ss::StFile f = ss::read_safetensors(keep);
    std::vector<float> w = ss::st_to_f32(f.get("h.1.mlp.c_fc.weight"));
    w[17] = std::nanf("");
    f.put(ss::st_from_f32("h.1.mlp.c_fc.weight", f.get("h.1.mlp.c_fc.weight").shape, w));
    const std::string bad = tmp("nan_init.safetensors");
    ss::write_safetensors(bad, f);
    CliResult r = run_shardscope("train --model tiny --steps 1 --init " + bad);
    INFO(r.output);
    CHECK(r.code == 1);
    CHECK_THAT(r.output, Contains("tensor 'h.1.mlp.c_fc.weight' holds a non-finite value (element 17 is nan)"));
}

// issue 14, section 4, items 3 and 5: outputs tried before step 1, and none over another or an input.
TEST_CASE("every output is checked before step 1, and no output overwrites another or an input", "[cli][errors][paths]") {
    const std::string init = tmp("paths_init.safetensors"), tokens = tmp("paths_tokens.bin");
    REQUIRE(run_shardscope("train --model tiny --steps 0 --save " + init).code == 0);
    ss::write_token_file(tokens, std::vector<uint16_t>(20000, 7));
    const std::string ck = tmp("paths_ckpt");
    std::filesystem::remove_all(ck);
    REQUIRE(run_shardscope("train --model tiny --steps 2 --quiet --save-every 2 --checkpoint-dir " + ck).code == 0);
    const std::string shard = ck + "/step-00000002/rank-00000.safetensors", shard_bytes = slurp(shard);
    const std::string a = tmp("paths_a.json");
    struct Case {
        std::string args, message;
    };
    const std::vector<Case> refused = {
        {"--save /proc/x.st", "--save /proc/x.st cannot be written"},
        {"--json /proc/x.json", "--json /proc/x.json cannot be written"},
        {"--trace /proc/x.trace.json", "--trace /proc/x.trace.json cannot be written"},
        {"--dump-grads /proc/g.st", "--dump-grads /proc/g.st cannot be written"},
        {"--save-every 1 --checkpoint-dir /proc/ck", "--checkpoint-dir /proc/ck: cannot create the folder"},
        {"--json " + std::string(SS_BINARY_DIR), "is a folder"},
        {"--json " + a + " --trace " + a, "name the same path"},
        {"--json " + a + " --save " + std::string(SS_BINARY_DIR) + "/../" +
             std::filesystem::path(SS_BINARY_DIR).filename().string() + "/test_cli_paths_a.json",
         "name the same path"},  // the same file, spelt another way
        {"--init " + init + " --save " + init, "is also the --init input"},
        {"--data " + tokens + " --json " + tokens, "is also the --data input"},
        {"--resume " + ck + " --save " + shard, "lies inside the --resume checkpoint"},
        {"--save-every 1 --checkpoint-dir " + ck + " --json " + ck + "/latest", "lies inside a checkpoint"},
    };
    for (const Case& c : refused) {
        CliResult r = run_shardscope("train --model tiny --steps 1 " + c.args);
        INFO("train " << c.args << "\n" << r.output);
        CHECK(r.code == 1);
        CHECK_THAT(r.output, Contains(c.message));
        CHECK_THAT(r.output, !Contains("step    1/"));  // refused before step 1
    }
    CHECK(slurp(shard) == shard_bytes);
    // The usual way to continue stays allowed: resume from a checkpoint directory and save into it.
    CliResult resumed = run_shardscope("train --model tiny --steps 3 --quiet --resume " + ck +
                                       " --save-every 1 --checkpoint-dir " + ck);
    INFO(resumed.output);
    CHECK(resumed.code == 0);

    // `checkpoint consolidate` may not write into the checkpoint it reads.
    CliResult cons = run_shardscope("checkpoint consolidate " + ck + " " + ck + "/step-00000002/rank-00000.safetensors");
    INFO(cons.output);
    CHECK(cons.code == 1);
    CHECK_THAT(cons.output, Contains("lies inside the checkpoint it reads"));
    CHECK(slurp(shard) == shard_bytes);
    CliResult cons_proc = run_shardscope("checkpoint consolidate " + ck + " /proc/model.safetensors");
    CHECK(cons_proc.code == 1);
    CHECK_THAT(cons_proc.output, Contains("/proc/model.safetensors cannot be written"));
}

// issue 14, section 4, item 4: mpirun without --backend mpi would start N one-rank runs.
TEST_CASE("a process started by an MPI launcher with --backend threads is refused", "[cli][errors][mpi-env]") {
    struct Case {
        std::string env, message;
    };
    const std::vector<Case> refused = {
        {"OMPI_COMM_WORLD_SIZE=4 OMPI_COMM_WORLD_RANK=0",
         "launched by mpirun with 4 processes (OMPI_COMM_WORLD_SIZE=4) but --backend threads"},
        {"PMI_SIZE=2 PMI_RANK=1", "launched by mpirun with 2 processes (PMI_SIZE=2) but --backend threads"},
        {"PMIX_RANK=3", "launched by mpirun with several processes (PMIX_RANK=3)"},
    };
    for (const Case& c : refused) {
        CliResult r = run_shell("env " + c.env + " OPENBLAS_NUM_THREADS=1 " + SS_SHARDSCOPE_EXE +
                                " train --model tiny --steps 1");
        INFO(c.env << "\n" << r.output);
        CHECK(r.code == 1);
        CHECK_THAT(r.output, Contains(c.message));
        CHECK_THAT(r.output, Contains("add --backend mpi"));
    }
    // A launcher that started one process is one run: nothing to refuse.
    CliResult one = run_shell(std::string("env OMPI_COMM_WORLD_SIZE=1 OPENBLAS_NUM_THREADS=1 ") + SS_SHARDSCOPE_EXE +
                              " train --model tiny --steps 1 --quiet");
    INFO(one.output);
    CHECK(one.code == 0);
}
