// zero.h — ZeRO: data parallelism that partitions the model states instead of
// replicating them (Rajbhandari et al. 2020, "ZeRO: Memory Optimizations
// Toward Training Trillion Parameter Models", arXiv:1910.02054).
//
// N ranks of a shard group each OWN 1/N of every unit (embeddings, each block,
// ln_f; see model/gpt2.h, Unit). What a rank keeps, per stage (paper, section 5):
//
//                      params      grads       optimizer (fp32 master, m, v)
//   stage 0 (DDP)      all         all         all           (2 + 2 + 12) Psi
//   stage 1 (P_os)     all         all         my 1/N        2 Psi + 2 Psi + 12 Psi/N
//   stage 2 (P_os+g)   all         my 1/N      my 1/N        2 Psi + 14 Psi/N
//   stage 3 (P_os+g+p) my 1/N      my 1/N      my 1/N        16 Psi / N
//
// and what moves in one step (section 7; Psi = elements, per rank):
//
//   stage 0   backward:  all_reduce(grads)                               2 Psi (N-1)/N
//   stage 1   step:      reduce_scatter(grads), AdamW on my shard,
//                        all_gather(updated params)                      2 Psi (N-1)/N
//   stage 2   backward:  reduce_scatter(each unit's grads, as ready)
//             step:      AdamW on my shard, all_gather(params)           2 Psi (N-1)/N
//   stage 3   forward:   all_gather(unit params) before use, free after
//             backward:  all_gather(unit params) again, reduce_scatter
//                        (unit grads), free both                         3 Psi (N-1)/N
//
//   rank:        0            1            2            3
//   unit u:  [ chunk 0  |  chunk 1  |  chunk 2  |  chunk 3 ]   (padded to a multiple of N)
//   stage 3 forward of u:   all_gather -> every rank holds all of u -> compute -> free
//
// Partitioning is per unit, as FSDP does (Zhao et al. 2023, section 3.2):
// unit u of size P_u is padded to N * ceil(P_u / N) and rank i owns chunk i.
// So a rank's shard is sum_u ceil(P_u / N) elements: "Psi / N" rounded up per
// unit. The padding (at most N - 1 elements per unit) is zero and never
// updated; it is counted in the Ledger and in the traced bytes.
//
// Replica groups (HSDP, PyTorch FSDP's HYBRID_SHARD; MiCS, Zhang et al. 2022,
// arXiv:2203.14685): the dp ranks form R replicas of S shard ranks (DP = S x R).
// ZeRO shards over the S ranks of a shard group (axis dp_shard) and every
// shard is replicated across the R replicas (axis dp_rep): gradient shards
// are reduce-scattered inside the shard group, then all-reduced across
// replicas. With --replica-sync-every K > 1 (local SGD, Lin et al. 2020) the
// replicas skip that all-reduce and average their parameters every K steps
// instead: each replica then steps on its own batch of MBS x GA x S.
//
// This is not ZeRO++'s hpZ (Wang et al. 2023, arXiv:2306.10209, sec. 3.2):
// hpZ keeps ZeRO-3's partition of parameters, gradients and optimizer states
// over all R x S ranks and adds a secondary copy of the parameters,
// partitioned inside each node, so that backward's all-gather stays in the
// node. Here the model states themselves are partitioned over S ranks only.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "comm/comm.h"
#include "model/finite.h"
#include "model/safetensors.h"
#include "kernels/cpu/adamw.h"
#include "model/gpt2.h"
#include "optim/adamw.h"
#include "parallel/data_parallel.h"
#include "parallel/ring_attention.h"
#include "parallel/sequence_parallel.h"
#include "parallel/tensor_parallel.h"

namespace ss {

/// How the data-parallel ranks hold and synchronise the model.
struct ZeroConfig {
    int stage = 0;               ///< 0 = DDP, 1 / 2 / 3 = ZeRO stage
    bool bucketed = false;       ///< stage 0: all-reduce in buckets as gradients become ready (else one call per tensor)
    double bucket_mb = 25.0;     ///< stage 0, bucketed: bucket size in MiB (PyTorch DDP's default is 25)
    int replica_sync_every = 1;  ///< 1: replicas all-reduce gradients every step; K > 1: average params every K steps
};

/// ZeRO's partition of the flat parameter buffer over a shard group: per
/// unit, padded to a multiple of N, chunk i to group member i.
struct ShardPlan {
    /// One unit's partition.
    struct UnitShard {
        int64_t begin = 0;   ///< first flat element of the unit
        int64_t end = 0;     ///< one past its last
        int64_t chunk = 0;   ///< ceil((end - begin) / N): elements each rank owns (with padding)
        int64_t local = 0;   ///< where this unit's chunk starts in a rank's shard
    };
    int n = 1;                     ///< shard group size N
    int index = 0;                 ///< this rank's index in the shard group
    std::vector<UnitShard> units;  ///< one per model unit
    int64_t shard_size = 0;        ///< sum of the chunks: elements of a rank's shard

