// layout_flags.cpp — the layout's named flags (layout_flags.h).
#include "app/layout_flags.h"

#include <CLI/CLI.hpp>

namespace ss::app {

void add_sp_mode_flag(CLI::App& cmd, SpMode& mode) {
    cmd.add_option_function<std::string>(
           "--sp-mode", [&mode](const std::string& s) { mode = parse_sp_mode(s); },
           "How SP splits attention: ulysses (all-to-all around attention) or ring (K, V round the ring)")
        ->default_str(sp_mode_name(mode));
}

void add_ring_split_flag(CLI::App& cmd, RingSplit& split) {
    cmd.add_option_function<std::string>(
           "--ring-split", [&split](const std::string& s) { split = parse_ring_split(s); },
           "How ring attention splits each sequence: zigzag (rank i holds chunks i and 2SP-1-i of 2 SP: every rank "
           "does the same causal work) or contiguous (rank i holds the i-th T/SP tokens)")
        ->default_str(ring_split_name(split));
}

void add_schedule_flag(CLI::App& cmd, Schedule& schedule) {
    cmd.add_option_function<std::string>(
           "--schedule", [&schedule](const std::string& s) { schedule = parse_schedule(s); },
           "Pipeline schedule: gpipe, 1f1b or interleaved")
        ->default_str(schedule_name(schedule));
}

void add_recompute_flag(CLI::App& cmd, Recompute& recompute) {
    cmd.add_option_function<std::string>(
           "--recompute", [&recompute](const std::string& s) { recompute = parse_recompute(s); },
           "Activation recompute: none, selective (attention core) or full (each block from its input)")
        ->default_str(recompute_name(recompute));
}

}  // namespace ss::app
