// schedule_cmd.cpp — `shardscope schedule`: draw a pipeline schedule (src/schedule/pipeline_schedule.h).
//
//   shardscope schedule --pp 4 --micro 8 --schedule 1f1b
//   shardscope schedule --pp 4 --ga 8 --schedule interleaved --pp-virtual 2 --actions
//
// Nothing runs: the schedule is made, checked (every forward before its
// backward, sends matching receives, no deadlock) and simulated with a
// forward of 1 and a backward of 2 time units, and the chart shows where
// each rank computes and where it waits (the bubble).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "app/commands.h"
#include "app/flag_range.h"
#include "app/layout_flags.h"
#include "core/check.h"
#include "schedule/pipeline_schedule.h"

namespace ss::app {

namespace {

// "rank 1: recv_act m0, forward m0, send_act m0, ..." (the chunk too when v > 1),
// wrapped under ~110 characters.
std::string action_lists(const PipeSchedule& s) {
    std::string out = "the lists each rank's executor walks, in order:\n";
    for (size_t r = 0; r < s.ranks.size(); ++r) {
        std::string line = "rank " + std::to_string(r) + ":";
        for (size_t i = 0; i < s.ranks[r].size(); ++i) {
            const PipeAction& a = s.ranks[r][i];
            std::string item = std::string(" ") + pipe_op_name(a.op) + " m" + std::to_string(a.micro);
            if (s.spec.v > 1) item += " c" + std::to_string(a.chunk);
            if (i + 1 < s.ranks[r].size()) item += ",";
            if (line.size() + item.size() > 110) {
                out += line + "\n";
                line = "       ";
            }
            line += item;
        }
        out += line + "\n";
    }
    return out;
}

}  // namespace

void add_schedule_command(CLI::App& root) {
    struct Options {
        PipeSpec spec;
        bool actions = false;
    };
    auto opt = std::make_shared<Options>();
    CLI::App* cmd = root.add_subcommand("schedule", "Draw a pipeline schedule (gpipe, 1f1b, interleaved) and its bubble");
    cmd->add_option("--pp", opt->spec.p, "Pipeline stages p")->required();
    cmd->add_option("--micro,--ga", opt->spec.m, "Micro-batches per step m (= gradient accumulation)")->required();
    add_schedule_flag(*cmd, opt->spec.kind);
    cmd->add_option("--pp-virtual", opt->spec.v, "Model chunks per stage v (interleaved)")->capture_default_str();
    cmd->add_flag("--actions", opt->actions, "Also print each rank's list of actions (sends and receives too)");
    for (const char* n : {"--pp", "--micro", "--pp-virtual"}) limit(*cmd, n, at_least(1, kMaxChartComputes));
    cmd->callback([opt] {
        const PipeSpec& spec = opt->spec;
        const int64_t computes = int64_t(spec.p) * spec.m * spec.v;
        SS_CHECK(computes <= kMaxChartComputes,
                 "--pp " << spec.p << " x --micro " << spec.m << " x --pp-virtual " << spec.v << " = " << computes
                         << " chunk computations is more than this chart draws (" << kMaxChartComputes
                         << "); the bubble's shape shows at small sizes: try --pp 4 --micro 8, and "
                            "`shardscope plan` for the bubble of any size");
        const PipeSchedule s = make_pipe_schedule(opt->spec);
        std::fputs(pipe_schedule_chart(s).c_str(), stdout);
        if (opt->actions) std::fputs(action_lists(s).c_str(), stdout);
    });
}

}  // namespace ss::app
