// mesh_cmd.cpp — `shardscope mesh`: print the rank grid, every group, and one rank's mpu answers.
//
//   shardscope mesh --ranks 16 --tp 2 --pp 2 --dp-shard 2 --dp-rep 2 --rank 13
//   shardscope mesh --ranks 8 --tp 2            (dp_shard takes the rest: 4; mpu of rank 0)
//
// Nothing runs; it shows where each rank sits and who it talks to, so a layout
// can be checked before a job starts. The grid and the text are in src/mesh/.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "app/commands.h"
#include "app/flag_range.h"
#include "core/check.h"
#include "mesh/mesh_report.h"
#include "mesh/process_mesh.h"

namespace ss::app {

void add_mesh_command(CLI::App& root) {
    struct Options {
        int ranks = 1;
        int rank = 0;  // whose mpu answers to print
        MeshShape shape{1, 0, 0, 1, 1};  // dp_rep, dp_shard = 0: not given, take the rest of the world
    };
    auto opt = std::make_shared<Options>();
    CLI::App* cmd = root.add_subcommand("mesh", "Print the rank grid: each rank's coordinates and every group");
    cmd->add_option("--ranks", opt->ranks, "World size: how many ranks the grid holds")->required();
    cmd->add_option("--tp", opt->shape.tp, "Tensor-parallel degree (fastest axis: consecutive ranks)");
    cmd->add_option("--pp", opt->shape.pp, "Pipeline stages (outermost axis)");
    cmd->add_option("--sp", opt->shape.sp, "Sequence-parallel degree (Ulysses / ring attention)");
    cmd->add_option("--dp-shard", opt->shape.dp_shard, "ZeRO shards; default: the rest of the world");
    cmd->add_option("--dp-rep", opt->shape.dp_rep, "Data-parallel replicas of the shard group (HSDP / MiCS); default: 1, or the rest if --dp-shard is given");
    cmd->add_option("--rank", opt->rank, "Print every mpu call's answer on this rank")->capture_default_str();
    limit(*cmd, "--ranks", at_least(1, kMaxReportRanks), "the report prints every rank; `shardscope plan` takes any size");
    limit(*cmd, "--rank", at_least(0), "ranks count from 0");
    for (const char* axis : {"--tp", "--pp", "--sp"}) limit(*cmd, axis, at_least(1), "1 leaves it unsplit");
    for (const char* axis : {"--dp-shard", "--dp-rep"})
        limit(*cmd, axis, at_least(1), "leave it out to take the rest of the world");
    cmd->callback([opt] {
        const ProcessMesh mesh(opt->ranks, fill_dp(opt->ranks, opt->shape));
        SS_CHECK(opt->rank < opt->ranks, "--rank " << opt->rank << " is outside the mesh: ranks are 0 .. "
                                                   << opt->ranks - 1 << " (--ranks " << opt->ranks << ")");
        std::fputs(mesh_report(mesh, opt->rank).c_str(), stdout);
    });
}

}  // namespace ss::app
