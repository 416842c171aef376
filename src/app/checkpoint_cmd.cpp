// checkpoint_cmd.cpp — `shardscope checkpoint`: what is in a checkpoint, and
// one whole HF file from its shards.
//
//   shardscope checkpoint consolidate out/ckpt out/model.safetensors
//   shardscope checkpoint show out/ckpt
//
// The format and its promises are in src/train/sharded_checkpoint.h.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "core/check.h"
#include "train/sharded_checkpoint.h"

namespace ss::app {

void add_checkpoint_command(CLI::App& root) {
    struct Options {
        std::string dir, out;
    };
    auto opt = std::make_shared<Options>();
    CLI::App* cmd = root.add_subcommand("checkpoint", "Inspect or consolidate a sharded checkpoint (--save-every)");
    cmd->require_subcommand(1);

    CLI::App* cons = cmd->add_subcommand("consolidate", "Write a checkpoint's parameters as one HF safetensors file");
    cons->add_option("dir", opt->dir, "A --checkpoint-dir (its latest step) or one step-N directory")->required();
    cons->add_option("out", opt->out, "The safetensors file to write (HF GPT-2 names, whole tensors)")->required();
    cons->callback([opt] {
        const int step = consolidate_checkpoint(opt->dir, opt->out);
        std::cout << "wrote " << opt->out << ": the parameters of step " << step << " of " << find_checkpoint(opt->dir)
                  << " as whole HF tensors\n";
    });

    CLI::App* show = cmd->add_subcommand("show", "Print a checkpoint's manifest: step, model, layout, files");
    show->add_option("dir", opt->dir, "A --checkpoint-dir (its latest step) or one step-N directory")->required();
    show->callback([opt] {
        const std::string step_dir = find_checkpoint(opt->dir);
        std::ifstream f(step_dir + "/manifest.json");
        SS_CHECK(f.good(), "cannot open " << step_dir << "/manifest.json");
        nlohmann::json m;
        try {
            m = nlohmann::json::parse(f);
        } catch (const nlohmann::json::exception& e) {
            SS_FAIL(step_dir << "/manifest.json is not valid JSON (" << e.what() << ")");
        }
        const Checkpoint ck = read_checkpoint(step_dir, checkpoint_model(m));  // every shard checked
        std::cout << "checkpoint " << step_dir << ": step " << ck.step << ", " << dtype_name(ck.dtype) << ", "
                  << m["files"].size() << " shard files, every element of the model present\n";
        std::cout << "model: " << m["model"].dump() << "\nlayout: " << m.value("layout", nlohmann::json()).dump()
                  << "\ndata: " << m.value("data", nlohmann::json()).dump() << "\n";
        if (m.contains("replicas"))  // how the replicas synced (local SGD, DiLoCo) and who saved moments
            std::cout << "replicas: " << m["replicas"].dump() << "\n";
    });
}

}  // namespace ss::app
