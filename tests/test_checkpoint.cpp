// test_checkpoint.cpp — sharded checkpoints: a resumed run continues exactly
// where the uninterrupted one went, any layout loads any other's checkpoint,
// a crash in the middle of a save leaves the previous checkpoint loadable, and
// a damaged checkpoint is refused with the file named, before any rank starts.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli_run.h"
#include "core/check.h"
#include "core/checksum.h"
#include "model/safetensors.h"
#include "train/checkpoint_lock.h"
#include "train/sharded_checkpoint.h"
#include "train/train.h"
#include "equivalence.h"
#include "odd_vocab.h"

using namespace ss;
namespace fs = std::filesystem;

namespace {

std::string dir_for(const std::string& name) {
    const std::string d = test_file("test_ckpt_" + name);
    fs::remove_all(d);
    return d;
}

// tiny with 4 blocks, GA 2, 10 steps; @p mbs x DP = 8 sequences per micro-batch.
TrainOptions base(int ranks, int mbs) {
    TrainOptions o;
    o.model = model_preset("tiny");
    o.model.L = 4;
    o.ranks = ranks;
    o.mbs = mbs;
    o.ga = 2;
    o.steps = 10;
    o.quiet = true;
    return o;
}

struct L {
    int ranks, mbs, zero = 0, tp = 1, pp = 1, sp = 1, dp_rep = 0, v = 1;
    bool megatron_sp = false;
    DType dtype = DType::f32;
};

TrainOptions layout(const L& l) {
    TrainOptions o = base(l.ranks, l.mbs);
    o.zero = l.zero;
    o.tp = l.tp;
    o.pp = l.pp;
    o.sp = l.sp;
    o.dp_rep = l.dp_rep;
    o.sequence_parallel = l.megatron_sp;
    o.dtype = l.dtype;
    if (l.v > 1) {
        o.schedule = Schedule::interleaved;
        o.pp_virtual = l.v;
    }
    return o;
}

std::string describe(const TrainOptions& o) {
    return "ranks " + std::to_string(o.ranks) + " zero " + std::to_string(o.zero) + " tp " + std::to_string(o.tp) +
           (o.sequence_parallel ? "+SP" : "") + " pp " + std::to_string(o.pp) + " sp " + std::to_string(o.sp) +
           " v " + std::to_string(o.pp_virtual) + " " + dtype_name(o.dtype);
}

// Losses of steps first..10 of @p resumed against the same steps of @p full.
void require_same_losses(const TrainReport& resumed, const TrainReport& full, int first, double margin) {
    REQUIRE(resumed.first_step == first);
    REQUIRE(resumed.steps.size() == size_t(11 - first));
    for (size_t i = 0; i < resumed.steps.size(); ++i) {
        const float a = resumed.steps[i].loss, b = full.steps[size_t(first - 1) + i].loss;
        INFO("step " << resumed.steps[i].step << ": resumed " << a << " vs uninterrupted " << b);
        REQUIRE(resumed.steps[i].step == first + int(i));
        if (margin == 0)
            REQUIRE(a == b);
        else
            REQUIRE(a == Approx(b).margin(margin));
    }
}

}  // namespace

TEST_CASE("save at step 5, resume: steps 6-10 are the uninterrupted run's, exactly (same layout)", "[checkpoint]") {
    for (const L& l : {L{4, 2, 0}, L{4, 2, 1}, L{4, 2, 2}, L{4, 2, 3}, L{4, 4, 0, 2}, L{4, 4, 1, 1, 2},
                       L{4, 4, 3, 1, 2, 1, 0, 1, false, DType::bf16}, L{4, 2, 2, 1, 1, 1, 2},
                       L{4, 8, 0, 1, 2, 1, 0, 2}}) {
        TrainOptions full = layout(l);
        INFO(describe(full));
        const TrainReport uninterrupted = train(full, nullptr);
        TrainOptions first = full;
        first.steps = 5;
        first.save_every = 5;
        first.checkpoint_dir = dir_for("resume");
        train(first, nullptr);
        TrainOptions rest = full;
        rest.resume = first.checkpoint_dir;
        require_same_losses(train(rest, nullptr), uninterrupted, 6, 0.0);
    }
}

