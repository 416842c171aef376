// sharded_checkpoint.cpp — save, find, read and consolidate sharded
// checkpoints. The layout on disk and the promises are in sharded_checkpoint.h.
#include "train/sharded_checkpoint.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/atomic_file.h"
#include "core/checksum.h"
#include "core/output_path.h"
#include "core/check.h"
#include "model/checkpoint.h"
#include "model/finite.h"
#include "model/params.h"
#include "model/safetensors.h"
#include "train/checkpoint_lock.h"

namespace ss {

namespace fs = std::filesystem;

namespace {

const char* const kFormat = "shardscope-checkpoint";
// 2: every file in the manifest carries its FNV-1a 64 ("fnv1a64", core/checksum.h).
const int kVersion = 2;
const char* const kKinds[] = {"param", "master", "exp_avg", "exp_avg_sq"};
// Saved beside them by some runs only, each either absent or covering the whole model.
const char* const kOuterKinds[] = {"outer_anchor", "outer_momentum"};  // DiLoCo

// How many replicas saved Adam moments of their own (the manifest's "replicas", local SGD), else 0.
int replicas_with_own_moments(const nlohmann::json& man) {
    if (!man.contains("replicas")) return 0;
    return man.at("replicas").value("own_moments", 0);
}

std::string rank_file(int rank) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "rank-%05d.safetensors", rank);
    return buf;
}

nlohmann::json read_json(const std::string& path) {
    std::ifstream f(path);
    SS_CHECK(f.good(), "cannot open " << path);
    try {
        return nlohmann::json::parse(f);
    } catch (const nlohmann::json::exception& e) {
        SS_FAIL(path << " is not valid JSON (" << e.what() << "): the checkpoint is corrupt; resume from an older one");
    }
}

// For tests of "a crash between shard writes": SHARDSCOPE_CRASH_IN_CHECKPOINT=S
// makes rank 0 die right after writing its shard of step S's checkpoint.
void maybe_crash(int rank, int step) {
    const char* v = std::getenv("SHARDSCOPE_CRASH_IN_CHECKPOINT");
    if (rank == 0 && v && std::atoi(v) == step) {
        std::fprintf(stderr, "shardscope: SHARDSCOPE_CRASH_IN_CHECKPOINT=%d: dying in the middle of the save\n", step);
        std::_Exit(9);
    }
}

}  // namespace

std::string checkpoint_step_name(int step) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "step-%08d", step);
    return buf;
}

void save_checkpoint(Comm& comm, const PipelineRank& pipe, const std::string& dir, int step,
                     const nlohmann::json& run) {
    const std::string final_dir = dir + "/" + checkpoint_step_name(step), partial = final_dir + ".partial";
    const Label label{Payload::scalar, -1, Phase::none, -1, step};
    const Group world = comm.world_group();
    if (comm.rank() == 0) {
        std::error_code ec;
        fs::remove_all(partial, ec);  // what a crashed save left
        fs::create_directories(partial, ec);
        SS_CHECK(!ec, "cannot create the checkpoint directory " << partial << ": " << ec.message());
    }
    comm.barrier(world, label);
    // 1. Every rank writes what it owns (one copy of each element across the run).
    int32_t wrote = 0;
    if (pipe.checkpoint_writer()) {
        StFile f;
        pipe.checkpoint_pieces(f);
        // Never a checkpoint of a broken model: a rank that finds a nan or inf throws
        // before writing, the others stop at the all_gather below, no manifest is
        // written and `latest` keeps pointing at the previous checkpoint.
        if (const NonFinite bad = find_nonfinite(f))
            SS_FAIL("step " << step << ": rank " << comm.rank() << " would save a non-finite value, " << bad.str()
                            << "; the checkpoint is not written and " << dir << "/latest is unchanged. Lower --lr");
        f.metadata["format"] = kFormat;
        write_safetensors(partial + "/" + rank_file(comm.rank()), f);
        wrote = 1;
    }
    maybe_crash(comm.rank(), step);
    std::vector<int32_t> writers(size_t(comm.world_size()));
    comm.all_gather(&wrote, writers.data(), 1, DType::i32, world, label);  // also: every file is complete
    // 2. Rank 0: the manifest, then the directory's real name, then latest.
    if (comm.rank() == 0) {
        nlohmann::json m = run;
        m["format"] = kFormat;
        m["version"] = kVersion;
        m["step"] = step;
        nlohmann::json files = nlohmann::json::array();
        for (int r = 0; r < comm.world_size(); ++r)
            if (writers[size_t(r)])
                files.push_back({{"name", rank_file(r)}, {"rank", r},
                                 {"bytes", fs::file_size(partial + "/" + rank_file(r))},
                                 {"fnv1a64", hex64(fnv1a64_file(partial + "/" + rank_file(r)))}});
        m["files"] = files;
        write_json_file(partial + "/manifest.json", m);
        std::error_code ec;
        fs::remove_all(final_dir, ec);  // an older save of the same step (a rerun)
        fs::rename(partial, final_dir, ec);
        SS_CHECK(!ec, "cannot rename " << partial << " to " << final_dir << ": " << ec.message());
        write_file_atomically(dir + "/latest", [&](std::ostream& os) { os << checkpoint_step_name(step) << "\n"; });
    }
    comm.barrier(world, label);
}

