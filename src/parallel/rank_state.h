// rank_state.h — what one data-parallel rank holds of the model, whichever
// strategy holds it, and what every strategy does with it the same way.
//
// A strategy (zero.h: DDP, ZeRO-1, -2, -3) says which model states it shards
// over the shard group, its Holding; the rank state then keeps each state
// whole (P elements, the flat layout of model/params.h) or as this rank's
// shard (S elements, shard_plan.h):
//
//   params     the parameters, in the storage dtype (fp32 or bf16)    Mem::params
//   grads      the gradients, in the storage dtype                     Mem::grads
//   optimizer  AdamW's fp32 master weights (bf16 runs), m and v        Mem::optim
//   outer      DiLoCo's outer state, beside the optimizer's (replicas.h) Mem::outer
//
// Mixed precision (--dtype bf16; the ZeRO paper's 2 + 2 + 12 bytes, section
// 3.1) adds two fp32 workspace copies, both behind one accessor each:
// params_f32(), what the passes read (a copy of whole bf16 params; fp32 runs
// read the params themselves), and grads_f32(), what the passes add into
// (an accumulator of the grads' shape; fp32 runs add into the grads).
//
// Shared by all: counter-based init and loading (each rank takes what it
// holds), checkpoint pieces and their loading, and the whole-model views
// (gathered over the shard and tp groups) that save() and the tests read.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "comm/comm.h"
#include "kernels/cpu/adamw.h"
#include "model/finite.h"
#include "model/gpt2.h"
#include "model/safetensors.h"
#include "optim/adamw.h"
#include "parallel/shard_plan.h"
#include "parallel/tensor_parallel.h"

namespace ss {

class Qgz;  // parallel/zeropp.h

/// Which model states a strategy shards over the shard group (its row of zero.h's table).
struct Holding {
    bool optim = false;   ///< AdamW's state (fp32 master, m, v): ZeRO-1 and up (P_os)
    bool grads = false;   ///< gradients: ZeRO-2 and up (P_g)
    bool params = false;  ///< parameters: ZeRO-3 (P_p)
};

/// A run of gradients as they lie between the step's last backward and step().
struct GradSpan {
    void* data = nullptr;      ///< the first element
    size_t count = 0;          ///< elements
    DType dtype = DType::f32;  ///< fp32 (the accumulator) or the storage dtype
};

/// One rank's model states under data parallelism, and where its passes are.
class RankState {
public:
    /// Allocates what @p holding says this rank holds (Ledger categories as in the
    /// picture above). @p dp_group = @p shard_group x @p rep_group; with @p tp this
    /// rank holds its TP slice, with @p part a pipeline stage's tensors only.
    RankState(const GPT2Config& cfg, DType storage, Holding holding, Comm& comm, Group dp_group,
              Group shard_group, Group rep_group, Ledger& ledger, const cpu::AdamWParams& hp,
              TensorParallelComm* tp, const ModelPart& part);

    GPT2Config cfg;             ///< the model's dimensions
    TensorParallelComm* tp;     ///< tensor parallelism (null: none)
    ParamLayout layout;         ///< this rank's layout (TP slice, pipeline stage)
    std::vector<Unit> units;    ///< its units (model/gpt2.h)
    DType storage;              ///< fp32 or bf16: params and grads
    Holding holds;              ///< what is sharded
    Comm& comm;                 ///< this rank's communicator
    Group dp;                   ///< all data-parallel ranks (axis dp): shard x rep
    Group rep;                  ///< the replicas of this rank's shard (axis dp_rep)
    ShardGroup shard;           ///< the shard group and its plan (trivial unless something is sharded)
    /// ZeRO++ qgZ (zeropp.h): set, ZeRO-2/3's gradients are averaged by its quantized
    /// all-to-alls instead of shard's reduce-scatter (null: off; owned by ZeroModel).
    const Qgz* qgz = nullptr;
    Ledger& ledger;             ///< this rank's memory book
    Tensor params;              ///< whole (P) or my shard (S), storage dtype
    Tensor grads;               ///< whole (P) or my shard (S), storage dtype
    std::unique_ptr<AdamW> optim;  ///< over all P or over my shard's pieces
    /// DiLoCo (replicas.h, --replica-outer nesterov): the parameters at the last sync
    /// (fp32, Mem::outer), laid out as the optimizer's m and v (all P, or my shard's
    /// pieces where the optimizer is sharded). Empty otherwise.
    Tensor outer_anchor;
    /// DiLoCo: the outer Nesterov momentum, laid out as outer_anchor (Mem::outer). Empty otherwise.
    Tensor outer_momentum;
    /// Local SGD (replicas.h): the replicas step apart and keep Adam moments of their
    /// own, so a checkpoint saves every replica's (checkpoint_writer, checkpoint_pieces).
    bool replicas_apart = false;

    int micro = 0;              ///< the micro-batch being run
    bool last_micro = false;    ///< backward of the step's last micro-batch is running
    int steps_done = 0;         ///< optimizer steps taken
    /// The step being run (what labels say): steps_done + 1.
    int this_step() const { return steps_done + 1; }

