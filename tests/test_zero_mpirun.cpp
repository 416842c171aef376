// test_zero_mpirun.cpp — the same strategies as separate processes under
// mpirun (--backend mpi) give the single-rank step, as on threads.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "equivalence.h"
#include "model/safetensors.h"
#include "train/train.h"

using namespace ss;

namespace {
std::string out_path(const std::string& name) { return std::string(SS_BINARY_DIR) + "/test_zero_mpirun_" + name; }

// `shardscope train --backend mpi <args>` under mpirun -np 4 against the one-rank
// run @p ref of @p ref_opts (its final parameters in @p ref_params): the same 10
// losses and final parameters, with the tolerances of tests/equivalence.h (fp32
// summation order only, as on threads; each derived there).
void require_mpirun_equals(const std::string& args, const TrainOptions& ref_opts, const TrainReport& ref,
                           const StFile& ref_params) {
    std::string json = out_path("run.json"), save = out_path("run.safetensors");
    std::remove(json.c_str());
    CliResult r = run_shell(std::string("OPENBLAS_NUM_THREADS=1 mpirun --allow-run-as-root --oversubscribe -np 4 ") +
                            SS_SHARDSCOPE_EXE + " train --backend mpi --steps 10 --quiet " + args + " --json " + json +
                            " --save " + save);
    INFO(args << "\n" << r.output);
    REQUIRE(r.code == 0);
    std::ifstream f(json);
    nlohmann::json j = nlohmann::json::parse(f);
    REQUIRE(j["ranks"]["world"] == 4);
    for (int i = 0; i < 10; ++i)
        REQUIRE(j["steps"][i]["loss"].get<double>() == Approx(ref.steps[i].loss).margin(kLossTol));
    require_same_params(read_safetensors(save), ref_params, ref_opts, 10);
}
}  // namespace

TEST_CASE("DDP, ZeRO 1-3, TP (+Megatron-SP), Ulysses and ring SP under mpirun -np 4 equal one rank", "[zero][tp][sp][mpi]") {
    TrainOptions one;
    one.model = model_preset("tiny");
    one.steps = 10;
    one.mbs = 8;
    one.quiet = true;
    one.save = out_path("one.safetensors");
    TrainReport ref = train(one, nullptr);
    StFile ref_params = read_safetensors(one.save);

    for (const std::string flags :
         {"--mbs 2 --zero 0", "--mbs 2 --zero 0 --bucket-mb 0.05", "--mbs 2 --zero 1", "--mbs 2 --zero 2",
          "--mbs 2 --zero 3", "--mbs 2 --zero 3 --dp-shard 2 --dp-rep 2", "--mbs 4 --tp 2 --zero 3", "--mbs 8 --tp 4",
          "--mbs 4 --sp 2 --zero 2", "--mbs 8 --sp 2 --tp 2", "--mbs 8 --sp 4 --sp-mode ring",
          "--mbs 4 --tp 2 --sequence-parallel --zero 1"}) {
        require_mpirun_equals("--model tiny " + flags, one, ref, ref_params);
    }
}

TEST_CASE("pipeline layouts under mpirun -np 4 equal one rank", "[pp][mpi]") {
    TrainOptions one;
    one.model = model_preset("tiny");
    one.model.L = 4;
    one.steps = 10;
    one.mbs = 4;
    one.ga = 2;  // the same 2 micro-batches of 4 sequences as every layout below
    one.quiet = true;
    one.save = out_path("pp_one.safetensors");
    TrainReport ref = train(one, nullptr);
    StFile ref_params = read_safetensors(one.save);

    for (const std::string flags :
         {"--pp 2 --mbs 2 --zero 1", "--pp 4 --mbs 4", "--pp 2 --tp 2 --mbs 4 --schedule gpipe",
          "--pp 2 --mbs 2 --schedule interleaved --pp-virtual 2 --zero 3", "--pp 2 --sp 2 --mbs 4 --recompute full"}) {
        require_mpirun_equals("--model tiny --layers 4 --ga 2 " + flags, one, ref, ref_params);
    }
}

TEST_CASE("bench comm --backend mpi times the mpi backend beside Open MPI's own collectives", "[mpi][bench]") {
    CliResult r = run_shell(std::string("mpirun --allow-run-as-root --oversubscribe -np 2 ") + SS_SHARDSCOPE_EXE +
                            " bench comm --backend mpi --ops all_reduce,all_gather --min-bytes 1024 --max-bytes 8192 "
                            "--iters 2 --warmup 1");
    INFO(r.output);
    REQUIRE(r.code == 0);
    REQUIRE_THAT(r.output, Catch::Contains("bench comm: mpi backend, 2 ranks"));
    REQUIRE_THAT(r.output, Catch::Contains("MPI (us)"));
    REQUIRE_THAT(r.output, Catch::Contains("all_gather"));
}

TEST_CASE("mpirun with layout flags and --trace writes the trace, predicted for the world that ran", "[mpi][trace]") {
    // --ranks keeps its default of 1 under mpirun: the prediction must use the real world (4).
    std::string trace = out_path("dp_shard.json");
    std::remove(trace.c_str());
    CliResult r = run_shell(std::string("OPENBLAS_NUM_THREADS=1 mpirun --allow-run-as-root --oversubscribe -np 4 ") +
                            SS_SHARDSCOPE_EXE + " train --model tiny --backend mpi --dp-shard 4 --steps 1 --quiet --trace " +
                            trace);
    INFO(r.output);
    REQUIRE(r.code == 0);
    nlohmann::json j = nlohmann::json::parse(std::ifstream(trace));
    REQUIRE(j["otherData"]["prediction"]["cluster"]["gpus"] == 4);
    REQUIRE(j["otherData"]["mesh"]["dp_shard"] == 4);
}

