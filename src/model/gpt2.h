// gpt2.h — GPT-2 (Radford et al. 2019) on one rank: parameters, forward,
// backward. Dimension letters as in config.h (B, T, C, H, V, L).
//
//   tokens[B,T] -> x = wte[tokens] + wpe[0..T)                        (encoder)
//   for each block l:                                                 (pre-LN)
//       x = x + c_proj( attention( c_attn( ln_1(x) ) ) )
//       x = x + mlp.c_proj( gelu( mlp.c_fc( ln_2(x) ) ) )
//   logits = ln_f(x) @ wte^T                                          (tied head)
//   loss = mean over B*T of cross-entropy(logits, targets)
//
// The math is in kernels/cpu; this file only wires it. Each stage is its own
// function over a struct of pointers (BlockWeights), so a strategy can run a
// block on parameters it gathered (ZeRO-3) or on its shard (tensor parallel).
// Where model-parallel ranks meet inside a stage is model/model_parallel.h;
// the stages (layers.cpp) take it as a ModelParallel.
#pragma once

#include <vector>

#include "core/ledger.h"
#include "core/tensor.h"
#include "model/config.h"
#include "model/params.h"
#include "model/recompute.h"

namespace ss {

/// Pointers to one block's parameters (or gradients), HF order.
template <typename F>
struct BlockPtrs {
    F* ln1_w;       ///< ln_1.weight [C]
    F* ln1_b;       ///< ln_1.bias [C]
    F* attn_w;      ///< attn.c_attn.weight [C,3C], q|k|v
    F* attn_b;      ///< attn.c_attn.bias [3C]
    F* attnproj_w;  ///< attn.c_proj.weight [C,C]
    F* attnproj_b;  ///< attn.c_proj.bias [C]
    F* ln2_w;       ///< ln_2.weight [C]
    F* ln2_b;       ///< ln_2.bias [C]
    F* fc_w;        ///< mlp.c_fc.weight [C,4C]
    F* fc_b;        ///< mlp.c_fc.bias [4C]
    F* fcproj_w;    ///< mlp.c_proj.weight [4C,C]
    F* fcproj_b;    ///< mlp.c_proj.bias [C]
};
/// One block's parameters, read by the passes.
using BlockWeights = BlockPtrs<const float>;
/// One block's gradient accumulators, written by the backward pass.
using BlockGrads = BlockPtrs<float>;

/// The pointers of block @p l inside a flat buffer laid out as @p lay.
BlockWeights block_weights(const ParamLayout& lay, const float* flat, int l);
/// The same for a gradient buffer.
BlockGrads block_grads(const ParamLayout& lay, float* flat, int l);

/// What one block saves in forward for its backward (all Mem::acts).
struct BlockActs {
    Tensor ln1;       ///< [B,T,C] ln_1 output
    Tensor ln1_mean;  ///< [B,T] ln_1 mean of each row
    Tensor ln1_rstd;  ///< [B,T] ln_1 1/sqrt(var + eps) of each row
    Tensor qkv;       ///< [B,T,3C] c_attn output, q|k|v
    Tensor att;       ///< [B,H,T,T] softmax probabilities
    Tensor atty;      ///< [B,T,C] attention output before c_proj
    Tensor x_mid;     ///< [B,T,C] residual stream after attention
    Tensor ln2;       ///< [B,T,C] ln_2 output
    Tensor ln2_mean;  ///< [B,T] ln_2 mean of each row
    Tensor ln2_rstd;  ///< [B,T] ln_2 1/sqrt(var + eps) of each row
    Tensor fch;       ///< [B,T,4C] mlp.c_fc output (GELU input)
    Tensor fch_gelu;  ///< [B,T,4C] GELU output (mlp.c_proj input)
    Tensor x_out;     ///< [B,T,C] residual stream after the MLP
};

/// Everything a forward pass of B x T tokens saves for backward (Mem::acts).
/// On a pipeline stage: what that stage saves for one micro-batch.
struct Activations {
    int B = 0;                       ///< batch size (sequences)
    int T = 0;                       ///< tokens of each sequence this rank computes the loss for
    int Tl = 0;                      ///< tokens of each sequence in this rank's residual stream (T/t under Megatron-SP)
    Recompute recompute = Recompute::none;  ///< what the forward dropped for backward to recompute
    Tensor encoded;                  ///< [B,Tl,C] x before the first block held (a later stage: the received input)
    std::vector<BlockActs> blocks;   ///< what each block held saved (full recompute: x_out only)
    Tensor lnf;                      ///< [B,T,C] ln_f output (head input)
    Tensor lnf_mean;                 ///< [B,T] ln_f mean of each row
    Tensor lnf_rstd;                 ///< [B,T] ln_f 1/sqrt(var + eps) of each row
    Tensor probs;                    ///< [B,T,Vl] softmax of the logits (Vl = Vp/t rows of wte; 0 in the padding columns)
    Tensor losses;                   ///< [B,T] cross-entropy of each token
    float loss = 0.0f;               ///< mean of losses