    /// The fp32 parameters the passes read (params held whole): the params of an
    /// fp32 run, the fp32 copy of a bf16 run's.
    const float* params_f32() const { return compute_.empty() ? params.f32() : compute_.f32(); }
    /// The fp32 gradients the passes add into: the grads of an fp32 run, the fp32
    /// accumulator of a bf16 run's (the grads' shape).
    Tensor& grads_f32() { return acc_.empty() ? grads : acc_; }
    /// Read-only grads_f32().
    const Tensor& grads_f32() const { return acc_.empty() ? grads : acc_; }
    /// bf16: rounds grads_f32() elements [begin, begin + n) into grads; fp32: nothing (they are the same).
    void store_grads(int64_t begin, int64_t n);
    /// store_grads() of every element.
    void store_grads() { store_grads(0, grads.numel()); }
    /// bf16 with whole params: the fp32 compute copy from the params again.
    void refresh_compute_copy();
    /// Element @p elem of @p t (any dtype).
    static void* at(Tensor& t, int64_t elem);

    /// Megatron-SP (tensor_parallel.h): sums unit @p u's gradients of what each tp rank
    /// holds whole over the tp group; nothing without Megatron-SP.
    void sum_sequence_parallel_grads(int u, float* unit_grads);
    /// ZeRO-2/3's backward: a fresh zeroed buffer for unit @p u's full gradient (workspace).
    float* new_unit_grads(int u);
    /// ZeRO-2/3's backward: reduce-scatters unit @p u's gradient into my shard of grads_f32()
    /// (qgZ's all-to-alls where qgz is set), and frees it.
    void reduce_scatter_unit_grads(int u);
    /// The same, started (overlap on): the unit's gradient moves into the result, which
    /// ShardGroup::finish_reduce_scatter_add completes.
    UnitInFlight start_reduce_scatter_unit_grads(int u);
    /// bf16 with whole params: the fp32 compute copy of elements [begin, begin + n) from the params again.
    void refresh_compute_copy(int64_t begin, int64_t n);
    /// ZeRO-1, -2: all-gathers every unit of @p pshard (my updated chunks, storage dtype) into the whole params.
    void gather_params(Tensor& pshard, int step);
    /// Where unit @p u's fp32 gradients lie after backward: all of it, or my chunk (grads sharded).
    GradSpan held_grads(int u);

    /// The fp32 values the optimizer updates, in its layout (that of m and v): a bf16
    /// run's master weights; an fp32 run's parameters (my pieces of them where only
    /// the optimizer is sharded, ZeRO-1 and -2). Copied to @p dst (optim->m().numel() elements).
    void optimizer_values(float* dst) const;

    /// Counter-based initialisation: each rank fills only what it holds.
    void init(uint64_t seed);
    /// Loads an HF-layout safetensors file: each rank takes only what it holds.
    void load(const std::string& path);
    /// Loads a checkpoint's whole state (ZeroModel::load_state). DiLoCo's @p outer_anchor and
    /// @p outer_momentum, when given (whole model, HF flat layout), fill the outer state; when
    /// empty, a DiLoCo run starts its outer state where the parameters are (momentum 0).
    void load_state(const std::vector<float>& master, const std::vector<float>& m, const std::vector<float>& v,
                    int adam_t, int steps, const std::vector<float>& outer_anchor = {},
                    const std::vector<float>& outer_momentum = {});
    /// Whether this rank's copy of what it holds is the one a checkpoint saves.
    bool checkpoint_writer() const;
    /// What this rank owns, as checkpoint tensors (ZeroModel::checkpoint_pieces).
    void checkpoint_pieces(StFile& out) const;
    /// The first nan or inf among the gradients this rank holds (ZeroModel::find_nonfinite_grad).
    NonFinite find_nonfinite_grad() const;

    /// Whole fp32 values of @p t, flat layout: widened, or (@p is_shard) every unit
    /// all-gathered over the shard group. Every rank must call it.
    std::vector<float> gather_full(const Tensor& t, bool is_shard, Payload payload);
    /// ZeRO-1, -2, -3: a copy of the accumulated gradients, averaged over @p over
    /// (null: already averaged), gathered whole (phase none: outside the step's traffic).
    std::vector<float> averaged_grads(const Group* over);
    /// This rank's flat values placed in the whole model's HF layout (gathered over tp).
    std::vector<float> place_whole(const std::vector<float>& mine, Payload payload);
    /// The whole model's fp32 parameters (ZeroModel::whole_params).
    std::vector<float> whole_params();

private:
    std::vector<float> pick_mine(const std::vector<float>& full) const;
    std::vector<float> optimizer_share(const std::vector<float>& whole) const;
    void set_local_values(std::vector<float> local);
    void restart_outer_state();

    Tensor compute_;  // bf16, params whole: the fp32 copy of params the passes read (workspace)
    Tensor acc_;      // bf16: the fp32 accumulator of grads' shape (workspace)
    std::map<int, Tensor> unit_grads_;  // ZeRO-2/3: unit gradients being made (workspace)
};

}  // namespace ss