TEST_CASE("a checkpoint saved under one layout continues under another with the same losses", "[checkpoint][reshard]") {
    // (from, to) pairs; every layout trains the same 2 micro-batches of 8 sequences per step.
    const std::pair<L, L> pairs[] = {
        {L{4, 2, 3}, L{1, 8}},                                 // ZeRO-3 dp 4 -> one rank
        {L{4, 4, 3, 2}, L{4, 8, 0, 4}},                        // ZeRO-3 dp 2 x tp 2 -> tp 4
        {L{1, 8}, L{4, 4, 1, 1, 2}},                           // one rank -> pp 2 x dp 2, ZeRO-1
        {L{4, 8, 0, 2, 2}, L{4, 2, 2}},                        // pp 2 x tp 2 -> ZeRO-2 dp 4
        {L{4, 4, 1, 2, 1, 1, 0, 1, true}, L{4, 4, 2, 1, 1, 2}},  // tp 2 + Megatron-SP, ZeRO-1 -> Ulysses sp 2 x dp 2
        {L{2, 8, 0, 1, 2, 1, 0, 2}, L{4, 8, 0, 1, 4}},         // interleaved pp 2 v 2 -> pp 4
        {L{4, 2, 3, 1, 1, 1, 2}, L{1, 8}},                     // 2 shards x 2 replicas, ZeRO-3 -> one rank
        {L{4, 2, 2, 1, 1, 1, 0, 1, false, DType::bf16}, L{2, 4, 3, 1, 1, 1, 0, 1, false, DType::bf16}},  // bf16 ZeRO-2 dp 4 -> ZeRO-3 dp 2
    };
    const TrainReport uninterrupted = train(layout(L{1, 8}), nullptr);
    const TrainReport uninterrupted_bf16 = train(layout(L{1, 8, 0, 1, 1, 1, 0, 1, false, DType::bf16}), nullptr);
    for (const auto& [from, to] : pairs) {
        TrainOptions a = layout(from);
        a.steps = 5;
        a.save_every = 5;
        a.checkpoint_dir = dir_for("reshard");
        train(a, nullptr);
        TrainOptions b = layout(to);
        b.resume = a.checkpoint_dir;
        INFO("saved by " << describe(a) << ", resumed by " << describe(b));
        // fp32: kLossTol (the layouts add the same products in another order);
        // bf16: kBf16LossTol (they round bf16 gradient sums at other places). Both derived in equivalence.h.
        require_same_losses(train(b, nullptr), from.dtype == DType::bf16 ? uninterrupted_bf16 : uninterrupted, 6,
                            from.dtype == DType::bf16 ? kBf16LossTol : kLossTol);
    }
}