    /// Frees everything (the Ledger sees the acts go).
    void clear();
};

struct ModelParallel;  // model/model_parallel.h: the tensor- and sequence-parallel operators a pass calls

/// The embedding stage: x = wte[tokens] + wpe. @p Vl: the rows of wte this rank
/// holds (Vp/t, Vp the padded vocabulary); under TP the partial embeddings are summed (g).
void encoder_stage_forward(Activations& a, const float* wte, const float* wpe, const int* tokens, int C, int Vl,
                           const ModelParallel& mp, Ledger& ledger);
/// Forward of block @p l (a.blocks[l] is allocated here). @p x_in is the block's input.
/// C and H are the model's; under TP this rank computes H/t heads and 4C/t MLP columns.
/// @p recompute picks the attention kernel with model/attention.h's attention() (selective
/// on one rank: blockwise, no probabilities saved).
void block_forward(BlockActs& ba, const BlockWeights& w, const float* x_in, int B, int T, int C, int H, int l,
                   const ModelParallel& mp, Recompute recompute, Ledger& ledger);
/// The head: ln_f, tied logits, cross-entropy (vocabulary-parallel under TP). Returns the mean loss.
/// @p V is the vocabulary, @p Vl the rows of wte this rank holds (Vp/t): rows at or past V
/// are padding, left out of the softmax.
float head_forward(Activations& a, const float* x_last, const float* lnf_w, const float* lnf_b, const float* wte,
                   const int* targets, int C, int V, int Vl, const ModelParallel& mp, Ledger& ledger);

/// Backward of the head. Writes dx[B,T,C] (overwrites) and accumulates dwte, dlnf_w, dlnf_b.
/// @p dloss is d(objective)/d(loss of each token): 1/(B*T) for the mean loss.
void head_backward(float* dx, float* dlnf_w, float* dlnf_b, float* dwte, const Activations& a, const float* x_last,
                   const float* lnf_w, const float* wte, const int* targets, float dloss, int C, int V, int Vl,
                   const ModelParallel& mp, Ledger& ledger);
/// Backward of block @p l: dx holds d/d(x_out) on entry and d/d(x_in) on exit.
void block_backward(float* dx, BlockGrads& g, const BlockActs& ba, const BlockWeights& w, const float* x_in, int B,
                    int T, int C, int H, int l, const ModelParallel& mp, Recompute recompute, Ledger& ledger);
/// Backward of the embedding: accumulates into dwte (this rank's @p Vl rows under TP) and dwpe.
/// (@p ledger: the zig-zag split's gathered position gradient, a workspace tensor.)
void encoder_stage_backward(float* dwte, float* dwpe, const float* dx, const int* tokens, int B, int T, int C,
                            int Vl, const ModelParallel& mp, Ledger& ledger);

/// The units a pass walks through, in flat-buffer order: for the whole model
/// unit 0 = embeddings (wte, wpe), unit 1 + l = block l, unit L + 1 = ln_f.
/// Each unit is one contiguous range of the flat buffer, so a strategy can
/// gather, shard or reduce a unit as one piece (FSDP calls them "units",
/// DeepSpeed "modules"). A pipeline stage's layout has the units of what it
/// holds, and there wte is a unit of its own: the first and the last stage
/// then shard it identically, and sum its gradients shard by shard.
struct Unit {
    int64_t begin = 0;  ///< first flat element
    int64_t end = 0;    ///< one past the last
    int layer = -1;     ///< -1 for embeddings, l for block l, L for ln_f (trace labels)
    /// Elements in the unit.
    int64_t size() const { return end - begin; }
};

/// The units of @p lay (see Unit).
std::vector<Unit> make_units(const ParamLayout& lay);

/// The units in the order part_forward (@p backward false) or part_backward asks
/// UnitHooks::params for them, each once: what ZeRO-3's prefetch follows.
std::vector<int> unit_order(const ParamLayout& lay, bool backward);

/// Where a forward or backward pass gets each unit's parameters and puts its
/// gradients: the seam between the model and a data-parallel strategy.
///
/// Every pointer is UNIT-LOCAL: element 0 is the unit's first flat element.
/// The orders below are the whole model's; a pipeline stage walks the same
/// order over the units it holds (a first stage takes no parameters in
/// backward: the embedding's backward needs none; a last stage takes wte at
/// the head, and completes its gradients at the end, so units always
/// complete from the end of the flat buffer towards its start).
/// A plain model hands out slices of its full buffers; ZeRO-3 gathers a unit's
/// parameters from the shards just before use and frees them after; ZeRO-2/3
/// hand out a temporary gradient buffer and reduce-scatter it once the unit's
/// gradients are complete. The call order per micro-batch is fixed:
///
///   forward:  params(0) .. [params(1+l), release(1+l) for each block] .. params(L+1), release(L+1), release(0)
///   backward: params(0), params(L+1), grads(0), grads(L+1), release(L+1), grads_ready(L+1),
///             [params(1+l), grads(1+l), release(1+l), grads_ready(1+l) for l = L-1 .. 0],
///             release(0), grads_ready(0)
///
/// (wte is used by the first and the last unit, so unit 0 stays acquired
/// across the pass, as FSDP keeps its root unit.)
class UnitHooks {
public:
    virtual ~UnitHooks() = default;
    /// fp32 parameters of unit @p u, valid until release(u).
    virtual const float* params(int u, bool backward) = 0;
    /// The pass is done with unit @p u's parameters.
    virtual void release(int u, bool backward) = 0;
    /// fp32 gradient accumulator of unit @p u (the pass adds into it).
    virtual float* grads(int u) = 0;
    /// Unit @p u's gradients for this micro-batch are complete.
    virtual void grads_ready(int u) = 0;
};

/// One pass over the part of the model a layout holds (all of it, or one
/// pipeline stage): where the parameters come from and what the pass may
/// recompute.
struct PartPass {
    const GPT2Config& cfg;    ///< the model's dimensions
    const ParamLayout& lay;   ///< this rank's layout (TP slice, pipeline stage)
    UnitHooks& hooks;         ///< where parameters come from and gradients go
    const ModelParallel& mp;  ///< tensor and sequence parallelism (or none)
    Ledger& ledger;           ///< this rank's memory book
    Recompute recompute = Recompute::none;  ///< what forward drops and backward recomputes
};

/// Forward of the blocks @p p.lay holds for one micro-batch. The first stage
/// embeds @p tokens; a later stage starts from @p x_in [B, Tl, C] (copied into
/// acts.encoded). The last stage returns the mean loss over @p targets; other
/// stages return 0 and leave their output in part_output(acts).
float part_forward(const PartPass& p, const int* tokens, const int* targets, const float* x_in, int B, int T,
                   Activations& acts);
/// The output [B, Tl, C] of a stage that is not the last (the next stage's input).
const float* part_output(const Activations& acts);
/// Backward of part_forward. The last stage starts from the loss (d/d(token
/// loss) = @p dloss); another from @p dy = d/d(part_output) [B, Tl, C]. A
/// stage that is not the first writes d/d(x_in) into @p dx_in [B, Tl, C].
/// Adds into hooks.grads(u). (The caller frees acts afterwards.)
void part_backward(const PartPass& p, const int* tokens, const int* targets, const Activations& acts, float dloss,
                   const float* dy, float* dx_in);

/// One forward pass through units provided by @p hooks; saves into @p acts; returns the mean loss.
/// @p lay is this rank's layout (its TP slice when mp.tp.size() > 1). Under
/// sequence parallelism @p T is this rank's T/sp tokens of each sequence.
float gpt2_forward(const GPT2Config& cfg, const ParamLayout& lay, UnitHooks& hooks, const ModelParallel& mp,
                   const int* tokens, const int* targets, int B, int T, Activations& acts, Ledger& ledger);
/// The matching backward pass: adds d(objective)/d(params) into hooks.grads(u),
/// with d(objective)/d(token loss) = @p dloss.
void gpt2_backward(const GPT2Config& cfg, const ParamLayout& lay, UnitHooks& hooks, const ModelParallel& mp,
                   const int* tokens, const int* targets, const Activations& acts, float dloss, Ledger& ledger);

/// A whole GPT-2 on one rank: flat parameters and gradients plus forward/backward.
///
/// Storage dtype fp32: params and grads are fp32 (4 + 4 bytes per parameter).
/// Storage dtype bf16: params and grads are stored in bf16 (2 + 2 bytes, as the
/// ZeRO paper counts them); the math runs in fp32 on a compute copy kept in
/// the workspace category, and gradients accumulate in fp32 there before they
/// are rounded to bf16 once per step.
class GPT2 {
public:
    /// Allocates (zeroed) parameters and gradients in @p ledger.
    GPT2(const GPT2Config& cfg, Ledger& ledger, DType storage = DType::f32);

