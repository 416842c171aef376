// model_flags.h — the flags that choose a model, shared by every subcommand
// that needs one (train, bench, plan): a preset and per-dimension overrides.
#pragma once

#include <string>

#include "model/config.h"

namespace CLI {
class App;
}

namespace ss::app {

/// --model and its overrides (0 = keep the preset's value).
struct ModelFlags {
    std::string model = "tiny";
    int layers = 0, dim = 0, heads = 0, vocab = 0, max_seq = 0;
    int vocab_divisible_by = 128;  ///< Vp is a multiple of this x TP (model/config.h, padded_vocab)

    /// The preset with the overrides applied (name "<preset>+custom" when any is set), validated.
    GPT2Config resolve() const { return resolve_from(model_preset(model)); }
    /// The same over @p preset, the shape --model names (plan's GPT-3 shapes, plan/models.h).
    GPT2Config resolve_from(GPT2Config preset) const;
};

/// Adds --model --layers --dim --heads --vocab --max-seq --vocab-divisible-by to @p cmd.
void add_model_flags(CLI::App& cmd, ModelFlags& f);

}  // namespace ss::app