TEST_CASE("an odd vocabulary's checkpoint reshards across TP degrees: TP 4 -> one rank, one rank -> TP 2",
          "[checkpoint][reshard][vocab]") {
    // V = 211: one rank holds Vp = 256 rows, TP 2 256, TP 4 512 (--vocab-divisible-by 128), or
    // 212 and 212 at --vocab-divisible-by 1. The shards hold each rank's words only; the reader
    // places them by HF index, so any Vp can resume any other.
    auto odd = [](L l, int D) {
        TrainOptions o = layout(l);
        o.model.V = 211;
        o.model.vocab_divisible_by = D;
        o.data = odd_vocab_tokens(211);
        return o;
    };
    const TrainReport uninterrupted = train(odd(L{1, 8}, 128), nullptr);
    struct Pair {
        L from, to;
        int from_D, to_D;
    };
    for (const Pair& p : {Pair{L{4, 8, 0, 4}, L{1, 8}, 128, 128}, Pair{L{1, 8}, L{2, 8, 0, 2}, 128, 128},
                          Pair{L{4, 4, 3, 2}, L{4, 8, 0, 4}, 1, 128}}) {  // ZeRO-3 x TP 2 at D 1 -> TP 4 at D 128
        TrainOptions a = odd(p.from, p.from_D);
        a.steps = 5;
        a.save_every = 5;
        a.checkpoint_dir = dir_for("vocab");
        train(a, nullptr);
        // The shards hold no padding: every wte piece lies inside the V = 211 rows.
        const std::string step_dir = find_checkpoint(a.checkpoint_dir);
        for (const auto& e : fs::directory_iterator(step_dir)) {
            if (e.path().extension() != ".safetensors") continue;
            const StFile f = read_safetensors(e.path().string());
            if (!f.has("param/wte.weight")) continue;
            int tp = 0, tp_rank = 0;
            long long lo = 0, hi = 0;
            std::istringstream(f.meta("wte.weight")) >> tp >> tp_rank >> lo >> hi;
            const long long rows = padded_vocab(211, tp, p.from_D) / tp;  // the saving rank's wte rows
            INFO(e.path() << ": wte [" << lo << ", " << hi << ") of TP rank " << tp_rank << " of " << tp);
            REQUIRE(tp_rank * rows * 64 + hi <= 211 * 64);
        }
        TrainOptions b = odd(p.to, p.to_D);
        b.resume = a.checkpoint_dir;
        INFO("saved by " << describe(a) << " (D " << p.from_D << "), resumed by " << describe(b) << " (D "
                         << p.to_D << ")");
        require_same_losses(train(b, nullptr), uninterrupted, 6, 1e-4);  // tolerance as in the test above
        // consolidate writes HF's [V, C]
        const std::string out = test_file("test_ckpt_vocab_consolidated.safetensors");
        CliResult r = run_shardscope("checkpoint consolidate " + a.checkpoint_dir + " " + out);
        INFO(r.output);
        REQUIRE(r.code == 0);
        REQUIRE(read_safetensors(out).get("wte.weight").shape == Shape{211, 64});
    }
}

TEST_CASE("consolidate writes the checkpoint's parameters as one whole HF file", "[checkpoint]") {
    TrainOptions a = layout(L{4, 4, 3, 2});  // ZeRO-3 x tp 2: every tensor in pieces
    a.steps = 4;
    a.save_every = 4;
    a.checkpoint_dir = dir_for("consolidate");
    a.save = test_file("test_ckpt_consolidate_saved.safetensors");
    train(a, nullptr);
    const std::string out = test_file("test_ckpt_consolidated.safetensors");
    CliResult r = run_shardscope("checkpoint consolidate " + a.checkpoint_dir + " " + out);
    INFO(r.output);
    REQUIRE(r.code == 0);
    REQUIRE_THAT(r.output, Catch::Contains("the parameters of step 4"));
    REQUIRE(rel_max(read_safetensors(out), read_safetensors(a.save)) == 0.0);
}

TEST_CASE("a crash in the middle of a save leaves the previous checkpoint, which resumes", "[checkpoint][crash]") {
    const std::string dir = dir_for("crash");
    const std::string flags = " train --model tiny --layers 4 --ranks 4 --zero 2 --mbs 2 --ga 2 --quiet";
    // Rank 0 dies right after writing its shard of step 4, before the manifest.
    CliResult r = run_shell("SHARDSCOPE_CRASH_IN_CHECKPOINT=4 " + std::string(SS_SHARDSCOPE_EXE) + flags +
                            " --steps 6 --save-every 2 --checkpoint-dir " + dir);
    INFO(r.output);
    REQUIRE(r.code != 0);
    REQUIRE_THAT(r.output, Catch::Contains("dying in the middle of the save"));
    REQUIRE(fs::exists(dir + "/step-00000002/manifest.json"));
    REQUIRE(fs::exists(dir + "/step-00000004.partial"));
    REQUIRE(!fs::exists(dir + "/step-00000004"));
    REQUIRE(find_checkpoint(dir) == dir + "/step-00000002");
    // Resume from it: steps 3-10 as the uninterrupted run's.
    TrainOptions full = layout(L{4, 2, 2});
    const TrainReport uninterrupted = train(full, nullptr);
    TrainOptions rest = full;
    rest.resume = dir;
    require_same_losses(train(rest, nullptr), uninterrupted, 3, 0.0);
}