    /// The part of unit @p u this rank owns, as a piece of the flat buffer (may be empty).
    Piece mine(int u) const;
    /// The pieces of every unit this rank owns.
    std::vector<Piece> pieces() const;
};

/// The partition of @p units over a shard group of @p n ranks, seen by member @p index.
ShardPlan make_shard_plan(const std::vector<Unit>& units, int n, int index);

/// One rank's GPT-2 under data parallelism with ZeRO stage 0-3 and replica groups.
///
/// Call order per optimizer step: zero_grad(); GA x (forward(); backward());
/// step(). Collectives are issued on @p shard_group (axis dp_shard) and
/// @p rep_group (axis dp_rep); DDP (stage 0) uses their union, @p dp_group.
class ZeroModel final : public UnitHooks {
public:
    /// Allocates what this rank holds for stage zc.stage (Ledger categories as in the table
    /// above). @p dp_group = @p shard_group x @p rep_group, all containing comm.rank().
    /// With @p tp (tensor parallelism, parallel/tensor_parallel.h) this rank holds its TP
    /// slice of the model, and ZeRO partitions that slice over the shard group. With @p sp
    /// (Ulysses, parallel/sequence_parallel.h, or ring attention, parallel/ring_attention.h)
    /// the passes take this rank's T/sp tokens, and
    /// the dp / shard groups given here must include the sp ranks (dp+sp, dp_shard+sp).
    /// With @p part (a pipeline stage, parallel/pipeline.h) it holds only that stage's
    /// tensors; @p recompute is what its passes recompute in backward.
    ZeroModel(const GPT2Config& cfg, DType storage, const ZeroConfig& zc, Comm& comm, Group dp_group,
              Group shard_group, Group rep_group, Ledger& ledger, const cpu::AdamWParams& hp,
              TensorParallelComm* tp = nullptr, SequenceParallel* sp = nullptr,
              const ModelPart& part = ModelPart::whole(), Recompute recompute = Recompute::none);
    /// Frees everything (the Ledger sees it go).
    ~ZeroModel() override;

    /// Counter-based initialisation: each rank fills only what it holds.
    void init(uint64_t seed);
    /// Loads an HF-layout safetensors file: each rank takes only what it holds.
    void load(const std::string& path);
    /// Saves the whole model to @p path from rank 0 (every rank must call: stage 3 gathers).
    /// The whole model only; a pipeline stage's part is written by parallel/pipeline.h.
    void save(const std::string& path);
    /// The fp32 parameters this rank's part holds, gathered over the shard and tp groups,
    /// in the whole model's HF flat layout, zero where the part holds nothing (and where
    /// it holds only the head's copy of wte). Every rank of those groups must call.
    std::vector<float> whole_params();
    /// The same for the averaged fp32 gradients of the last step (every rank must call).
    /// Valid between backward of the last micro-batch (and sync_tied_grads) and step().
    std::vector<float> full_grads();
    /// The first nan or inf among the gradients this rank holds after the step's last
    /// backward (all of them, or its ZeRO shard), named by tensor; empty if none.
    /// Local: no communication. Valid where full_grads() is.
    NonFinite find_nonfinite_grad() const;
    /// Pipeline parallelism: sums wte's gradients over @p embedding_group, the first and
    /// the last stage (Megatron-LM's embedding group), so both copies of the tied
    /// weight take the same step. Call once per step, after the last backward.
    void sync_tied_grads(const Group& embedding_group);

    /// Checkpoints (train/checkpoint.h): whether this rank's copy of what it holds
    /// is the one saved (replicas and, under DDP, the other dp ranks hold the same).
    bool checkpoint_writer() const;
    /// Adds what this rank owns to @p out as tensors "<kind>/<HF name>" (kind: param,
    /// master, exp_avg, exp_avg_sq), each the range [lo, hi) of the rank's TP-local
    /// tensor, with metadata "<HF name>" = "tp tp_rank lo hi". The head's copy of wte
    /// is left out (the first stage's is the one saved).
    void checkpoint_pieces(StFile& out) const;
    /// Loads a checkpoint's state, whole-model HF flat layout (make_param_layout(cfg)):
    /// fp32 master weights (the parameters of an fp32 run), Adam's m and v, its t, and
    /// the steps done. Each rank takes its TP slice / stage / shard, as load() does.
    void load_state(const std::vector<float>& master, const std::vector<float>& m, const std::vector<float>& v,
                    int adam_t, int steps_done);