namespace {

// The step of a complete checkpoint directory called @p name ("step-00000010" with a
// manifest.json), or -1 for anything else (step-N.partial, latest, the lock file).
int complete_step(const fs::path& dir, const std::string& name) {
    const std::string prefix = "step-";
    if (name.size() != prefix.size() + 8 || name.compare(0, prefix.size(), prefix) != 0) return -1;
    for (size_t i = prefix.size(); i < name.size(); ++i)
        if (name[i] < '0' || name[i] > '9') return -1;
    std::error_code ec;
    if (!fs::exists(dir / name / "manifest.json", ec)) return -1;
    return std::stoi(name.substr(prefix.size()));
}

// "step-00000002, step-00000004": the step directories of @p dir that hold a
// manifest, in order; "none" when there are none. What to point `latest` at,
// or to pass as the checkpoint, when `latest` is wrong.
std::string complete_steps(const std::string& dir) {
    std::vector<std::string> names;
    std::error_code ec;
    for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
        const std::string name = e.path().filename().string();
        if (complete_step(dir, name) >= 0) names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    std::string out;
    for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
    return out.empty() ? "none" : out;
}

}  // namespace

int prune_checkpoints(const std::string& dir, int newest_step, int keep) {
    if (keep <= 0) return 0;
    std::vector<int> older;  // complete checkpoints before the newest
    std::error_code ec;
    for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
        const int step = complete_step(dir, e.path().filename().string());
        if (step >= 0 && step < newest_step) older.push_back(step);
    }
    std::sort(older.begin(), older.end());
    const size_t keep_older = size_t(keep - 1);  // the newest itself is one of the kept
    int deleted = 0;
    for (size_t i = 0; i + keep_older < older.size(); ++i) {
        fs::remove_all(fs::path(dir) / checkpoint_step_name(older[i]), ec);
        SS_CHECK(!ec, "--keep-last: cannot delete " << dir << "/" << checkpoint_step_name(older[i]) << ": "
                                                    << ec.message());
        ++deleted;
    }
    return deleted;
}

bool checkpoint_owns_path(const std::string& dir, const std::string& path) {
    std::error_code ec;
    if (fs::exists(fs::path(dir) / "manifest.json", ec)) return path_within(path, dir);  // one step directory
    if (same_path(path, dir + "/latest") || same_path(path, CheckpointDirLock::path_in(dir))) return true;
    if (!path_within(path, dir) || same_path(path, dir)) return false;
    // The first component below dir: a step directory (complete, partial or not yet written)?
    const std::string rel = canonical_path(path).substr(canonical_path(dir).size() + 1);
    return rel.compare(0, 5, "step-") == 0;
}