TEST_CASE("after an injected fault the last complete checkpoint resumes", "[checkpoint][fault]") {
    TrainOptions full = layout(L{4, 2, 3});
    const TrainReport uninterrupted = train(full, nullptr);
    TrainOptions failing = full;
    failing.save_every = 5;
    failing.checkpoint_dir = dir_for("fault");
    failing.comm_timeout = 5;
    failing.fault = parse_fault("rank=1,step=8,kind=throw");
    REQUIRE_THROWS_WITH(train(failing, nullptr), Catch::Contains("injected fault"));
    TrainOptions rest = full;
    rest.resume = failing.checkpoint_dir;
    require_same_losses(train(rest, nullptr), uninterrupted, 6, 0.0);
}

TEST_CASE("a damaged checkpoint is refused with the file named, before any rank starts", "[checkpoint][errors]") {
    TrainOptions a = layout(L{4, 2, 3});
    a.steps = 2;
    a.save_every = 2;
    a.checkpoint_dir = dir_for("damaged");
    train(a, nullptr);
    const std::string step_dir = a.checkpoint_dir + "/step-00000002";
    TrainOptions b = layout(L{4, 2, 3});
    b.resume = a.checkpoint_dir;
    auto refused = [&](const std::string& what) {
        INFO("expected: " << what);
        REQUIRE_THROWS_WITH(train(b, nullptr), Catch::Contains(what));
    };
    // Another model.
    TrainOptions other = b;
    other.model.L = 2;
    REQUIRE_THROWS_WITH(train(other, nullptr), Catch::Contains("give the same --model"));
    // A truncated shard.
    const std::string shard = step_dir + "/rank-00001.safetensors";
    const auto size = fs::file_size(shard);
    fs::copy_file(shard, shard + ".bak");
    fs::resize_file(shard, size - 100);
    refused("rank-00001.safetensors is " + std::to_string(size - 100) + " bytes but the manifest says " +
            std::to_string(size));
    // A missing shard.
    fs::remove(shard);
    refused("checkpoint shard " + shard + " is missing");
    fs::rename(shard + ".bak", shard);
    // A manifest that lists fewer files than hold the model.
    std::ifstream in(step_dir + "/manifest.json");
    nlohmann::json m = nlohmann::json::parse(in);
    in.close();
    m["files"].erase(m["files"].begin() + 2);
    std::ofstream(step_dir + "/manifest.json") << m.dump();
    refused("a shard is missing from it");
    // A corrupt manifest.
    std::ofstream(step_dir + "/manifest.json") << "{ not json";
    refused("manifest.json is not valid JSON");
    // No checkpoint at all: a folder that does not exist, an empty one, a file of a checkpoint.
    b.resume = dir_for("empty");
    refused(b.resume + " does not exist");
    fs::create_directories(b.resume);
    refused("no checkpoint there");
    b.resume = shard;
    refused(shard + " is a file, not a checkpoint folder; its folder " + step_dir + " is one: give that");
    // Options.
    TrainOptions c = base(1, 8);
    c.save_every = 2;
    REQUIRE_THROWS_WITH(train(c, nullptr), Catch::Contains("needs --checkpoint-dir"));
    TrainOptions d = base(1, 8);  // the other half: a directory and no --save-every would write nothing
    d.checkpoint_dir = dir_for("never-written");
    REQUIRE_THROWS_WITH(train(d, nullptr), Catch::Contains("without --save-every K would save nothing"));
}

