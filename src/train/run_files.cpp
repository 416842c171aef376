// run_files.cpp — a run's outputs tried, and compared with each other and its inputs (see run_files.h).
#include "train/run_files.h"

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/output_path.h"
#include "train/sharded_checkpoint.h"

namespace ss {

namespace fs = std::filesystem;

void check_run_files(const TrainOptions& o) {
    using Named = std::pair<std::string, std::string>;  // (flag, path)
    std::vector<Named> out_files, in_files;
    for (const Named& f : {Named{"--save", o.save}, Named{"--json", o.json}, Named{"--trace", o.trace},
                           Named{"--dump-grads", o.dump_grads}})
        if (!f.second.empty()) out_files.push_back(f);
    for (const Named& f : {Named{"--init", o.init}, Named{"--data", o.data}})
        if (!f.second.empty()) in_files.push_back(f);
    const bool saves_checkpoints = o.save_every > 0 && !o.checkpoint_dir.empty();

    // 1. No output over another output, nor over an input.
    std::vector<Named> outs = out_files;
    if (saves_checkpoints) outs.push_back({"--checkpoint-dir", o.checkpoint_dir});
    for (size_t i = 0; i < outs.size(); ++i)
        for (size_t j = i + 1; j < outs.size(); ++j)
            SS_CHECK(!same_path(outs[i].second, outs[j].second),
                     outs[i].first << " " << outs[i].second << " and " << outs[j].first << " " << outs[j].second
                                   << " name the same path: one would overwrite the other; give each its own");
    for (const Named& out : outs) {
        for (const Named& in : in_files)
            SS_CHECK(!same_path(out.second, in.second),
                     out.first << " " << out.second << " is also the " << in.first << " input: writing it would "
                               << "replace what the run reads; write to another path");
        if (!o.resume.empty() && out.first != "--checkpoint-dir")
            SS_CHECK(!checkpoint_owns_path(o.resume, out.second),
                     out.first << " " << out.second << " lies inside the --resume checkpoint " << o.resume
                               << ": writing it would change the checkpoint; write it outside");
    }
    if (saves_checkpoints)
        for (const Named& out : out_files)
            SS_CHECK(!checkpoint_owns_path(o.checkpoint_dir, out.second),
                     out.first << " " << out.second << " lies inside a checkpoint of --checkpoint-dir "
                               << o.checkpoint_dir << " (its step directories and latest are the checkpoints'); "
                               << "write it elsewhere");

    // A checkpoint directory of its own: not inside a step directory (one holding a
    // manifest.json), where `latest` and new steps would mix with a checkpoint and
    // --resume of that step would find the old manifest first.
    if (saves_checkpoints)
        for (fs::path at = fs::absolute(o.checkpoint_dir).lexically_normal(); !at.empty(); at = at.parent_path()) {
            std::error_code ec;
            SS_CHECK(!fs::exists(at / "manifest.json", ec),
                     "--checkpoint-dir " << o.checkpoint_dir << " lies inside the checkpoint " << at.string()
                                         << " (it holds a manifest.json): its steps would mix with that checkpoint; "
                                         << "give a directory outside it");
            if (at == at.root_path()) break;
        }

    // 2. Every output can be written, now rather than after the last step.
    for (const Named& out : out_files) check_writable_file(out.first, out.second);
    if (saves_checkpoints) check_writable_dir("--checkpoint-dir", o.checkpoint_dir);
}

}  // namespace ss
