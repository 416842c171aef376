// params.h — GPT-2's parameters: their HF names, shapes and places in one
// flat buffer, and their counter-based initialisation.
//
// All parameters live in one contiguous buffer (as in llm.c), in the order of
// HF GPT-2's state dict. A flat buffer is what ZeRO partitions (rank r owns
// elements [r*P/N, (r+1)*P/N)) and what DDP buckets slice:
//
//   wte.weight [Vp,C] | wpe.weight [maxT,C] | h.0.ln_1.weight [C] | ... | h.{L-1}... | ln_f.weight | ln_f.bias
//
// Per block (HF names, Conv1D weights stored [in, out]):
//   ln_1.weight [C]  ln_1.bias [C]
//   attn.c_attn.weight [C,3C]  attn.c_attn.bias [3C]      q|k|v side by side
//   attn.c_proj.weight [C,C]   attn.c_proj.bias [C]
//   ln_2.weight [C]  ln_2.bias [C]
//   mlp.c_fc.weight [C,4C]     mlp.c_fc.bias [4C]
//   mlp.c_proj.weight [4C,C]   mlp.c_proj.bias [C]
// The LM head is tied to wte.weight (no lm_head tensor).
//
// Padding (config.h, padded_vocab): wte holds Vp >= V rows in memory; rows
// V .. Vp-1 are zeros that are never predicted. Files hold HF's [V,C]: the
// seam is ParamSpec::global_index, which maps a padding element to -1 (not
// in the file), and the file I/O in model/checkpoint.h.
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

/// How tensor parallelism cuts a parameter over the t ranks of a TP group
/// (Megatron-LM, Shoeybi et al. 2019, section 3, figure 3):
///
///     ColumnParallelLinear  W = [W_1, ..., W_t]      each rank: out/t columns (and bias entries)
///     RowParallelLinear     W = [W_1; ...; W_t]      each rank: in/t rows (the bias stays whole)
///     vocabulary-parallel   wte = [E_1; ...; E_t]    each rank: Vp/t rows (Vp: padded_vocab)
enum class Split {
    none,      ///< replicated on every TP rank: LayerNorms, wpe, row-parallel biases
    cols,      ///< ColumnParallelLinear: mlp.c_fc weight and bias
    qkv_cols,  ///< c_attn: q, k and v are each cut by columns, so a rank holds whole heads
    rows,      ///< RowParallelLinear weights (attn.c_proj, mlp.c_proj) and wte
};

/// One parameter tensor and where it lives in the flat buffer.
struct ParamSpec {
    std::string name;    ///< HF name, e.g. "h.0.attn.c_attn.weight"
    Shape shape;         ///< shape on this rank, in memory: a TP slice, and wte padded to Vp rows
    Shape global_shape;  ///< the HF shape, as files hold it (wte: [V,C], without padding)
    Split split = Split::none;  ///< how tensor parallelism cuts it
    int tp = 1;          ///< TP degree the layout was made for
    int tp_rank = 0;     ///< which slice this rank holds
    int64_t offset = 0;  ///< first element in the flat buffer
    int64_t numel = 0;   ///< elements
    int layer = -1;      ///< block index, or -1 for embeddings and ln_f
    Init init = Init::normal;  ///< how init_params fills it
    bool decay = false;  ///< AdamW weight decay applies (matrices and embeddings, not biases or LayerNorm)

    /// Index in the whole (global) HF tensor of this rank's element @p local,
    /// or -1 for an element of padding (a row of wte at or past V, in no file).
    int64_t global_index(int64_t local) const;
    /// Elements of this rank's tensor that are not padding: they come first
    /// (padding rows are the last rows of the whole wte), so [0, unpadded_numel()).
    int64_t unpadded_numel() const;
};

/// Indices into ParamLayout::specs of one block's tensors.
enum BlockParam {
    kLn1W, kLn1B, kAttnW, kAttnB, kAttnProjW, kAttnProjB,
    kLn2W, kLn2B, kFcW, kFcB, kFcProjW, kFcProjB, kBlockParams
};