    /// Starts a step: gradient accumulators to zero.
    void zero_grad();
    /// Forward of one micro-batch; returns its mean loss (0 on a pipeline stage
    /// without the head). A later pipeline stage starts from @p x_in [B, Tl, C].
    float forward(const int* tokens, const int* targets, int B, int T, Activations& acts, int micro,
                  const float* x_in = nullptr);
    /// Backward of one micro-batch. @p last: the step's last micro-batch (DDP communicates then).
    /// A stage without the head starts from @p dy; one without the embedding writes @p dx_in.
    void backward(const int* tokens, const int* targets, const Activations& acts, float dloss, int micro,
                  bool last, const float* dy = nullptr, float* dx_in = nullptr);
    /// Synchronises gradients as the stage says, runs AdamW on what this rank owns,
    /// and re-assembles parameters (stages 1, 2); local SGD averages replicas every K steps.
    void step();

    /// The partition (stage >= 1; for stage 0 the trivial one of N = 1).
    const ShardPlan& plan() const { return plan_; }
    /// The optimizer state this rank holds.
    AdamW& optimizer() { return *optim_; }
    /// Steps taken.
    int steps_done() const { return step_; }
    /// The memory book this model's tensors are booked in.
    Ledger& ledger() { return ledger_; }
    /// This rank's parameter layout (its TP slice under tensor parallelism).
    const ParamLayout& layout() const { return layout_; }
    /// The parameters this rank stores (all of them for stages 0-2, its shard for stage 3).
    const Tensor& stored_params() const { return params_; }

    /// UnitHooks: unit @p u's fp32 parameters (stage 3: all-gathered now, into Mem::comm).
    const float* params(int u, bool backward) override;
    /// UnitHooks: stage 3 frees the gathered unit.
    void release(int u, bool backward) override;
    /// UnitHooks: where unit @p u's gradients accumulate (stages 2, 3: a temporary full unit).
    float* grads(int u) override;
    /// UnitHooks: DDP launches complete buckets; stages 2, 3 reduce-scatter the unit into the shard.
    void grads_ready(int u) override;

private:
    bool replicas_sync_grads() const { return rep_.size() > 1 && zc_.replica_sync_every == 1; }
    DType st() const { return storage_; }
    void* storage_at(Tensor& t, int64_t elem);
    void all_reduce_grads_naive();
    void launch_ready_buckets(int64_t ready_from);
    void sum_sequence_parallel_grads(int u, float* unit_grads);
    void reduce_scatter_unit(int u, const float* unit_grads);
    void gather_unit(int u, const void* my_chunk, void* out_unit, const Label& label);
    void assemble_params(Tensor& pshard, Payload payload, int step);
    void average_replicas();
    void refresh_compute_copy();
    std::vector<float> pick_mine(const std::vector<float>& full) const;
    void set_local_values(std::vector<float> local);
    std::vector<float> gather_full(const Tensor& shard_or_full, bool is_shard, Payload payload);
    std::vector<float> place_whole(const std::vector<float>& mine, Payload payload);

    GPT2Config cfg_;
    TensorParallelComm* tp_;     // null: no tensor parallelism
    SequenceParallel* sp_;       // null: no sequence parallelism (else Ulysses or ring)
    ModelParallel parallel_;     // what the passes call: tp_ and sp_, or the identity
    Recompute recompute_;        // what the passes recompute in backward
    ParamLayout layout_;
    std::vector<Unit> units_;
    DType storage_;
    ZeroConfig zc_;
    Comm& comm_;
    Group dp_, shard_, rep_;
    Ledger& ledger_;
    ShardPlan plan_;

    Tensor params_;      // stage < 3: all P (storage dtype); stage 3: my shard
    Tensor compute_;     // bf16, stage < 3: fp32 copy of params_ the math reads (workspace)
    Tensor grads_;       // stage < 2: all P; stage >= 2: my shard (storage dtype)
    Tensor grad_acc_;    // bf16: fp32 accumulator of the same shape as grads_ (workspace); fp32: unused
    std::unique_ptr<AdamW> optim_;

    std::map<int, Tensor> gathered_, gathered_f32_;  // stage 3: units in use (comm / workspace)
    std::map<int, Tensor> unit_grads_;               // stage >= 2: unit gradients being made (workspace)
    std::vector<GradBucket> buckets_;                    // stage 0 bucketed: in launch order
    size_t next_bucket_ = 0;
    bool last_micro_ = false;
    int micro_ = 0;
    int step_ = 0;                                   // steps done (labels use step_ + 1)
};

}  // namespace ss
