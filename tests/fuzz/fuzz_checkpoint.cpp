// fuzz_checkpoint.cpp — any bytes as a checkpoint's manifest.json
// (src/train/sharded_checkpoint.h: what `train --resume` and `shardscope
// checkpoint` read), beside one valid shard file of a one-block model
// (L=1, C=4, H=1, V=8, maxT=4) that the target writes at start.
//
// The seeds (corpus/checkpoint/) are manifests that list that shard with its
// true size and checksum, so mutations reach the file checks, the shard's metadata and the
// coverage check, not only the JSON parser. They come from the target itself:
// SHARDSCOPE_FUZZ_WRITE_SEED=path fuzz_checkpoint writes a valid manifest there
// and exits (tests/fuzz/make_seeds.py calls it when given the built target).
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/checksum.h"
#include "fuzz_util.h"
#include "model/params.h"
#include "model/safetensors.h"
#include "train/sharded_checkpoint.h"

namespace {

ss::GPT2Config model() {
    ss::GPT2Config cfg;
    cfg.name = "fuzz";
    cfg.L = 1, cfg.C = 4, cfg.H = 1, cfg.V = 8, cfg.maxT = 4;
    return cfg;
}

// One rank's whole model, as save_checkpoint writes it for a one-rank run.
std::string write_shard(const std::string& dir) {
    const ss::ParamLayout lay = ss::make_param_layout(model());
    ss::StFile f;
    for (const ss::ParamSpec& s : lay.specs) {
        std::vector<float> v(size_t(s.numel), 0.5f);
        for (const char* kind : {"param", "exp_avg", "exp_avg_sq"})
            f.put(ss::st_from_f32(std::string(kind) + "/" + s.name, {s.numel}, v));
        f.metadata[s.name] = "1 0 0 " + std::to_string(s.numel);
    }
    f.metadata["format"] = "shardscope-checkpoint";
    const std::string path = dir + "/rank-00000.safetensors";
    ss::write_safetensors(path, f);
    return path;
}

std::string g_dir;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    g_dir = ss::fuzz::scratch_path("-checkpoint");
    std::filesystem::create_directories(g_dir);
    const std::string shard = write_shard(g_dir);
    if (const char* seed = std::getenv("SHARDSCOPE_FUZZ_WRITE_SEED")) {
        const ss::GPT2Config c = model();
        nlohmann::json m = {{"format", "shardscope-checkpoint"}, {"version", 2}, {"step", 3}, {"adam_t", 3},
                            {"dtype", "fp32"},
                            {"model", {{"name", c.name}, {"L", c.L}, {"C", c.C}, {"H", c.H}, {"V", c.V}, {"maxT", c.maxT}}},
                            {"layout", {{"world", 1}, {"zero", 0}}},
                            {"data", {{"T", 4}, {"ga", 1}, {"global_micro_batch", 2}, {"sequences_done", 6}}},
                            {"files", {{{"name", "rank-00000.safetensors"}, {"rank", 0},
                                        {"bytes", std::filesystem::file_size(shard)},
                                        {"fnv1a64", ss::hex64(ss::fnv1a64_file(shard))}}}}};
        std::ofstream(seed) << m.dump(1) << "\n";
        std::exit(0);
    }
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    ss::fuzz::write_bytes(g_dir + "/manifest.json", data, size);
    try {
        const std::string step_dir = ss::find_checkpoint(g_dir);
        ss::read_checkpoint(step_dir, model());
    } catch (const ss::Error&) {
    }
    return 0;
}