// issue 14, section 4, item 2: the right size is not the right bytes.
TEST_CASE("a shard with one flipped byte is refused by --resume, consolidate and show, naming the file", "[checkpoint][errors][checksum]") {
    TrainOptions a = layout(L{4, 2, 3});
    a.steps = 2;
    a.save_every = 2;
    a.checkpoint_dir = dir_for("flipped");
    train(a, nullptr);
    const std::string step_dir = a.checkpoint_dir + "/step-00000002", shard = step_dir + "/rank-00002.safetensors";
    std::ifstream in(step_dir + "/manifest.json");
    const nlohmann::json m = nlohmann::json::parse(in);
    in.close();
    REQUIRE(m["version"] == 2);
    for (const nlohmann::json& f : m["files"]) REQUIRE(f["fnv1a64"].get<std::string>().size() == 16);
    // Flip one bit of a byte in the middle of the tensor data: same size, one weight changed.
    const auto size = fs::file_size(shard);
    {
        std::fstream f(shard, std::ios::in | std::ios::out | std::ios::binary);
        f.seekg(std::streamoff(size - 1000));
        char c = 0;
        f.read(&c, 1);
        c = char(c ^ 0x10);
        f.seekp(std::streamoff(size - 1000));
        f.write(&c, 1);
    }
    REQUIRE(fs::file_size(shard) == size);
    const std::string why = "checkpoint shard " + shard + " has checksum fnv1a64";
    TrainOptions b = layout(L{4, 2, 3});
    b.resume = a.checkpoint_dir;
    REQUIRE_THROWS_WITH(train(b, nullptr), Catch::Contains(why));
    for (const std::string& cmd : {"checkpoint consolidate " + a.checkpoint_dir + " " + test_file("test_ckpt_flipped.st"),
                                   "checkpoint show " + a.checkpoint_dir}) {
        CliResult r = run_shardscope(cmd);
        INFO(cmd << "\n" << r.output);
        CHECK(r.code == 1);
        CHECK_THAT(r.output, Catch::Contains(why));
    }
    // A manifest from before checksums (version 1) is refused as such, not read unchecked.
    nlohmann::json old = m;
    old["version"] = 1;
    for (nlohmann::json& f : old["files"]) f.erase("fnv1a64");
    std::ofstream(step_dir + "/manifest.json") << old.dump();
    REQUIRE_THROWS_WITH(train(b, nullptr), Catch::Contains("saved without checksums"));
}

TEST_CASE("fnv1a64 matches the published test vectors, and one changed byte changes it", "[checkpoint][checksum]") {
    // Test vectors of the FNV reference (draft-eastlake-fnv, and isthe.com's test suite).
    REQUIRE(fnv1a64("", 0) == 0xcbf29ce484222325ull);
    REQUIRE(fnv1a64("a", 1) == 0xaf63dc4c8601ec8cull);
    REQUIRE(fnv1a64("foobar", 6) == 0x85944171f73967e8ull);
    REQUIRE(hex64(0xcbf29ce484222325ull) == "cbf29ce484222325");
    std::string s(4096, 'x');
    const uint64_t h = fnv1a64(s.data(), s.size());
    for (size_t i : {size_t(0), size_t(1000), s.size() - 1}) {
        std::string t = s;
        t[i] = char(t[i] ^ 1);
        CHECK(fnv1a64(t.data(), t.size()) != h);
    }
}

// issue 14, section 4, item 4: one writer per checkpoint directory.
TEST_CASE("a checkpoint directory has one writer: a second is refused while the first holds it", "[checkpoint][errors][lock]") {
    const std::string dir = dir_for("locked");
    {
        CheckpointDirLock held(dir);
        REQUIRE_THROWS_WITH(CheckpointDirLock(dir), Catch::Contains("is in use: another run (pid "));
        TrainOptions o = base(1, 8);
        o.steps = 1;
        o.save_every = 1;
        o.checkpoint_dir = dir;
        REQUIRE_THROWS_WITH(train(o, nullptr), Catch::Contains("--checkpoint-dir " + dir + " is in use"));
        // As a second process would see it (flock locks belong to open files, so this holds across processes too).
        CliResult r = run_shardscope("train --model tiny --steps 1 --save-every 1 --checkpoint-dir " + dir);
        INFO(r.output);
        REQUIRE(r.code == 1);
        REQUIRE_THAT(r.output, Catch::Contains("is in use"));
        REQUIRE(!fs::exists(dir + "/latest"));
    }
    CheckpointDirLock again(dir);  // released with its holder
}