std::string find_checkpoint(const std::string& dir) {
    if (fs::exists(dir + "/manifest.json")) return dir;
    std::error_code ec;
    const std::string hint = "give the --checkpoint-dir of a run that saved with --save-every, or one step-N in it";
    SS_CHECK(fs::exists(dir, ec), dir << " does not exist; " << hint);
    if (fs::is_regular_file(dir, ec)) {  // a file of a checkpoint, typed for its folder
        const std::string parent = fs::path(dir).parent_path().string();
        SS_FAIL(dir << " is a file, not a checkpoint folder; "
                    << (fs::exists(fs::path(parent) / "manifest.json", ec) ? "its folder " + parent + " is one: give that"
                                                                            : hint));
    }
    const std::string latest = dir + "/latest";
    std::ifstream f(latest);
    SS_CHECK(f.good(), dir << ": no checkpoint there (neither " << dir << "/manifest.json nor " << latest
                           << "); " << hint);
    std::string name;
    f >> name;
    SS_CHECK(!name.empty() && name.find('/') == std::string::npos,
             latest << " does not name a step directory (it says '" << name << "'); the complete steps in " << dir
                    << ": " << complete_steps(dir) << " (give one of them as the checkpoint)");
    const std::string step_dir = dir + "/" + name;
    SS_CHECK(fs::exists(step_dir + "/manifest.json"),
             latest << " names " << name << " but " << step_dir << "/manifest.json does not exist; the complete steps in "
                    << dir << ": " << complete_steps(dir) << " (give one of them as the checkpoint)");
    return step_dir;
}

GPT2Config checkpoint_model(const nlohmann::json& manifest) {
    try {
        const nlohmann::json& j = manifest.at("model");
        GPT2Config c = model_preset("tiny");
        c.name = j.at("name").get<std::string>();
        c.L = j.at("L").get<int>();
        c.C = j.at("C").get<int>();
        c.H = j.at("H").get<int>();
        c.V = j.at("V").get<int>();
        c.maxT = j.at("maxT").get<int>();
        // How the saving run padded wte's TP slices; absent before padding existed, when
        // TP had to divide V, which is padding to a multiple of 1 x TP.
        c.vocab_divisible_by = manifest.value("vocab_divisible_by", 1);
        validate(c);
        return c;
    } catch (const nlohmann::json::exception& e) {
        SS_FAIL("the checkpoint's manifest has no valid \"model\" (" << e.what() << ")");
    }
}