    /// The model's dimensions.
    const GPT2Config& config() const { return cfg_; }
    /// Where each parameter sits in the flat buffers.
    const ParamLayout& layout() const { return layout_; }
    /// Dtype of the stored params and grads (f32 or bf16).
    DType storage() const { return storage_; }
    /// The rank's memory book every tensor here is booked in.
    Ledger& ledger() { return *ledger_; }

    /// Counter-based initialisation (params.h).
    void init(uint64_t seed);

    /// fp32 parameters the math reads.
    float* w() { return storage_ == DType::f32 ? params_.f32() : params_f32_.f32(); }
    /// fp32 parameters the math reads (const).
    const float* w() const { return const_cast<GPT2*>(this)->w(); }
    /// fp32 gradients the math accumulates into.
    float* g() { return storage_ == DType::f32 ? grads_.f32() : grads_f32_.f32(); }

    /// The stored parameters (fp32 or bf16).
    Tensor& params() { return params_; }
    /// The stored gradients (fp32 or bf16).
    Tensor& grads() { return grads_; }

    /// Forward over tokens[B,T] against targets[B,T]; saves into @p acts; returns the mean loss.
    float forward(const int* tokens, const int* targets, int B, int T, Activations& acts);
    /// Backward of forward(); accumulates into g() with d(objective)/d(token loss) = @p dloss
    /// (1/(B*T) for this micro-batch's mean loss; divide by GA when accumulating).
    void backward(const int* tokens, const int* targets, const Activations& acts, float dloss);

    /// Sets the fp32 gradients to zero.
    void zero_grad();
    /// Rounds the fp32 gradient accumulator into the stored bf16 gradients (no-op for fp32).
    void store_grads();
    /// Refreshes the fp32 compute copy from the stored bf16 parameters (no-op for fp32).
    void load_compute_params();

private:
    GPT2Config cfg_;
    ParamLayout layout_;
    DType storage_;
    Ledger* ledger_;
    Tensor params_, grads_;
    Tensor params_f32_, grads_f32_;
};

}  // namespace ss
