// layout_flags.h — the flags that name a layout's choices (--sp-mode,
// --ring-split, --schedule, --recompute), shared by every subcommand that takes them
// (train, plan, schedule). Each turns its name into the enum as the command
// line is read (mesh/layout_names.h, model/recompute.h), so a bad name is
// refused before any work, with the choices, and nothing downstream parses it
// again.
#pragma once

#include "mesh/layout_names.h"
#include "model/recompute.h"

namespace CLI {
class App;
}

namespace ss::app {

/// --sp-mode ulysses|ring into @p mode (which holds the default).
void add_sp_mode_flag(CLI::App& cmd, SpMode& mode);
/// --ring-split zigzag|contiguous into @p split (which holds the default): how ring attention
/// splits each sequence over the sp ranks (model/sequence_split.h).
void add_ring_split_flag(CLI::App& cmd, RingSplit& split);
/// --schedule gpipe|1f1b|interleaved into @p schedule (which holds the default).
void add_schedule_flag(CLI::App& cmd, Schedule& schedule);
/// --recompute none|selective|full into @p recompute (which holds the default).
void add_recompute_flag(CLI::App& cmd, Recompute& recompute);

}  // namespace ss::app