namespace {

Checkpoint read_checkpoint_json_unchecked(const std::string& step_dir, const GPT2Config& cfg) {
    Checkpoint ck;
    ck.dir = step_dir;
    const std::string mpath = step_dir + "/manifest.json";
    ck.manifest = read_json(mpath);
    const nlohmann::json& man = ck.manifest;
    SS_CHECK(man.value("format", "") == kFormat, mpath << " is not a ShardScope checkpoint manifest");
    SS_CHECK(man.value("version", 0) >= kVersion,
             mpath << " is version " << man.value("version", 0) << ", saved without checksums of its files; this "
                   << "build checks every file and reads version " << kVersion << "; use the build that wrote "
                   << "it, or train again with this one");
    const GPT2Config saved = checkpoint_model(man);
    SS_CHECK(saved.L == cfg.L && saved.C == cfg.C && saved.H == cfg.H && saved.V == cfg.V && saved.maxT == cfg.maxT,
             "the checkpoint in " << step_dir << " is of a model with L=" << saved.L << " C=" << saved.C
                                  << " H=" << saved.H << " V=" << saved.V << " maxT=" << saved.maxT
                                  << " but this run's has L=" << cfg.L << " C=" << cfg.C << " H=" << cfg.H
                                  << " V=" << cfg.V << " maxT=" << cfg.maxT << "; give the same --model (and "
                                  << "--layers, --dim, ...) as the run that saved it");
    try {
        ck.step = man.at("step").get<int>();
        ck.adam_t = man.at("adam_t").get<int>();
        ck.dtype = parse_dtype(man.at("dtype").get<std::string>());
    } catch (const nlohmann::json::exception& e) {
        SS_FAIL(mpath << " lacks step, adam_t or dtype (" << e.what() << ")");
    }
    const ParamLayout global = make_param_layout(cfg);
    const size_t P = size_t(global.total);
    std::map<std::string, std::vector<float>> whole;  // kind -> whole model
    std::vector<uint8_t> covered(P, 0);
    // The kinds beyond kKinds this checkpoint may hold, each with the elements it covers.
    std::vector<std::string> extra(std::begin(kOuterKinds), std::end(kOuterKinds));
    const int own_moments = replicas_with_own_moments(man);
    SS_CHECK(own_moments >= 0 && own_moments <= 1 << 16, mpath << ": replicas.own_moments is " << own_moments);
    for (int r = 1; r < own_moments; ++r)
        for (const char* kind : {"exp_avg", "exp_avg_sq"}) extra.push_back(std::string(kind) + ".rep" + std::to_string(r));
    std::map<std::string, std::vector<bool>> extra_covered;  // kind -> elements placed
    std::map<std::pair<int, int>, ParamLayout> tp_layouts;  // (tp, tp_rank) -> its slice's specs
    const nlohmann::json files = man.value("files", nlohmann::json::array());
    SS_CHECK(files.is_array() && !files.empty(), mpath << " lists no shard files");
    for (const nlohmann::json& fj : files) {
        const std::string name = fj.value("name", ""), path = step_dir + "/" + name;
        SS_CHECK(!name.empty() && name.find('/') == std::string::npos, mpath << " lists a bad file name '" << name << "'");
        SS_CHECK(fs::exists(path), "checkpoint shard " << path << " is missing (the manifest lists it): the "
                                                       << "checkpoint is incomplete; resume from an older one");
        const uintmax_t want = fj.value("bytes", uintmax_t(0)), got = fs::file_size(path);
        SS_CHECK(got == want, "checkpoint shard " << path << " is " << got << " bytes but the manifest says "
                                                  << want << ": it was truncated or replaced; resume from an older one");
        // The right size is not the right bytes: one flipped bit in a weight loads quietly
        // and the run goes nan. The checksum catches any changed byte (core/checksum.h).
        const std::string want_sum = fj.value("fnv1a64", ""), got_sum = hex64(fnv1a64_file(path));
        SS_CHECK(got_sum == want_sum, "checkpoint shard " << path << " has checksum fnv1a64 " << got_sum
                                          << " but the manifest says '" << want_sum << "': its bytes changed after "
                                          << "the save (a damaged disk or copy); resume from an older checkpoint");
        const StFile f = read_safetensors(path);
        for (const auto& [tensor, where] : f.metadata) {
            if (tensor == "format") continue;
            int tp = 0, tp_rank = 0;
            int64_t lo = 0, hi = 0;
            std::istringstream is(where);
            SS_CHECK(bool(is >> tp >> tp_rank >> lo >> hi) && tp >= 1 && tp <= 1 << 16 && tp_rank >= 0 &&
                         tp_rank < tp && 0 <= lo && lo <= hi,
                     path << ": metadata for " << tensor << " is '" << where << "', not 'tp tp_rank lo hi'");
            auto it = tp_layouts.find({tp, tp_rank});
            if (it == tp_layouts.end()) it = tp_layouts.emplace(std::make_pair(tp, tp_rank), make_param_layout(saved, tp, tp_rank)).first;
            const ParamSpec* spec = it->second.find(tensor);
            SS_CHECK(spec && hi <= spec->numel, path << ": " << tensor << " [" << lo << ", " << hi
                                                     << ") is not part of this model's TP " << tp << " slice");
            const int64_t base = global.get(tensor).offset;
            auto place = [&](const std::string& kind, const std::string& key) {
                const std::vector<float> vals = st_to_f32(f.get(key));
                SS_CHECK(int64_t(vals.size()) == hi - lo, path << ": " << key << " has " << vals.size()
                                                               << " values for the range [" << lo << ", " << hi << ")");
                std::vector<float>& w = whole[kind];
                if (w.empty()) w.assign(P, 0.0f);
                for (int64_t i = lo; i < hi; ++i)
                    if (spec->global_index(i) >= 0) w[size_t(base + spec->global_index(i))] = vals[size_t(i - lo)];
            };
            // A file holds the model's state (param, ...) for a range, or (local SGD) only a
            // replica's own moments for it.
            const bool holds_params = f.has("param/" + tensor);
            for (const char* kind : kKinds) {
                if (!holds_params) break;
                const std::string key = std::string(kind) + "/" + tensor;
                if (!f.has(key)) {
                    SS_CHECK(std::string(kind) == "master", path << " has no " << key);
                    continue;
                }
                place(kind, key);
            }
            for (const std::string& kind : extra) {
                const std::string key = kind + "/" + tensor;
                if (!f.has(key)) continue;
                place(kind, key);
                std::vector<bool>& c = extra_covered[kind];
                if (c.empty()) c.assign(P, false);
                for (int64_t i = lo; i < hi; ++i)
                    if (spec->global_index(i) >= 0) c[size_t(base + spec->global_index(i))] = true;
            }
            if (holds_params)
                for (int64_t i = lo; i < hi; ++i)
                    if (spec->global_index(i) >= 0) covered[size_t(base + spec->global_index(i))] = 1;
        }
    }
    for (const ParamSpec& s : global.specs)
        for (int64_t i = 0; i < s.unpadded_numel(); ++i)  // wte's padding rows are in no file
            SS_CHECK(covered[size_t(s.offset + i)], "the checkpoint in " << step_dir << " holds no value for element "
                                                    << i << " of " << s.name << ": a shard is missing from it; "
                                                    << "resume from an older one");
    // An extra kind is all there or not there: a replica's moments must be, the outer state may be absent.
    for (const std::string& kind : extra) {
        const bool replica_kind = kind.find(".rep") != std::string::npos;
        auto it = extra_covered.find(kind);
        if (it == extra_covered.end()) {
            SS_CHECK(!replica_kind, "the checkpoint in " << step_dir << " says " << own_moments << " replicas saved "
                                        << "their own Adam moments, and no file holds " << kind
                                        << ": a shard is missing from it; resume from an older one");
            continue;
        }
        for (const ParamSpec& s : global.specs)
            for (int64_t i = 0; i < s.unpadded_numel(); ++i)
                SS_CHECK(it->second[size_t(s.offset + i)], "the checkpoint in " << step_dir << " holds no " << kind
                                                           << " for element " << i << " of " << s.name
                                                           << ": a shard is missing from it; resume from an older one");
    }
    SS_CHECK(whole.count("outer_anchor") == whole.count("outer_momentum"),
             "the checkpoint in " << step_dir << " holds only one of DiLoCo's outer_anchor and outer_momentum: a "
                                  << "shard is damaged; resume from an older one");
    ck.master = whole.count("master") ? std::move(whole["master"]) : std::move(whole["param"]);
    ck.m = std::move(whole["exp_avg"]);
    ck.v = std::move(whole["exp_avg_sq"]);
    if (whole.count("outer_anchor")) {
        ck.outer_anchor = std::move(whole["outer_anchor"]);
        ck.outer_momentum = std::move(whole["outer_momentum"]);
    }
    for (int r = 1; r < own_moments; ++r) {
        ck.replica_m.push_back(std::move(whole["exp_avg.rep" + std::to_string(r)]));
        ck.replica_v.push_back(std::move(whole["exp_avg_sq.rep" + std::to_string(r)]));
    }
    return ck;
}

}  // namespace

