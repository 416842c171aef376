// params.h — GPT-2's parameters: their HF names, shapes and places in one
// flat buffer, and their counter-based initialisation.
//
// All parameters live in one contiguous buffer (as in llm.c), in the order of
// HF GPT-2's state dict. A flat buffer is what ZeRO partitions (rank r owns
// elements [r*P/N, (r+1)*P/N)) and what DDP buckets slice:
//
//   wte.weight [V,C] | wpe.weight [maxT,C] | h.0.ln_1.weight [C] | ... | h.{L-1}... | ln_f.weight | ln_f.bias
//
// Per block (HF names, Conv1D weights stored [in, out]):
//   ln_1.weight [C]  ln_1.bias [C]
//   attn.c_attn.weight [C,3C]  attn.c_attn.bias [3C]      q|k|v side by side
//   attn.c_proj.weight [C,C]   attn.c_proj.bias [C]
//   ln_2.weight [C]  ln_2.bias [C]
//   mlp.c_fc.weight [C,4C]     mlp.c_fc.bias [4C]
//   mlp.c_proj.weight [4C,C]   mlp.c_proj.bias [C]
// The LM head is tied to wte.weight (no lm_head tensor).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "model/config.h"

namespace ss {

/// How a parameter starts (GPT-2, Radford et al. 2019, section 2.3; HF's _init_weights).
enum class Init {
    normal,          ///< N(0, 0.02^2)
    normal_resproj,  ///< N(0, (0.02/sqrt(2L))^2): projections into the residual stream
    zeros,           ///< biases
    ones             ///< LayerNorm gains
};

/// One parameter tensor and where it lives in the flat buffer.
struct ParamSpec {
    std::string name;    ///< HF name, e.g. "h.0.attn.c_attn.weight"
    Shape shape;         ///< HF shape
    int64_t offset = 0;  ///< first element in the flat buffer
    int64_t numel = 0;   ///< elements
    int layer = -1;      ///< block index, or -1 for embeddings and ln_f
    Init init = Init::normal;  ///< how init_params fills it
    bool decay = false;  ///< AdamW weight decay applies (matrices and embeddings, not biases or LayerNorm)
};

/// Indices into ParamLayout::specs of one block's tensors.
enum BlockParam {
    kLn1W, kLn1B, kAttnW, kAttnB, kAttnProjW, kAttnProjB,
    kLn2W, kLn2B, kFcW, kFcB, kFcProjW, kFcProjB, kBlockParams
};

/// Every parameter of a model, in HF state-dict order, over one flat buffer.
struct ParamLayout {
    std::vector<ParamSpec> specs;  ///< every tensor, in flat-buffer (HF state-dict) order
    int64_t total = 0;  ///< elements in the flat buffer

    /// The spec called @p name (throws ss::Error naming it if there is none).
    const ParamSpec& get(const std::string& name) const;
    /// The spec called @p name, or nullptr.
    const ParamSpec* find(const std::string& name) const;
    /// Spec of tensor @p which of block @p layer.
    const ParamSpec& block(int layer, BlockParam which) const { return specs[2 + layer * kBlockParams + which]; }
    /// wte.weight
    const ParamSpec& wte() const { return specs[0]; }
    /// wpe.weight
    const ParamSpec& wpe() const { return specs[1]; }
    /// ln_f.weight
    const ParamSpec& lnf_w() const { return specs[specs.size() - 2]; }
    /// ln_f.bias
    const ParamSpec& lnf_b() const { return specs[specs.size() - 1]; }

    std::map<std::string, size_t> index;  ///< name -> position in specs
};

/// The layout of @p cfg's parameters.
ParamLayout make_param_layout(const GPT2Config& cfg);

/// Writes the initial values of elements [begin, end) of the flat buffer into
/// @p out (out[0] is element @p begin). Any slice gives the same values as the
/// whole: value = f(seed, parameter name, index within the parameter).
void init_params(const ParamLayout& layout, const GPT2Config& cfg, uint64_t seed, int64_t begin, int64_t end,
                 float* out);

}  // namespace ss