// issue 14, section 4, item 4: under mpirun the default backend would make N independent
// one-rank runs racing for the same files; each process refuses instead.
TEST_CASE("mpirun without --backend mpi is refused by every process, naming the fix", "[mpi][errors]") {
    const std::string dir = out_path("threads_under_mpirun");
    run_shell("rm -rf " + dir);
    CliResult r = run_shell(std::string("OPENBLAS_NUM_THREADS=1 mpirun --allow-run-as-root --oversubscribe -np 2 ") +
                            SS_SHARDSCOPE_EXE + " train --model tiny --steps 2 --save-every 1 --checkpoint-dir " + dir);
    INFO(r.output);
    REQUIRE(r.code != 0);
    REQUIRE_THAT(r.output, Catch::Contains("launched by mpirun with 2 processes"));
    REQUIRE_THAT(r.output, Catch::Contains("add --backend mpi"));
    REQUIRE(!std::ifstream(dir + "/latest").good());  // refused before any step
}

// --overlap on and off: the same bits as separate processes too (the mpi backend posts
// started calls as MPI's non-blocking collectives and finishes them at wait).
TEST_CASE("overlap on and off: the same bits under mpirun -np 4", "[overlap][mpi]") {
    for (const std::string flags : {"--zero 0 --bucket-mb 0.05", "--zero 1 --ga 2", "--zero 2", "--zero 3 --prefetch 2",
                                    "--pp 2 --ga 4 --layers 4", "--tp 2 --zero 3"}) {
        std::string bytes[2];
        for (int on = 0; on < 2; ++on) {
            const std::string save = out_path(std::string("overlap_") + char('0' + on) + ".safetensors");
            CliResult r = run_shell(std::string("OPENBLAS_NUM_THREADS=1 mpirun --allow-run-as-root --oversubscribe -np 4 ") +
                                    SS_SHARDSCOPE_EXE + " train --backend mpi --model tiny --mbs 2 --steps 3 --quiet " +
                                    flags + " --overlap " + (on ? "on" : "off") + " --save " + save);
            INFO(flags << "\n" << r.output);
            REQUIRE(r.code == 0);
            std::ifstream f(save, std::ios::binary);
            bytes[on] = std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
        }
        INFO(flags);
        REQUIRE(!bytes[0].empty());
        REQUIRE(bytes[0] == bytes[1]);
    }
}

// hpZ under mpirun: its groups of K are MPI communicators prepared up front (train.cpp),
// and the run gives ZeRO-3's bits.
TEST_CASE("hpZ gives ZeRO-3's bits under mpirun -np 4", "[zero][hpz][mpi]") {
    std::string bytes[2];
    for (int on = 0; on < 2; ++on) {
        const std::string save = out_path(std::string("hpz_") + char('0' + on) + ".safetensors");
        CliResult r = run_shell(std::string("OPENBLAS_NUM_THREADS=1 mpirun --allow-run-as-root --oversubscribe -np 4 ") +
                                SS_SHARDSCOPE_EXE + " train --backend mpi --model tiny --mbs 2 --steps 3 --quiet --zero 3 " +
                                (on ? "--hpz 2 " : "") + "--save " + save);
        INFO(r.output);
        REQUIRE(r.code == 0);
        std::ifstream f(save, std::ios::binary);
        bytes[on] = std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    }
    REQUIRE(!bytes[0].empty());
    REQUIRE(bytes[0] == bytes[1]);
}

// ZeRO++'s quantized collectives under mpirun: qwZ's uint8 gathers and qgZ's node and
// cross all-to-alls (communicators prepared in train.cpp) move bytes and quantize in
// the strategy, so the processes give the threads backend's bits exactly.
TEST_CASE("qwZ + qgZ + hpZ under mpirun -np 4 give the threads backend's bits", "[zero][zeropp][mpi]") {
    const std::string flags = " --model tiny --mbs 2 --steps 3 --quiet --zero 3 --hpz 2 --qwz --qgz --save ";
    const std::string mpi_save = out_path("zeropp_mpi.safetensors"), threads_save = out_path("zeropp_threads.safetensors");
    CliResult r = run_shell(std::string("OPENBLAS_NUM_THREADS=1 mpirun --allow-run-as-root --oversubscribe -np 4 ") +
                            SS_SHARDSCOPE_EXE + " train --backend mpi" + flags + mpi_save);
    INFO(r.output);
    REQUIRE(r.code == 0);
    CliResult t = run_shell(std::string("OPENBLAS_NUM_THREADS=1 ") + SS_SHARDSCOPE_EXE + " train --ranks 4" + flags +
                            threads_save);
    INFO(t.output);
    REQUIRE(t.code == 0);
    auto bytes = [](const std::string& path) {
        std::ifstream f(path, std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    };
    REQUIRE(!bytes(mpi_save).empty());
    REQUIRE(bytes(mpi_save) == bytes(threads_save));
}
