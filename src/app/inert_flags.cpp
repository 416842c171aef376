// inert_flags.cpp — a flag typed that the run would not use, refused (see inert_flags.h).
#include "app/inert_flags.h"

#include <CLI/CLI.hpp>

#include "core/check.h"
#include "train/options.h"

namespace ss::app {

namespace {

// A flag, whether this run uses it, and what it needs where it does not.
struct Needs {
    const char* flag;
    bool used;
    const char* needs;
};

// Throws for the first flag of @p flags typed on @p cmd that the run does not use.
template <size_t N>
void refuse_typed(const CLI::App& cmd, const Needs (&flags)[N]) {
    for (const Needs& n : flags) {
        const CLI::Option* given = cmd.get_option_no_throw(n.flag);  // null: this command has no such flag
        SS_CHECK(n.used || given == nullptr || given->count() == 0,
                 n.flag << " does nothing in this run: it needs " << n.needs << "; add that, or leave " << n.flag
                        << " out");
    }
}

}  // namespace

// Flags left at their defaults are never inert by this rule: only a typed one says "do this".
void refuse_inert_flags(const CLI::App& cmd, const TrainOptions& o) {
    // nccl runs each started call at once (train/options.h, overlap_runs): what starts calls early
    // does nothing there. These depend on the backend alone, so they come before the layout's checks
    // (which, on a machine without a GPU, end at --device cuda's).
    const bool progresses = o.backend != BackendKind::nccl;
    const Needs backend_flags[] = {
        {"--overlap", progresses || !o.overlap,
         "--backend threads or mpi (nccl runs each started call at once, so a nccl run goes as --overlap off)"},
        {"--prefetch", progresses,
         "--backend threads or mpi (nccl runs each started all-gather at once: nothing is fetched ahead)"},
    };
    refuse_typed(cmd, backend_flags);
    const RunShape run = check_train_options(o);  // the layout's own errors first; then its world and groups
    const bool grad_group = int64_t(run.mesh.dp_rep) * run.mesh.dp_shard * run.mesh.sp > 1;  // DDP's all-reduce
    const bool nesterov = o.replica_outer == ReplicaOuter::nesterov;
    const Needs flags[] = {
        // (--overlap off keeps it: the same flags with overlap on and off are how the two are compared.)
        {"--prefetch", o.prefetch == 0 || o.zero == 3, "--zero 3 (it starts the all-gathers of the next units early)"},
        {"--bucket-mb", o.bucket_mb == 0 || o.zero == 0, "--zero 0 (DDP's gradient all-reduce goes in buckets)"},
        {"--bucket-mb", o.bucket_mb == 0 || grad_group,
         "ranks that average gradients, DP x SP >= 2 (this layout's gradients are reduced by no group)"},
        {"--link", run.world > 1, "2 or more ranks (one rank sends nothing)"},
        {"--link-intra", run.world > 1, "2 or more ranks (one rank sends nothing)"},
        {"--link-inter", run.world > 1, "2 or more ranks (one rank sends nothing)"},
        {"--emulate", run.world > 1, "2 or more ranks (one rank sends nothing)"},
        {"--outer-lr", nesterov, "--replica-outer nesterov (DiLoCo's outer step)"},
        {"--outer-momentum", nesterov, "--replica-outer nesterov (DiLoCo's outer step)"},
        {"--quant-block", o.qwz || o.qgz, "--qwz or --qgz (the blocks they quantize by)"},
        {"--qgz-bits", o.qgz, "--qgz"},
        {"--ring-split", o.sp > 1 && o.sp_mode == SpMode::ring, "--sp 2 or more with --sp-mode ring"},
        {"--keep-last", o.save_every > 0, "--save-every K and --checkpoint-dir (the checkpoints it prunes)"},
    };
    refuse_typed(cmd, flags);
}

}  // namespace ss::app