// issue 14, section 4, item 10: --save-every 1 does not keep every checkpoint.
TEST_CASE("--keep-last N keeps the newest N complete checkpoints; 0 keeps all", "[checkpoint][keep-last]") {
    auto steps_in = [](const std::string& dir) {
        std::vector<std::string> names;
        for (const auto& e : fs::directory_iterator(dir))
            if (e.path().filename().string().rfind("step-", 0) == 0) names.push_back(e.path().filename().string());
        std::sort(names.begin(), names.end());
        return names;
    };
    TrainOptions o = base(2, 4);
    o.steps = 6;
    o.save_every = 1;
    o.checkpoint_dir = dir_for("keep2");
    o.keep_last = 2;
    train(o, nullptr);
    REQUIRE(steps_in(o.checkpoint_dir) == std::vector<std::string>{"step-00000005", "step-00000006"});
    REQUIRE(find_checkpoint(o.checkpoint_dir) == o.checkpoint_dir + "/step-00000006");
    o.checkpoint_dir = dir_for("keep0");
    o.keep_last = 0;
    train(o, nullptr);
    REQUIRE(steps_in(o.checkpoint_dir).size() == 6);
    // The default keeps 3, and says so.
    REQUIRE(TrainOptions{}.keep_last == 3);
    CliResult help = run_shardscope("train --help");
    REQUIRE_THAT(help.output, Catch::Contains("--keep-last"));
    REQUIRE_THAT(help.output, Catch::Contains("--keep-last INT=3"));
    // Resuming from step 2 of the keep-all directory and saving into it: the later checkpoints
    // (steps 3-6, an older line) are left for this run to overwrite; older ones than 2 are pruned.
    TrainOptions r = o;
    r.resume = o.checkpoint_dir + "/step-00000002";
    r.steps = 3;
    r.keep_last = 2;
    train(r, nullptr);
    REQUIRE(steps_in(o.checkpoint_dir) == std::vector<std::string>{"step-00000002", "step-00000003", "step-00000004",
                                                                   "step-00000005", "step-00000006"});
    REQUIRE(find_checkpoint(o.checkpoint_dir) == o.checkpoint_dir + "/step-00000003");
    REQUIRE_THROWS_WITH([] { TrainOptions n = base(1, 8); n.keep_last = -1; train(n, nullptr); }(),
                        Catch::Contains("--keep-last must not be negative"));
}

namespace {

// Local SGD / DiLoCo on 4 ranks (2 replicas of 2 shards), syncing every 2 steps, 8 steps.
TrainOptions replicas_run(int zero, ReplicaOuter outer, DType dtype = DType::f32) {
    TrainOptions o = base(4, 2);
    o.steps = 8;
    o.zero = zero;
    o.dp_shard = 2;
    o.dp_rep = 2;
    o.dtype = dtype;
    o.replica_sync_every = 2;
    o.replica_outer = outer;
    return o;
}

}  // namespace

TEST_CASE("local SGD and DiLoCo resume at a sync: steps 5-8 and the final parameters are the uninterrupted run's, "
          "bit for bit", "[checkpoint][diloco]") {
    // Exact because the checkpoint holds everything the run depends on: the parameters
    // (equal on every replica at a sync), each replica's own Adam moments, and DiLoCo's
    // outer state (theta and the momentum).
    struct Case {
        int zero;
        ReplicaOuter outer;
        DType dtype;
    };
    for (const Case& c : {Case{1, ReplicaOuter::nesterov, DType::f32}, Case{3, ReplicaOuter::nesterov, DType::f32},
                          Case{0, ReplicaOuter::nesterov, DType::f32}, Case{2, ReplicaOuter::nesterov, DType::bf16},
                          Case{3, ReplicaOuter::avg, DType::f32}}) {
        TrainOptions full = replicas_run(c.zero, c.outer, c.dtype);
        INFO("ZeRO-" << c.zero << " " << replica_outer_name(c.outer) << " " << dtype_name(c.dtype));
        full.save = test_file("test_ckpt_diloco_full.safetensors");
        const TrainReport uninterrupted = train(full, nullptr);
        TrainOptions first = full;
        first.steps = 4;
        first.save = "";
        first.save_every = 4;
        first.checkpoint_dir = dir_for("diloco");
        train(first, nullptr);
        const Checkpoint ck = read_checkpoint(find_checkpoint(first.checkpoint_dir), first.model);
        REQUIRE(ck.replica_m.size() == 1);  // replica 1's moments, beside replica 0's
        REQUIRE(ck.outer_anchor.empty() == (c.outer == ReplicaOuter::avg));
        REQUIRE(ck.manifest["replicas"]["outer"] == replica_outer_name(c.outer));
        REQUIRE(ck.manifest["replicas"]["own_moments"] == 2);
        TrainOptions rest = full;
        rest.resume = first.checkpoint_dir;
        rest.save = test_file("test_ckpt_diloco_rest.safetensors");
        const TrainReport resumed = train(rest, nullptr);
        REQUIRE(resumed.first_step == 5);
        REQUIRE(resumed.steps.size() == 4);
        for (size_t i = 0; i < resumed.steps.size(); ++i) {
            INFO("step " << resumed.steps[i].step);
            REQUIRE(resumed.steps[i].loss == uninterrupted.steps[4 + i].loss);
        }
        const StFile a = read_safetensors(full.save), b = read_safetensors(rest.save);
        for (const auto& [name, t] : a.tensors) REQUIRE(b.get(name).bytes == t.bytes);
    }
}

