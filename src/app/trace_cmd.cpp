// trace_cmd.cpp — `shardscope trace`: look inside a trace written by `train --trace`.
//
//   shardscope trace summary out/trace.json
//   shardscope trace summary out/trace.json --rank 0 --step 2 --exact
//   shardscope trace summary out/trace.json --gpus-per-node 4
//   shardscope trace summary out/trace.json --top 5
//
// prints, per axis, op and payload, the calls, bytes, time and nccl-tests'
// algbw/busbw, then totals per payload; where the trace knows its ranks per
// node (or --gpus-per-node says), per rank and step what crosses nodes
// (src/comm/trace/trace_nodes.h); then per rank and step how much of the
// communication hid under compute (src/comm/trace/trace_overlap.h); the whole
// run's measured step time beside the planner's prediction for its layout
// (src/comm/trace/trace_prediction.h); with --top N, last, the N largest calls
// one by one. A run on emulated links says so first. The adding up is in
// src/comm/trace/trace_summary.cpp; the file format in docs/trace-format.md.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "app/commands.h"
#include "app/flag_range.h"
#include "comm/trace/trace.h"
#include "comm/trace/trace_check.h"
#include "comm/trace/trace_summary.h"

namespace ss::app {

void add_trace_command(CLI::App& root) {
    CLI::App* cmd = root.add_subcommand("trace", "Inspect a trace written by `shardscope train --trace FILE`");
    cmd->require_subcommand(1);

    auto file = std::make_shared<std::string>();
    CLI::App* summary = cmd->add_subcommand(
        "summary", "Per axis, op and payload: calls, bytes, time, algbw and busbw; totals per payload; overlap per rank and step; "
        "the step time beside the planner's prediction");
    auto filter = std::make_shared<TraceFilter>();
    auto exact = std::make_shared<bool>(false);
    auto gpus_per_node = std::make_shared<int>(0);
    auto top = std::make_shared<int>(0);
    summary->add_option("FILE", *file, "A Chrome trace (JSON) written by shardscope")->required();
    summary->add_option("--rank", filter->rank, "Only this rank's events");
    summary->add_option("--step", filter->step, "Only events of this training step");
    summary->add_flag("--exact", *exact, "Bytes as exact integers");
    summary->add_option("--gpus-per-node", *gpus_per_node,
                        "Count what crosses nodes of N consecutive ranks (default: the trace's own, written by a "
                        "run with --gpus-per-node or --emulate; none: no such counts)");
    summary->add_option("--top", *top,
                        "Then list the N largest calls (each rank's own side of one, a call's copies together), by bytes then time: op, axis, "
                        "payload, bytes, moved, time, rank, step, layer, group");
    limit(*summary, "--rank", at_least(0), "leave it out for every rank");
    limit(*summary, "--step", at_least(0), "leave it out for every step");
    limit(*summary, "--gpus-per-node", at_least(1), "leave it out to use the trace's own");
    limit(*summary, "--top", at_least(1), "leave it out for no such list");
    summary->callback([file, filter, exact, gpus_per_node, top] {
        const Trace trace = read_checked_trace(*file, TraceLimits{}, "trace summary");
        check_trace_filter(trace, *filter);
        std::fputs(format_trace_summary(summarize_trace(trace, *filter, *gpus_per_node), *file, *exact).c_str(), stdout);
        if (*top > 0) {
            const std::vector<TraceEvent> calls = largest_calls(trace, *filter, *top);
            std::printf("\nthe %zu largest calls (of the events above, by bytes, then time; a call's copies together)\n", calls.size());
            std::fputs(format_largest_calls(calls, *exact).c_str(), stdout);
        }
    });
}

}  // namespace ss::app
