// diagram_cmd.cpp — `shardscope diagram KIND --out FILE.svg`: draw a picture from the engine's own data.
//
//   shardscope diagram zero --model tiny --ranks 4 --out docs/img/zero-stages.svg
//   shardscope diagram hpz --ranks 8 --hpz 4 --out docs/img/hpz-partitions.svg
//   shardscope diagram tp --tp 2 --out docs/img/tp-mlp.svg
//   shardscope diagram ulysses --sp 2 --out docs/img/ulysses-all-to-all.svg
//   shardscope diagram ring --sp 4 --out docs/img/ring-attention.svg
//   shardscope diagram 1f1b --pp 4 --ga 8 --schedule 1f1b --out docs/img/pipeline-1f1b.svg
//   shardscope diagram losses --run zero3=a.json --run ddp=b.json --out losses.svg
//
// The drawings are src/diagram/ (diagram.h); scripts/diagrams draws every
// picture of docs/img/, and tests/test_diagram.cpp checks they are current.
// The file is written whole or not at all (core/atomic_file.h).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "app/commands.h"
#include "app/layout_flags.h"
#include "app/model_flags.h"
#include "core/atomic_file.h"
#include "core/check.h"
#include "core/output_path.h"
#include "diagram/diagram.h"

namespace ss::app {

void add_diagram_command(CLI::App& root) {
    struct Options {
        std::string kind, out;
        RingSplit ring_split = RingSplit::zigzag;  // ring: --ring-split
        ModelFlags model;
        int ranks = 4, hpz = 2, tp = 2, sp = 2, tokens = 8;  // hpz: K < N, as the picture needs
        PipeSpec spec{Schedule::one_f_one_b, 4, 8, 1};
        std::vector<std::string> runs;
    };
    auto opt = std::make_shared<Options>();
    CLI::App* cmd = root.add_subcommand("diagram", "Draw a picture of a mechanism (SVG) from the engine's own data");
    cmd->add_option("kind", opt->kind, "zero, hpz, tp, ulysses, ring, 1f1b (any pipeline schedule) or losses")
        ->required();
    cmd->add_option("--out", opt->out, "The SVG file to write")->required();
    add_model_flags(*cmd, opt->model);
    cmd->add_option("--ranks", opt->ranks, "zero, hpz: ranks N of the shard group")->capture_default_str();
    cmd->add_option("--hpz", opt->hpz, "hpz: ranks K of a secondary group")->capture_default_str();
    cmd->add_option("--tp", opt->tp, "tp: tensor-parallel ranks")->capture_default_str();
    // --sp's default is the picture's: 2 for ulysses, 4 for ring.
    CLI::Option* sp_flag =
        cmd->add_option("--sp", opt->sp, "ulysses, ring: sequence-parallel ranks (default 2, ring 4)");
    cmd->add_option("--tokens", opt->tokens, "ulysses: tokens T of the sequence drawn")->capture_default_str();
    cmd->add_option("--pp", opt->spec.p, "1f1b: pipeline stages p")->capture_default_str();
    cmd->add_option("--ga,--micro", opt->spec.m, "1f1b: micro-batches m")->capture_default_str();
    add_schedule_flag(*cmd, opt->spec.kind);
    add_ring_split_flag(*cmd, opt->ring_split);
    cmd->add_option("--pp-virtual", opt->spec.v, "1f1b: model chunks per stage v (interleaved)")->capture_default_str();
    cmd->add_option("--run", opt->runs, "losses: LABEL=FILE.json, a `shardscope train --json` report (repeat)");
    cmd->callback([opt, sp_flag] {
        const std::string& k = opt->kind;
        diagram::Svg svg(1, 1);
        if (k == "losses") {
            SS_CHECK(!opt->runs.empty(), "diagram losses needs at least one --run LABEL=FILE.json "
                                         "(a report of `shardscope train --json FILE.json`)");
            std::vector<diagram::LossRun> runs;
            for (const std::string& r : opt->runs) {
                const size_t eq = r.find('=');
                SS_CHECK(eq != std::string::npos && eq > 0 && eq + 1 < r.size(),
                         "--run " << r << ": write it as LABEL=FILE.json, e.g. --run zero3=out/zero3.json");
                runs.push_back(diagram::read_loss_report(r.substr(0, eq), r.substr(eq + 1)));
            }
            svg = diagram::draw_losses(runs);
        } else {
            const GPT2Config cfg = opt->model.resolve();
            if (k == "zero") svg = diagram::draw_zero_stages(cfg, opt->ranks);
            else if (k == "hpz") svg = diagram::draw_hpz_partitions(cfg, opt->ranks, opt->hpz);
            else if (k == "tp") svg = diagram::draw_tp_mlp(cfg, opt->tp);
            else if (k == "ulysses") svg = diagram::draw_ulysses(cfg, opt->sp, opt->tokens);
            else if (k == "ring") svg = diagram::draw_ring(cfg, sp_flag->count() ? opt->sp : 4, opt->ring_split);
            else if (k == "1f1b" || k == "pipeline") svg = diagram::draw_pipeline(opt->spec);
            else SS_FAIL("diagram " << k << ": no such picture; choose zero, hpz, tp, ulysses, ring, 1f1b or losses");
        }
        // After the drawing's own checks: a refused picture leaves no folder behind.
        check_writable_file("--out", opt->out);
        const std::string bytes = svg.str();
        write_file_atomically(opt->out, [&](std::ostream& os) { os << bytes; });
        std::printf("wrote %s (%d x %d)\n", opt->out.c_str(), svg.width(), svg.height());
    });
}

}  // namespace ss::app