TEST_CASE("DiLoCo's checkpoints cross-resume: into a run without DiLoCo and back, saying what is not continued",
          "[checkpoint][diloco][reshard]") {
    auto save_at_4 = [](TrainOptions o, const std::string& name) {
        o.steps = 4;
        o.save_every = 4;
        o.checkpoint_dir = dir_for(name);
        train(o, nullptr);
        return o.checkpoint_dir;
    };
    auto resume = [](TrainOptions o, const std::string& dir) {
        o.resume = dir;
        std::ostringstream out;
        const TrainReport r = train(o, &out);
        REQUIRE(r.first_step == 5);
        REQUIRE(std::isfinite(r.steps.back().loss));
        return out.str();
    };
    const std::string diloco = save_at_4(replicas_run(1, ReplicaOuter::nesterov), "diloco_x");
    const std::string avg = save_at_4(replicas_run(1, ReplicaOuter::avg), "avg_x");

    // DiLoCo -> local SGD (same replicas): the moments continue, the outer state is dropped.
    std::string said = resume(replicas_run(3, ReplicaOuter::avg), diloco);
    CHECK_THAT(said, Catch::Contains("the checkpoint holds DiLoCo's outer state") && Catch::Contains("--replica-outer nesterov"));
    CHECK_THAT(said, !Catch::Contains("own Adam moments"));
    // DiLoCo -> one rank: neither the outer state nor replica 1's moments have a place.
    TrainOptions one = base(1, 8);
    one.steps = 8;
    said = resume(one, diloco);
    CHECK_THAT(said, Catch::Contains("the checkpoint holds DiLoCo's outer state"));
    CHECK_THAT(said, Catch::Contains("replicas each saved their own Adam moments") && Catch::Contains("from replica 0's moments") &&
                         Catch::Contains("--dp-rep 2"));
    // Local SGD -> DiLoCo: the outer step starts from the resumed parameters.
    said = resume(replicas_run(1, ReplicaOuter::nesterov), avg);
    CHECK_THAT(said, Catch::Contains("holds no DiLoCo outer state") && Catch::Contains("momentum 0"));
    // A plain run's checkpoint (no replicas) -> DiLoCo: the same, and the replicas share the moments it saved.
    TrainOptions plain = base(4, 2);
    plain.steps = 4;
    plain.save_every = 4;
    plain.checkpoint_dir = dir_for("plain_x");
    train(plain, nullptr);
    said = resume(replicas_run(3, ReplicaOuter::nesterov), plain.checkpoint_dir);
    CHECK_THAT(said, Catch::Contains("holds no DiLoCo outer state"));
    CHECK_THAT(said, !Catch::Contains("own Adam moments"));
    // A DiLoCo checkpoint with replica 1's moments missing is refused, naming what is gone.
    const std::string step_dir = find_checkpoint(diloco);
    std::ifstream manifest(step_dir + "/manifest.json");
    nlohmann::json m = nlohmann::json::parse(manifest);
    manifest.close();
    m["replicas"]["own_moments"] = 3;  // says a third replica saved moments: none did
    std::ofstream(step_dir + "/manifest.json") << m.dump();
    REQUIRE_THROWS_WITH(read_checkpoint(step_dir, replicas_run(1, ReplicaOuter::nesterov).model),
                        Catch::Contains("no file holds exp_avg.rep2") && Catch::Contains("resume from an older one"));
}
