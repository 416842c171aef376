// test_cli.cpp — `shardscope train` end to end: output, files, and a clear
// error with a non-zero exit for every kind of bad input.
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <nlohmann/json.hpp>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_run.h"
#include "mesh/process_mesh.h"
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

struct PeakRun {
    int code = -1;         ///< exit status
    long max_rss_kib = 0;  ///< the process's peak resident memory (KiB), as the kernel counted it
};
/// Runs `shardscope ARGS` (one BLAS thread, output discarded) and returns its exit status and
/// peak resident memory (wait4's ru_maxrss: the program itself, as the shell execs it).
PeakRun run_for_peak_rss(const std::string& args) {
    const std::string cmd =
        std::string("exec env OPENBLAS_NUM_THREADS=1 ") + SS_SHARDSCOPE_EXE + " " + args + " > /dev/null 2>&1";
    PeakRun r;
    const pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    int status = 0;
    rusage ru{};
    if (pid < 0 || wait4(pid, &status, 0, &ru) != pid) return r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.max_rss_kib = ru.ru_maxrss;
    return r;
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

TEST_CASE("--replica-outer: avg writes local SGD's bytes; nesterov says its settings and books Mem::outer", "[cli][diloco]") {
    const std::string run = "train --model tiny --mbs 2 --steps 4 --ranks 4 --dp-rep 2 --zero 1 --replica-sync-every 2";
    CliResult plain = run_shardscope(run + " --save " + tmp("lsgd.safetensors"));
    CliResult avg = run_shardscope(run + " --replica-outer avg --save " + tmp("lsgd_avg.safetensors"));
    INFO(plain.output << avg.output);
    REQUIRE(plain.code == 0);
    REQUIRE(avg.code == 0);
    const ss::StFile a = ss::read_safetensors(tmp("lsgd.safetensors")), b = ss::read_safetensors(tmp("lsgd_avg.safetensors"));
    for (const auto& [name, t] : a.tensors) REQUIRE(b.get(name).bytes == t.bytes);
    REQUIRE_THAT(avg.output, !Contains("DiLoCo"));
    CliResult nes = run_shardscope(run + " --replica-outer nesterov");
    INFO(nes.output);
    REQUIRE(nes.code == 0);
    REQUIRE_THAT(nes.output, Contains("then an outer Nesterov step (DiLoCo): lr_outer 0.7, momentum 0.9"));
    REQUIRE_THAT(nes.output, Contains("  outer "));  // the memory table's row for the outer state
}

TEST_CASE("--dp-rep's help calls replica groups what they are: HSDP / MiCS", "[cli]") {
    // Replica groups partition the model states over dp_shard and replicate
    // the group; ZeRO++'s hpZ keeps ZeRO-3's partition over all of dp (Wang et
    // al. 2023, sec. 3.2). The flag's help must not present one as the other.
    for (const std::string cmd : {"train", "plan", "mesh"}) {
        CliResult r = run_shardscope(cmd + " --help");
        INFO("shardscope " << cmd << " --help\n" << r.output);
        REQUIRE(r.code == 0);
        std::istringstream lines(r.output);
        std::string line, dp_rep;
        while (std::getline(lines, line))
            if (line.find("--dp-rep") != std::string::npos) dp_rep = line;
        CHECK_THAT(dp_rep, Contains("HSDP") && Contains("MiCS"));
        CHECK_THAT(dp_rep, Contains("not ZeRO++ hpZ") || !Contains("hpZ"));
    }
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

namespace {
/// A command line and what its refusal must say.
struct Refused {
    std::string args, message;
};
/// Each line exits 1 with the project's "error:" form and its message.
void check_refused(const std::vector<Refused>& cases) {
    for (const Refused& c : cases) {
        CliResult r = run_shardscope(c.args);
        INFO("shardscope " << c.args << "\n" << r.output);
        CHECK(r.code == 1);
        CHECK_THAT(r.output, Contains("error:"));
        CHECK_THAT(r.output, Contains(c.message));
    }
}
}  // namespace

TEST_CASE("bad input: a clear error, exit code 1, no crash", "[cli][errors]") {
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

    check_refused({
        {"train --model gpt5", "unknown model 'gpt5'"},
        {"train --model tiny --dim 65", "C=65 is not divisible by H=4"},
        {"train --model tiny --seq 100", "longer than the positional table (maxT=64)"},
        {"train --model tiny --data /nonexistent/tokens.bin", "/nonexistent/tokens.bin"},
        {"train --model tiny --data " + bad_tokens, bad_tokens},
        {"train --model tiny --data " + short_tokens, "truncated"},
        {"train --model tiny --init " + corrupt, corrupt},
        {"train --model tiny --layers 3 --init " + tmp("tiny.safetensors"), "h.2"},
        {"train --model tiny --dim 32 --init " + tmp("tiny.safetensors"), "shape"},
        {"train --model tiny --mbs 0", "--mbs 0 is out of range: it must be at least 1"},
        {"train --model tiny --dtype fp8", "unknown dtype 'fp8'"},
        {"train --model tiny --vocab-divisible-by 0", "--vocab-divisible-by 0 must be at least 1"},
        {"plan --model gpt2 --vocab-divisible-by -1", "--vocab-divisible-by -1 must be at least 1"},
        // CLI11's own refusals, in the project's form and exit code (a repeated flag exited 114).
        {"train --model tiny --steps 6 --steps 2", "--steps was given 2 times; give it once"},
        {"train --model tiny --bogus", "not expected: --bogus; add --help to the command for its flags"},
        {"train --model", "--model: 1 required TEXT missing"},
        // A missing or unknown subcommand names the choices (said only "A subcommand is required").
        {"checkpoint foo", "`shardscope checkpoint` takes one of: consolidate, show"},
        {"checkpoint", "A subcommand is required; `shardscope checkpoint` takes one of: consolidate, show"},
        {"bench frobnicate", "not expected: frobnicate; `shardscope bench` takes one of: dp, trace, comm"},
        // DiLoCo (src/optim/diloco.h): what to change, before any step.
        {"train --model tiny --ranks 4 --replica-outer nesterov", "add --dp-rep 2 or more"},
        {"train --model tiny --ranks 4 --dp-rep 2 --replica-outer nesterov", "give --replica-sync-every H with H > 1"},
        {"train --model tiny --ranks 4 --dp-rep 2 --replica-sync-every 2 --replica-outer adam",
         "--replica-outer adam is not a choice; use avg"},
        {"train --model tiny --ranks 4 --dp-rep 2 --replica-sync-every 2 --replica-outer nesterov --outer-lr 0",
         "--outer-lr 0 is out of range: it must be above 0"},
        {"train --model tiny --ranks 4 --dp-rep 2 --replica-sync-every 2 --replica-outer nesterov --outer-momentum 1",
         "--outer-momentum must lie in [0, 1) (got 1)"},
    });
}

// What an error offers must pass the other checks too, and a product of two degrees
// must not wrap around in int (an audit found --pp-virtual 2147483647 planned with
// -9e-10 micro-batches and trained into "at least one stage (got -2)").
TEST_CASE("layout errors offer only values that work, and huge degrees do not wrap", "[cli][errors]") {
    const std::string train = "train --model tiny --steps 1 --quiet ";
    check_refused({
        {train + "--ranks 2 --pp 2 --schedule interleaved --pp-virtual 2147483647", "so at least 4 blocks; the model has L=2"},
        {train + "--layers 4 --ranks 2 --pp 2 --schedule interleaved --pp-virtual 1073741824",
         "pipeline of 2147483648 stages (--pp x --pp-virtual) but the model has only L=4 blocks"},
        {train + "--layers 6 --ranks 2 --pp 2 --schedule interleaved --pp-virtual 2 --ga 2", "choose --pp-virtual in {3}"},
        {train + "--layers 5 --ranks 2 --pp 2 --schedule interleaved --pp-virtual 2 --ga 2",
         "no --pp-virtual of 2 or more does at --pp 2"},
        // Ulysses at T = 63 with 4 heads: no SP above 1 divides both; ring takes T's divisors.
        {train + "--ranks 2 --sp 2 --seq 63", "none above 1; change --seq; --sp-mode ring --ring-split contiguous"},
        {train + "--ranks 2 --sp 3 --seq 64", "SP values that fit T=64 and Ulysses's whole heads per rank (H/TP = 4/1): {1, 2, 4}"},
        {train + "--ranks 2 --sp 4 --seq 60 --sp-mode ring", "zig-zag's 2 x SP chunks: {1, 2, 3, 5, 6, 10, 15, 30}"},
        {train + "--ranks 2 --tp 2 --sequence-parallel --seq 63", "no TP of 2 or more divides both T and the H=4 heads"},
        {train + "--ranks 2 --tp 2 --sequence-parallel --seq 63 --heads 6 --dim 48", "choose --tp in {3}"},
        {"plan --model tiny --gpus 2 --pp 2 --ga 2 --schedule interleaved --pp-virtual 2147483647",
         "no v of 2 or more does at PP 2"},
    });
}

// Issue 14, 4.7: numbers that were silently replaced by a default (or ran with
// nonsense) are refused before anything runs, by one check (src/app/flag_range.h)
// whose message names the flag, the value and the range.
TEST_CASE("a flag's number outside its range: an error naming the flag and the range", "[cli][errors]") {
    struct Case {
        std::string args, message;
    };
    const std::vector<Case> cases = {
        {"train --model tiny --seq 0", "--seq 0 is out of range: it must be at least 1"},
        {"train --model tiny --seq -5", "--seq -5 is out of range: it must be at least 1"},
        {"train --model tiny --threads 0", "--threads 0 is out of range: it must be in [1, 1024]"},
        {"train --model tiny --comm-timeout -1", "--comm-timeout -1 is out of range: it must be in (0, 1000000]"},
        {"train --model tiny --layers 0", "--layers 0 is out of range"},
        {"train --model tiny --ranks 5000", "--ranks 5000 is out of range: it must be in [1, 4096]"},
        {"train --model tiny --pp-split 2,0", "--pp-split 0 is out of range"},
        {"train --model tiny --zero 4", "--zero 4 is out of range: it must be in [0, 3]"},
        {"plan --mbs 0", "--mbs 0 is out of range: it must be at least 1"},
        {"train --model tiny --comm-timeout 1e10", "--comm-timeout 1e10 is out of range: it must be in (0, 1000000]"},
        {"train --model tiny --mbs 2.5", "Could not convert: --mbs = 2.5: not a value of the kind that flag takes"},
        {"plan --zero 3 --quant-block 64", "--quant-block does nothing in this plan: it needs --qwz or --qgz"},
        {"plan --zero 3 --qgz-bits 8", "--qgz-bits does nothing in this plan: it needs --qgz"},
        {"plan --ga 0", "--ga 0 is out of range"},
        {"schedule --pp 2 --ga 0", "--micro/--ga 0 is out of range"},  // an option of two names: both named
        {"plan --efficiency -1", "--efficiency -1 is out of range: it must be in (0, 1]"},
        {"plan --efficiency 2", "--efficiency 2 is out of range: it must be in (0, 1]"},
        {"plan --flops nan", "--flops nan is not a finite number: it must be in (0, 1000000] (TFLOP/s"},
        {"plan --flops inf", "--flops inf is not a finite number"},
        {"plan --gpu-mem-gb 0", "--gpu-mem-gb 0 is out of range: it must be in (0, 1000000] (GB"},
        {"plan --inter-gbs 1e-300", "--inter-gbs 1e-300 is out of range: it must be in [0.001, 1000000]"},
        {"plan --gpus 100", "--gpus 100 is 12.5 nodes of 8 GPUs; give a multiple of 8"},
        {"plan --search --top 0", "--top 0 is out of range: it must be at least 1"},
        {"plan --gpus 2147483647", "--gpus 2147483647 is out of range"},
        {"bench --steps 0 --no-torch", "--steps 0 is out of range: it must be at least 1"},
        {"bench dp --ranks 2,0", "--ranks 0 is out of range"},
        {"bench comm --max-bytes 1e12", "--max-bytes 1e12 is out of range"},
        {"trace summary x.json --rank -2", "--rank -2 is out of range: it must be at least 0"},
        {"trace summary x.json --gpus-per-node 0", "--gpus-per-node 0 is out of range: it must be at least 1"},
        {"trace summary x.json --top 0", "--top 0 is out of range: it must be at least 1"},
        // 4.6: absurd sizes are refused at once instead of running until killed.
        {"mesh --ranks 2147483647", "--ranks 2147483647 is out of range: it must be in [1, 65536]"},
        {"schedule --pp 100000 --micro 100000", "--pp 100000 is out of range"},
        {"schedule --pp 300 --micro 300",
         "--pp 300 x --micro 300 x --pp-virtual 1 = 90000 chunk computations is more than this chart draws (65536)"},
    };
    for (const Case& c : cases) {
        const auto t0 = std::chrono::steady_clock::now();
        CliResult r = run_shardscope(c.args);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        INFO("shardscope " << c.args << "\n" << r.output);
        CHECK(r.code == 1);
        CHECK_THAT(r.output, Contains("error: " + c.message));
        // Refused while parsing: no model is built, no schedule simulated. Generous for a loaded machine;
        // the cases that ran before took from seconds to "until killed".
        CHECK(seconds < 10);
    }
    // A value in range still runs, and a flag left out keeps its default (0 = the model's maxT).
    CHECK(run_shardscope("train --model tiny --steps 1 --seq 16 --threads 1 --comm-timeout 0.5 --quiet").code == 0);
}

// Issue 17.5: `shardscope mesh` answers every mpu call for the rank it shows.
TEST_CASE("mesh prints the mpu answers for --rank", "[cli][mesh]") {
    // World 16 = pp 2 x dp 2 x sp 2 x tp 2; rank 13 = (pp 1, dp 1, sp 0, tp 1).
    const CliResult out = run_shardscope("mesh --ranks 16 --pp 2 --dp-shard 2 --sp 2 --tp 2 --rank 13");
    INFO(out.output);
    CHECK(out.code == 0);
    for (const std::string answer : {"mpu of rank 13 (pp 1, dp_rep 0, dp_shard 1, sp 0, tp 1)",
                                     "get_model_parallel_rank()                   = 3\n",
                                     "get_model_parallel_world_size()             = 4\n",
                                     "get_model_parallel_group()                  = {4,5,12,13}\n",
                                     "get_data_parallel_world_size()              = 2\n",
                                     "get_tensor_model_parallel_group()           = {12,13}\n",
                                     "get_pipeline_model_parallel_group()         = {5,13}\n",
                                     "get_context_parallel_world_size()           = 2\n",
                                     "get_sequence_data_parallel_group()          = {9,11,13,15}\n"})
        CHECK_THAT(out.output, Contains(answer));
    // Without --rank it shows rank 0; a rank outside the grid is a clear error.
    CliResult r0 = run_shardscope("mesh --ranks 8 --tp 2 --pp 2");
    REQUIRE(r0.code == 0);
    REQUIRE_THAT(r0.output, Contains("mpu of rank 0 "));
    REQUIRE_THAT(r0.output, Contains("get_model_parallel_group()                  = {0,1,4,5}\n"));
    CliResult bad = run_shardscope("mesh --ranks 8 --tp 2 --rank 8");
    REQUIRE(bad.code != 0);
    REQUIRE_THAT(bad.output, Contains("--rank 8 is outside the mesh: ranks are 0 .. 7 (--ranks 8)"));
    CliResult neg = run_shardscope("mesh --ranks 8 --rank -1");
    REQUIRE(neg.code != 0);
    REQUIRE_THAT(neg.output, Contains("--rank"));
}

// Every line of the mpu section against the library's own answer, on two layouts:
// HSDP (dp_rep x dp_shard) with a pipeline, and sp with a pipeline. The names must
// be exactly the calls listed here, so a call added to one side only fails.
TEST_CASE("mesh prints every mpu call, each with the library's answer", "[cli][mesh]") {
    auto members = [](const ss::Group& g) {
        std::string s = "{";
        for (int i = 0; i < g.size(); ++i) s += (i ? "," : "") + std::to_string(g.ranks[i]);
        return s + "}";
    };
    struct Layout {
        const char* flags;
        ss::MeshShape shape;  // pp, dp_rep, dp_shard, sp, tp
        int rank;
    };
    const Layout layouts[] = {
        {"--ranks 16 --pp 2 --dp-rep 2 --dp-shard 2 --tp 2 --rank 13", {2, 2, 2, 1, 2}, 13},
        {"--ranks 16 --pp 2 --dp-shard 2 --sp 2 --tp 2 --rank 6", {2, 1, 2, 2, 2}, 6},
    };
    for (const Layout& l : layouts) {
        const CliResult out = run_shardscope(std::string("mesh ") + l.flags);
        INFO(l.flags << "\n" << out.output);
        REQUIRE(out.code == 0);
        const ss::Mpu m = ss::ProcessMesh(16, l.shape).mpu(l.rank);
        const std::map<std::string, std::string> expect = {
            {"get_model_parallel_rank", std::to_string(m.get_model_parallel_rank())},
            {"get_model_parallel_world_size", std::to_string(m.get_model_parallel_world_size())},
            {"get_model_parallel_group", members(m.get_model_parallel_group())},
            {"get_data_parallel_rank", std::to_string(m.get_data_parallel_rank())},
            {"get_data_parallel_world_size", std::to_string(m.get_data_parallel_world_size())},
            {"get_data_parallel_group", members(m.get_data_parallel_group())},
            {"get_tensor_model_parallel_rank", std::to_string(m.get_tensor_model_parallel_rank())},
            {"get_tensor_model_parallel_world_size", std::to_string(m.get_tensor_model_parallel_world_size())},
            {"get_tensor_model_parallel_group", members(m.get_tensor_model_parallel_group())},
            {"get_pipeline_model_parallel_rank", std::to_string(m.get_pipeline_model_parallel_rank())},
            {"get_pipeline_model_parallel_world_size", std::to_string(m.get_pipeline_model_parallel_world_size())},
            {"get_pipeline_model_parallel_group", members(m.get_pipeline_model_parallel_group())},
            {"get_pipeline_model_parallel_first_rank", std::to_string(m.get_pipeline_model_parallel_first_rank())},
            {"get_pipeline_model_parallel_last_rank", std::to_string(m.get_pipeline_model_parallel_last_rank())},
            {"get_pipeline_model_parallel_next_rank", std::to_string(m.get_pipeline_model_parallel_next_rank())},
            {"get_pipeline_model_parallel_prev_rank", std::to_string(m.get_pipeline_model_parallel_prev_rank())},
            {"get_sequence_parallel_rank", std::to_string(m.get_sequence_parallel_rank())},
            {"get_sequence_parallel_world_size", std::to_string(m.get_sequence_parallel_world_size())},
            {"get_sequence_parallel_group", members(m.get_sequence_parallel_group())},
            {"get_context_parallel_rank", std::to_string(m.get_context_parallel_rank())},
            {"get_context_parallel_world_size", std::to_string(m.get_context_parallel_world_size())},
            {"get_context_parallel_group", members(m.get_context_parallel_group())},
            {"get_sequence_data_parallel_rank", std::to_string(m.get_sequence_data_parallel_rank())},
            {"get_sequence_data_parallel_world_size", std::to_string(m.get_sequence_data_parallel_world_size())},
            {"get_sequence_data_parallel_group", members(m.get_sequence_data_parallel_group())},
            {"dp_shard_rank", std::to_string(m.dp_shard_rank())},
            {"dp_shard_world_size", std::to_string(m.dp_shard_world_size())},
            {"dp_shard_group", members(m.dp_shard_group())},
            {"dp_rep_rank", std::to_string(m.dp_rep_rank())},
            {"dp_rep_world_size", std::to_string(m.dp_rep_world_size())},
            {"dp_rep_group", members(m.dp_rep_group())},
            {"dp_shard_sp_rank", std::to_string(m.dp_shard_sp_rank())},
            {"dp_shard_sp_world_size", std::to_string(m.dp_shard_sp_world_size())},
            {"dp_shard_sp_group", members(m.dp_shard_sp_group())},
            {"pp_next_rank", std::to_string(m.pp_next_rank())},
            {"pp_prev_rank", std::to_string(m.pp_prev_rank())},
        };
        // The section's call lines: "    name()   = answer", after the "mpu of rank" header.
        const size_t at = out.output.find("\nmpu of rank " + std::to_string(l.rank) + " ");
        REQUIRE(at != std::string::npos);
        std::map<std::string, std::string> printed;
        std::istringstream lines(out.output.substr(at));
        for (std::string line; std::getline(lines, line);) {
            const size_t call = line.find("()"), eq = line.find("= ");
            if (line.rfind("    ", 0) != 0 || call == std::string::npos || eq == std::string::npos) continue;
            const std::string name = line.substr(4, call - 4);
            CHECK(printed.count(name) == 0u);  // each call once
            printed[name] = line.substr(eq + 2);
        }
        for (const auto& [name, answer] : printed) {
            INFO("printed " << name << "() = " << answer);
            CHECK(expect.count(name) == 1u);
        }
        for (const auto& [name, answer] : expect) {
            INFO("call " << name << "()");
            CHECK(printed[name] == answer);
        }
    }
}

// 4.6: the report builds each group once (it built every group from every
// member: world x group size, 58 s at 30,000 ranks); its bound prints fast.
TEST_CASE("mesh at its largest world prints in seconds", "[cli][mesh]") {
    const auto t0 = std::chrono::steady_clock::now();
    CliResult r = run_shardscope("mesh --ranks 65536 --tp 8 --pp 4");
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    REQUIRE(r.code == 0);
    REQUIRE_THAT(r.output, Contains("mesh: 65536 ranks = pp 4 x dp_rep 1 x dp_shard 2048 x sp 1 x tp 8"));
    // ~0.5 s on a 2-core machine; the quadratic groups took minutes at this size.
    CHECK(seconds < 20);
}

// 4.6: chunk labels were 'a' + chunk, so chunk 26 on printed '{', then DEL and raw bytes.
TEST_CASE("schedule labels every chunk readably, past z too", "[cli][schedule]") {
    CliResult r = run_shardscope("schedule --pp 2 --micro 2 --schedule interleaved --pp-virtual 40");
    INFO(r.output);
    REQUIRE(r.code == 0);
    REQUIRE_THAT(r.output, Contains("F0c39") && Contains("B1c26") && Contains("F3c27 = forward of micro-batch 3"));
    for (char ch : r.output) REQUIRE(((ch >= 0x20 && ch < 0x7f) || ch == '\n'));
    // 26 chunks or fewer keep their letters.
    CliResult letters = run_shardscope("schedule --pp 2 --micro 2 --schedule interleaved --pp-virtual 26");
    REQUIRE(letters.code == 0);
    REQUIRE_THAT(letters.output, Contains("F0z"));
}

// 4.9: messages that named the wrong thing.
TEST_CASE("bad input names what is wrong: a directory, the ranks of a trace, the steps of a checkpoint, ring", "[cli][errors]") {
    const std::string dir = tmp("a_dir");
    std::filesystem::create_directories(dir);
    for (const std::string flag : {"--init", "--data"}) {
        CliResult r = run_shardscope("train --model tiny --steps 1 " + flag + " " + dir);
        INFO(flag << "\n" << r.output);
        CHECK(r.code == 1);
        CHECK_THAT(r.output, Contains("'" + dir + "' is a directory"));
    }

    // A trace of 2 ranks asked for rank 99.
    const std::string trace = tmp("two_ranks.json");
    REQUIRE(run_shardscope("train --model tiny --steps 1 --ranks 2 --quiet --trace " + trace).code == 0);
    CliResult rank = run_shardscope("trace summary " + trace + " --rank 99");
    INFO(rank.output);
    CHECK(rank.code == 1);
    CHECK_THAT(rank.output, Contains("--rank 99: the trace has no events of rank 99; its ranks are 0-1"));
    CliResult step = run_shardscope("trace summary " + trace + " --step 7");
    CHECK(step.code == 1);
    CHECK_THAT(step.output, Contains("--step 7: the trace has no events of step 7; its steps are 1"));

    // A `latest` that names a step that is not there: the message lists the steps that are.
    const std::string ck = tmp("ck_latest");
    std::filesystem::remove_all(ck);
    REQUIRE(run_shardscope("train --model tiny --steps 2 --save-every 1 --quiet --checkpoint-dir " + ck).code == 0);
    write_bytes(ck + "/latest", "step-00000099\n");
    CliResult latest = run_shardscope("train --model tiny --steps 3 --quiet --resume " + ck);
    INFO(latest.output);
    CHECK(latest.code == 1);
    CHECK_THAT(latest.output, Contains("the complete steps in " + ck + ": step-00000001, step-00000002"));

    // Megatron-SP with a ring sp axis was reported as Ulysses.
    CliResult ring = run_shardscope("train --model tiny --steps 1 --ranks 4 --tp 2 --sequence-parallel --sp 2 --sp-mode ring");
    INFO(ring.output);
    CHECK(ring.code == 1);
    CHECK_THAT(ring.output, Contains("--sp 2 (ring attention) cannot be combined"));

    // --ring-split: a name that is no split, for train and plan alike (app/layout_flags.cpp).
    for (const char* cmd : {"train --model tiny --steps 1", "plan --model tiny --gpus 2"}) {
        CliResult split = run_shardscope(std::string(cmd) + " --sp 2 --sp-mode ring --ring-split diagonal");
        INFO(split.output);
        CHECK(split.code != 0);
        CHECK_THAT(split.output, Contains("--ring-split diagonal is not a split; use zigzag"));
    }
}

// Audit 2: damaged traces that crashed `trace summary` or printed nonsense; the checks
// themselves are tested in test_trace.cpp, this is the command's exit code and message.
TEST_CASE("trace summary refuses a damaged trace: exit 1, the file and what is wrong, no crash", "[cli][errors]") {
    const std::string event = R"({"name":"a","ph":"X","pid":0,"tid":0,"ts":1,"dur":1})";
    auto summary_of = [&](const std::string& name, const std::string& text) {
        const std::string path = tmp(name);
        write_bytes(path, text);
        return std::make_pair(path, run_shardscope("trace summary " + path));
    };
    // otherData nested 100,000 deep: a stack overflow (SIGSEGV, exit 139) before.
    auto [deep, r] = summary_of("deep.json", "{\"traceEvents\":[" + event + "],\"otherData\":" +
                                                 std::string(100000, '[') + std::string(100000, ']') + "}");
    INFO(r.output);
    CHECK(r.code == 1);
    CHECK_THAT(r.output, Contains("shardscope: error: " + deep + ": arrays and objects nest more than 64 deep"));
    // A pid past 2^31 read as a small rank (2^32 + 3 as 3); a dur of 1e300 printed 300 digits. After one
    // metadata event, both named as the file has them: traceEvents[1].
    const std::string meta = R"({"name":"process_name","ph":"M","pid":0,"args":{"name":"rank 0"}},)";
    auto [wrap, w] = summary_of("wrap.json", "{\"traceEvents\":[" + meta +
                                                 R"({"name":"a","ph":"X","pid":4294967299,"tid":0,"ts":1,"dur":1}]})");
    INFO(w.output);
    CHECK(w.code == 1);
    CHECK_THAT(w.output, Contains(wrap + ": traceEvents[1].pid: expected an integer rank from 0 to 2^31 - 1, got 4294967299"));
    auto [dur, d] = summary_of("dur.json", "{\"traceEvents\":[" + meta +
                                               R"({"name":"a","ph":"X","pid":0,"tid":0,"ts":1,"dur":1e300}]})");
    INFO(d.output);
    CHECK(d.code == 1);
    CHECK_THAT(d.output, Contains(dur + ": traceEvents[1] (\"a\"): dur 1e+300 is past 1e+12 us (11.6 days)"));
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
        // A checkpoint directory inside a step directory (or below it) would mix two runs' steps.
        {"--save-every 1 --checkpoint-dir " + ck + "/step-00000002", "lies inside the checkpoint"},
        {"--save-every 1 --checkpoint-dir " + ck + "/step-00000002/more", "give a directory outside it"},
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

// A new user's audit (2026-12-06): the bench commands and plan found a bad output only after all their work,
// a mistyped --calibration or --torch-script fell back to defaults or "not measured" without a word, and
// --checkpoint-dir without --save-every saved nothing silently.
TEST_CASE("bench, bench calibrate and plan refuse bad outputs and named inputs before any work",
          "[cli][errors][paths]") {
    struct Case {
        std::string args, message, not_reached;  // not_reached: printed only once the work has begun
    };
    const std::string dir(SS_BINARY_DIR);
    const std::vector<Case> refused = {
        {"bench --model tiny --steps 1 --warmup 0 --rounds 1 --no-torch --json /proc/b.json",
         "--json /proc/b.json cannot be written", "median ms"},
        {"bench --model tiny --steps 1 --warmup 0 --rounds 1 --torch-script " + dir + "/no_such_twin.py",
         "--torch-script " + dir + "/no_such_twin.py: no file can be read there", "median ms"},
        {"bench calibrate --model tiny --steps 1 --warmup 0 --rounds 1 --out " + dir, "is a folder", "sgemm"},
        {"bench layouts --model tiny --steps 1 --warmup 0 --rounds 1 --ranks 4 --json /proc/l.json",
         "--json /proc/l.json cannot be written", "round 1/1"},
        {"bench layouts --model tiny --steps 1 --warmup 0 --rounds 1 --ranks 4 --calibration " + dir +
             "/no_such_calibration.json",
         "no file can be read there", "round 1/1"},
        {"plan --hw cpu-local --model tiny --calibration " + dir + "/no_such_calibration.json",
         "give --calibration none for the built-in defaults", "memory per GPU"},
        {"plan --model tiny --json " + dir, "is a folder", "memory per GPU"},
        {"bench overlap --model tiny --ranks 2 --steps 1 --warmup 0 --cost-rounds -1",
         "--cost-rounds -1 is out of range", "rounds alternating"},
        {"bench overlap --model tiny --ranks 2 --steps 1 --warmup 0 --no-cost --link 0",
         "--link 0: the bandwidth must be a positive number of GB/s", "bench overlap:"},
        {"train --model tiny --steps 1 --checkpoint-dir " + tmp("never_written"),
         "without --save-every K would save nothing", "step    1/"},
        // Flags typed but inert in the run (refuse_inert_flags, src/app/inert_flags.cpp).
        {"train --model tiny --ranks 2 --zero 1 --prefetch 2 --steps 1",
         "--prefetch does nothing in this run: it needs --zero 3", "step    1/"},
        {"train --model tiny --steps 1 --keep-last 2", "--keep-last does nothing in this run", "step    1/"},
        {"train --model tiny --steps 1 --quant-block 128", "it needs --qwz or --qgz", "step    1/"},
        // One rank sends nothing; TP alone reduces no gradients (both ran silently until 2026-12-06).
        {"train --model tiny --steps 1 --link 10,6", "--link does nothing in this run: it needs 2 or more ranks",
         "step    1/"},
        {"train --model tiny --ranks 2 --tp 2 --steps 1 --bucket-mb 1",
         "--bucket-mb does nothing in this run: it needs ranks that average gradients, DP x SP >= 2", "step    1/"},
        // nccl runs each started call at once: overlap and prefetch did nothing there, and the run said
        // "overlap: on" (an audit, 2026-12-06). Refused before the GPU's own checks, so on any machine.
        {"train --model tiny --backend nccl --device cuda --zero 3 --prefetch 2 --steps 1",
         "--prefetch does nothing in this run: it needs --backend threads or mpi", "step    1/"},
        {"train --model tiny --backend nccl --device cuda --overlap on --steps 1",
         "--overlap does nothing in this run: it needs --backend threads or mpi", "step    1/"},
        // --emulate's time scale is a GPU's peak over this CPU's matmul rate: wrong when the ranks
        // compute on a GPU (it was applied there). Refused before --device cuda's own check.
        {"train --model tiny --ranks 4 --device cuda --emulate h100x4-ib400 --steps 1",
         "with --device cuda the ranks compute on a GPU; give the links unscaled instead, --link-intra ",
         "step    1/"},
        // The planner at absurd scale and the search's own choices (an audit, 2026-12-06: GA wrapped to
        // -2^31, a negative step time, flags the search dropped without a word).
        {"plan --model tiny --gbs 4294967296", "more than any run accumulates; raise --mbs or lower --gbs",
         "memory per GPU"},
        {"plan --model tiny --gpus 8 --search --gbs 64 --max-gbs 128", "both set the batch", "rank   TP"},
        {"plan --model tiny --gpus 8 --search --recompute full", "--search chooses recompute itself", "rank   TP"},
        {"plan --model tiny --gpus 8 --search --schedule gpipe", "--search chooses schedule itself", "rank   TP"},
        {"plan --model gpt2-xl --gpus 4096 --max-seq 16777216 --seq 16777216 --zero 3 --mbs 16",
         "past what the planner counts; lower --seq or --mbs", "memory per GPU"},
    };
    for (const Case& c : refused) {
        CliResult r = run_shardscope(c.args);
        INFO(c.args << "\n" << r.output);
        CHECK(r.code == 1);
        CHECK_THAT(r.output, Contains(c.message));
        CHECK_THAT(r.output, !Contains(c.not_reached));
    }
    CHECK(!std::filesystem::exists(tmp("never_written")));
    // Emulated links too slow for any call to finish within --comm-timeout (1e-9 GB/s: a byte a second) stop the
    // run at the first call, naming it, instead of sleeping past every deadline.
    CliResult slow = run_shardscope("train --model tiny --ranks 2 --steps 1 --link 1e-9 --comm-timeout 5");
    INFO(slow.output);
    CHECK(slow.code == 1);
    CHECK_THAT(slow.output, Contains("longer than the 5 s any call may wait (--comm-timeout)"));
    // The same for sends and receives, started on progress threads (overlap on) as well as blocking: the
    // send's own message, not the receiver's timeout read as a desync (it was, with overlap on, until
    // 2026-12-06).
    for (const char* layout : {"--ranks 2 --pp 2 --ga 2 --overlap on", "--ranks 2 --pp 2 --ga 2 --overlap off",
                               "--ranks 4 --sp 2 --sp-mode ring"}) {
        CliResult p2p = run_shardscope(std::string("train --model tiny --steps 1 --link 0.0001,10 --comm-timeout 0.5 ") +
                                       layout);
        INFO(layout << "\n" << p2p.output);
        CHECK(p2p.code == 1);
        CHECK_THAT(p2p.output, Contains("emulated links: send of 65536 bytes"));
        CHECK_THAT(p2p.output, Contains("longer than the 0.5 s any call may wait (--comm-timeout)"));
        CHECK_THAT(p2p.output, !Contains("desync"));
    }
    // `none` asks for cpu-local's defaults by name, whatever out/ holds.
    CliResult none = run_shardscope("plan --hw cpu-local --model tiny --calibration none");
    INFO(none.output);
    CHECK(none.code == 0);
    CHECK_THAT(none.output, Contains("(defaults)"));
    CliResult used = run_shardscope("train --model tiny --ranks 2 --zero 3 --prefetch 2 --steps 1 --quiet");
    INFO(used.output);
    CHECK(used.code == 0);  // the same flag where it does something runs
}

// An audit of the bench subcommands: flags before a subcommand's name were dropped without a word (the run
// used its defaults), `bench trace` wrote its --json over its --trace and took a --bucket-mb it did not use,
// and `bench layouts` printed its header before refusing a bad --emulate or --link.
TEST_CASE("bench subcommands refuse flags that would be dropped or overwritten, before any work",
          "[cli][errors][bench]") {
    struct Case {
        std::string args, message, not_reached;  // not_reached: printed only once the work has begun
    };
    const std::string same = tmp("bench_trace_same.json"), json = tmp("bench_before_comm.json");
    std::remove(json.c_str());
    std::remove(same.c_str());
    const std::vector<Case> refused = {
        {"bench --model tiny --steps 1 trace --rounds 1 --warmup 0",
         "bench: --model, --steps were given before the subcommand `trace`; put the subcommand's options after its "
         "name: shardscope bench trace --model ... --steps ...",
         "bench trace:"},
        {"bench --json " + json + " comm",
         "bench: --json was given before the subcommand `comm`; `shardscope bench comm` has no --json: leave it out",
         "bench comm:"},
        {"bench trace --model tiny --steps 1 --warmup 0 --rounds 1 --trace " + same + " --json " + same,
         "--json " + same + " and --trace " + same + " name the same path", "bench trace:"},
        {"bench trace --model tiny --steps 1 --warmup 0 --rounds 1 --zero 3 --bucket-mb 1",
         "--bucket-mb does nothing in this run: it needs --zero 0", "bench trace:"},
        {"bench layouts --model tiny --steps 1 --warmup 0 --rounds 1 --ranks 2 --emulate foo",
         "--emulate foo: no such cluster", "load before"},
        {"bench layouts --model tiny --steps 1 --warmup 0 --rounds 1 --ranks 2 --link 0",
         "--link 0: the bandwidth must be a positive number of GB/s", "load before"},
    };
    for (const Case& c : refused) {
        CliResult r = run_shardscope(c.args);
        INFO(c.args << "\n" << r.output);
        CHECK(r.code == 1);
        CHECK_THAT(r.output, Contains("shardscope: error: " + c.message));
        CHECK_THAT(r.output, !Contains(c.not_reached));
    }
    CHECK(!std::filesystem::exists(json));
    CHECK(!std::filesystem::exists(same));
    // The same flags after the subcommand's name run (a flag of plain bench alone still runs plain bench: its tests
    // are in test_bench).
    CliResult after = run_shardscope("bench trace --model tiny --steps 1 --warmup 0 --rounds 1 --ranks 2 --trace " +
                                     tmp("bench_trace_after.json"));
    INFO(after.output);
    CHECK(after.code == 0);
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

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)  // their allocators keep freed memory aside
TEST_CASE("a long run holds what a short one holds, and --trace adds about its events' bytes", "[cli][memory]") {
    // Every rank's tensors share one heap that each step reuses (core/device.cpp, keep_host_memory).
    // Anything that keeps small blocks from mid-step on lands in the holes freed tensors leave, and
    // the heap then grows step after step: the Tracer did until 2026-12-07 (docs/performance.md,
    // "The cost of tracing"). This run, with the Tracer of then, peaked at 86 MB in 5 steps and 214-219 MB
    // in 40 traced (67-70 untraced); with the events in their own log (comm/trace/event_log.h) 63 and 75-78.
    // Bounds, from readings on a 2-core Zen 4 (the rank threads' interleaving moves a peak by +-4 MB):
    //  - 40 steps against 5, untraced: 5 steps peaked at 61-65 MB and 40 at 64-72 MB over 8 runs each,
    //    320 steps at 75 MB: the heap settles and does not climb with the steps. At most +50%, which
    //    a leak of 1 MB a step (+35 MB here) or the old Tracer's growth (+150% traced) exceeds;
    //  - traced against untraced at 40 steps: +6 to +9 MB for a 4.2 MB trace file (the events encoded
    //    in their log, and the writer's buffers), about twice the file; at most 4x the file + 16 MiB,
    //    33 MB here. The old Tracer's +148 MB was 35x its file.
    const std::string run = "train --model tiny --ranks 8 --zero 3 --quiet --steps ", trace = tmp("rss_trace.json");
    const PeakRun short_run = run_for_peak_rss(run + "5");
    const PeakRun long_run = run_for_peak_rss(run + "40");
    const PeakRun traced = run_for_peak_rss(run + "40 --trace " + trace);
    REQUIRE(short_run.code == 0);
    REQUIRE(long_run.code == 0);
    REQUIRE(traced.code == 0);
    const long trace_kib = long(std::filesystem::file_size(trace) / 1024);
    INFO("peak RSS (KiB): 5 steps " << short_run.max_rss_kib << ", 40 steps " << long_run.max_rss_kib
                                    << ", 40 steps traced " << traced.max_rss_kib << "; trace file " << trace_kib
                                    << " KiB");
    CHECK(long_run.max_rss_kib <= short_run.max_rss_kib * 3 / 2);
    CHECK(traced.max_rss_kib <= long_run.max_rss_kib + 4 * trace_kib + 16 * 1024);
}
#endif
