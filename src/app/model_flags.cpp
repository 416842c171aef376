#include "app/model_flags.h"

#include <CLI/CLI.hpp>
#include <utility>

#include "app/flag_range.h"

namespace ss::app {

GPT2Config ModelFlags::resolve_from(GPT2Config preset) const {
    GPT2Config c = std::move(preset);
    bool custom = false;
    auto over = [&](int v, int& field) {
        if (v != 0) {
            field = v;
            custom = true;
        }
    };
    over(layers, c.L);
    over(dim, c.C);
    over(heads, c.H);
    over(vocab, c.V);
    over(max_seq, c.maxT);
    if (custom) c.name = model + "+custom";
    c.vocab_divisible_by = vocab_divisible_by;  // how memory pads V, not the model's shape: the name stays
    validate(c);
    return c;
}

void add_model_flags(CLI::App& cmd, ModelFlags& f) {
    cmd.add_option("--model", f.model, "Preset: tiny, small, gpt2, gpt2-medium, gpt2-large, gpt2-xl")
        ->capture_default_str();
    cmd.add_option("--layers", f.layers, "Override L, the number of blocks");
    cmd.add_option("--dim", f.dim, "Override C, the model width");
    cmd.add_option("--heads", f.heads, "Override H, the attention heads");
    cmd.add_option("--vocab", f.vocab, "Override V, the vocabulary size");
    cmd.add_option("--max-seq", f.max_seq, "Override maxT, the rows of the positional table");
    cmd.add_option("--vocab-divisible-by", f.vocab_divisible_by,
                   "Pad the vocabulary in memory to Vp = V rounded up to a multiple of this x TP (Megatron-LM's "
                   "--make-vocab-size-divisible-by; GPT-2's 50257 -> 50304 at TP 1, as llm.c; 1 pads least). "
                   "The padding rows are zeros, never predicted, not saved")
        ->capture_default_str();
    // 0 means "the preset's" only when a flag is left out: given, each dimension is at least 1.
    for (const char* flag : {"--layers", "--dim", "--heads", "--vocab", "--max-seq"})
        limit(cmd, flag, at_least(1), "leave it out for the preset's");
}

}  // namespace ss::app
