// config.h — the shape of a GPT-2 and its named presets.
//
// The dimension letters, used the same way in every file of ShardScope:
//
//   B = micro-batch size (sequences per rank per micro-batch)
//   T = sequence length (tokens per sequence)
//   C = channels (model width, n_embd)
//   H = attention heads (n_head); head size hs = C / H
//   V = vocabulary size
//   L = transformer blocks (n_layer)
//
// maxT is the number of rows of the positional table wpe; a run may use any
// T <= maxT.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ss {

/// Shape of a GPT-2 model.
struct GPT2Config {
    std::string name = "custom";  ///< preset name, or "custom" after overrides
    int L = 2;                     ///< transformer blocks
    int C = 64;                    ///< channels
    int H = 4;                     ///< attention heads
    int V = 256;                   ///< vocabulary size
    int maxT = 64;                 ///< rows of the positional embedding table

    /// Head size C / H.
    int hs() const { return C / H; }
};

/// The preset called @p name: tiny, small, gpt2, gpt2-medium, gpt2-large, gpt2-xl.
/// Throws ss::Error listing the known names otherwise.
GPT2Config model_preset(const std::string& name);

/// Names of all presets, smallest first.
std::vector<std::string> model_preset_names();

/// Checks that the shape is usable (positive sizes, H divides C) and throws
/// ss::Error saying what to change otherwise.
void validate(const GPT2Config& cfg);

/// Number of parameters (the tied LM head counted once):
/// V*C + maxT*C + L*(12*C*C + 13*C) + 2*C.
int64_t num_params(const GPT2Config& cfg);

}  // namespace ss