/// Which part of the model a rank holds: all of it, or one pipeline stage
/// (Huang et al. 2019; Narayanan et al. 2021). A stage holds the consecutive
/// blocks [first, first + count); the first stage also the embeddings (wte,
/// wpe), the last stage ln_f and, for the tied LM head, its own copy of wte
/// (Megatron-LM's "word embeddings for head": the two copies start equal and
/// stay equal because their gradients are summed over the embedding group).
struct ModelPart {
    int first = 0;          ///< first block held
    int count = -1;         ///< blocks held (-1: all L)
    bool embedding = true;  ///< holds wte and wpe and embeds the tokens (pipeline stage 0)
    bool head = true;       ///< holds ln_f and the tied wte and computes the loss (the last stage)

    /// The whole model (what one rank without pipeline parallelism holds).
    static ModelPart whole() { return ModelPart{}; }
    /// True when it is the whole model of @p L blocks.
    bool is_whole(int L) const { return first == 0 && (count < 0 || count == L) && embedding && head; }
    /// True when wte is tied to a copy on another stage (the first or the last of a
    /// pipeline, not both): its gradient is summed over the two after backward
    /// (parallel/pipeline.h, sync_tied_grads).
    bool wte_tied_elsewhere() const { return embedding != head; }
};

/// Every parameter of a model, in HF state-dict order, over one flat buffer.
/// A pipeline stage's layout (ModelPart) lists only the tensors the stage
/// holds, in the same order: [wte] [wpe] [its blocks] [ln_f].
struct ParamLayout {
    std::vector<ParamSpec> specs;  ///< every tensor, in flat-buffer (HF state-dict) order
    int64_t total = 0;  ///< elements in the flat buffer

    /// The spec called @p name (throws ss::Error naming it if there is none).
    const ParamSpec& get(const std::string& name) const;
    /// The spec called @p name, or nullptr.
    const ParamSpec* find(const std::string& name) const;
    ModelPart part;       ///< what it holds (count resolved: never -1)
    size_t block_base = 0;  ///< index in specs of block part.first's first tensor

    /// Spec of tensor @p which of block @p layer (a block this layout holds).
    const ParamSpec& block(int layer, BlockParam which) const {
        return specs[block_base + size_t(layer - part.first) * kBlockParams + which];
    }
    /// Holds wte.weight (the embedding, or the tied head's copy).
    bool has_wte() const { return part.embedding || part.head; }
    /// wte.weight (has_wte() only)
    const ParamSpec& wte() const { return specs[0]; }
    /// wpe.weight (part.embedding only)
    const ParamSpec& wpe() const { return specs[1]; }
    /// ln_f.weight (part.head only)
    const ParamSpec& lnf_w() const { return specs[specs.size() - 2]; }
    /// ln_f.bias (part.head only)
    const ParamSpec& lnf_b() const { return specs[specs.size() - 1]; }

    std::map<std::string, size_t> index;  ///< name -> position in specs
};

/// The layout of @p cfg's parameters; with @p tp > 1, the slice that tensor-parallel
/// rank @p tp_rank holds (see Split); with @p part, only that pipeline stage's
/// tensors. wte gets padded_vocab(V, tp, cfg.vocab_divisible_by) rows, cut
/// into tp slices. Throws ss::Error if TP does not divide H, or the part is not
/// inside the model.
ParamLayout make_param_layout(const GPT2Config& cfg, int tp = 1, int tp_rank = 0,
                              const ModelPart& part = ModelPart::whole());

/// This rank's slice of whole flat parameters: @p local (local.total elements)
/// from @p global (laid out as make_param_layout(cfg) with tp = 1). @p local may
/// be a pipeline stage's layout: it takes just the tensors it lists. Its
/// padding rows get zeros (the two layouts may pad to different Vp).
void slice_for_rank(const ParamLayout& local, const ParamLayout& global, const float* global_flat, float* local_flat);

/// The inverse: writes this rank's slice @p local_flat into its places in
/// @p global_flat (padding rows of the slice go nowhere).
void place_from_rank(const ParamLayout& local, const ParamLayout& global, const float* local_flat, float* global_flat);

/// Writes the initial values of elements [begin, end) of the flat buffer into
/// @p out (out[0] is element @p begin). Any slice gives the same values as the
/// whole: value = f(seed, parameter name, index within the HF tensor); padding is 0.
void init_params(const ParamLayout& layout, const GPT2Config& cfg, uint64_t seed, int64_t begin, int64_t end,
                 float* out);

}  // namespace ss
