// config.h — the shape of a GPT-2 and its named presets.
//
// The dimension letters, used the same way in every file of ShardScope:
//
//   B = micro-batch size (sequences per rank per micro-batch)
//   T = sequence length (tokens per sequence)
//   C = channels (model width, n_embd)
//   H = attention heads (n_head); head size hs = C / H
//   V = vocabulary size (the tokenizer's words: 50257 for GPT-2)
//   Vp = V padded: the rows of wte held in memory (padded_vocab below)
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
    /// Vp is a multiple of this times TP (--vocab-divisible-by; see padded_vocab).
    /// Not a shape of the model: files hold V rows whatever it is.
    int vocab_divisible_by = 128;

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

/// Vp, the vocabulary padded for tensor parallelism and aligned matrix shapes:
/// @p V rounded up to a multiple of @p divisible_by x @p tp.
///
/// This is Megatron-LM's rule (--make-vocab-size-divisible-by, default 128,
/// multiplied by the tensor-parallel size in _vocab_size_with_padding), so
/// every TP rank holds Vp / TP rows of wte; llm.c pads GPT-2's 50257 to the
/// same Vp = 50304 at TP 1. At TP 2 GPT-2 gets 50432. Rows V .. Vp-1 of wte
/// are zeros that are never predicted: their logits are left out of the
/// softmax, so they get no gradient and stay zero. Files keep V rows.
/// Throws ss::Error naming --vocab-divisible-by if @p divisible_by < 1.
int padded_vocab(int V, int tp, int divisible_by);

/// Number of parameters (the tied LM head counted once, V rows: what a file holds):
/// V*C + maxT*C + L*(12*C*C + 13*C) + 2*C.
int64_t num_params(const GPT2Config& cfg);

}  // namespace ss