Checkpoint read_checkpoint(const std::string& step_dir, const GPT2Config& cfg) {
    // Every field of the manifest is checked where it is used; one that has
    // the wrong JSON type (a number where an object belongs, ...) ends here.
    try {
        return read_checkpoint_json_unchecked(step_dir, cfg);
    } catch (const nlohmann::json::exception& e) {
        SS_FAIL(step_dir << "/manifest.json is malformed (" << e.what()
                         << "): the checkpoint is corrupt; resume from an older one");
    }
}

int consolidate_checkpoint(const std::string& dir, const std::string& out) {
    const std::string step_dir = find_checkpoint(dir);
    SS_CHECK(!checkpoint_owns_path(dir, out) && !checkpoint_owns_path(step_dir, out),
             "checkpoint consolidate: the output " << out << " lies inside the checkpoint it reads (" << step_dir
                 << "); writing it would replace part of the checkpoint. Write it outside " << dir);
    check_writable_file("checkpoint consolidate: the output", out);
    const GPT2Config cfg = checkpoint_model(read_json(step_dir + "/manifest.json"));
    const Checkpoint ck = read_checkpoint(step_dir, cfg);
    save_params(cfg, make_param_layout(cfg), ck.master.data(), ck.dtype, out);
    return ck.step;
}

}  // namespace ss
