// sharded_checkpoint.h — checkpoints of a parallel run that any layout can
// load: each rank saves what it owns, a manifest says what was saved, and
// loading assembles whole HF tensors before any rank takes its part.
//
//   DIR/latest                     "step-00000010": the newest complete checkpoint
//   DIR/step-00000010/
//       manifest.json              the run (model, layout, dtype, data position, Adam's t, vocab_divisible_by,
//                                  the seed: the only randomness, as there is no dropout)
//                                  and every shard file with its size in bytes and its
//                                  checksum (FNV-1a 64 of its bytes, core/checksum.h)
//       rank-00000.safetensors     what rank 0 owns: "param/<HF name>" (storage dtype),
//       rank-00001.safetensors     "master/<HF name>" (bf16 runs), "exp_avg/<HF name>",
//       ...                        "exp_avg_sq/<HF name>", each a range [lo, hi) of the
//                                  rank's TP-local tensor; __metadata__ "<HF name>" =
//                                  "tp tp_rank lo hi" says where it sits in the whole
//                                  DiLoCo adds "outer_anchor/<HF name>" and "outer_momentum/<HF name>"
//                                  (the outer state, parallel/replicas.h) beside exp_avg
//
// Local SGD and DiLoCo (--replica-sync-every H > 1) save at syncs only, where the
// replicas agree on the parameters but not on Adam's moments (each replica's
// AdamW saw its own batches): there every replica r > 0 writes its moments too,
// as "exp_avg.rep<r>/<HF name>" and "exp_avg_sq.rep<r>/<HF name>", and the
// manifest's "replicas" says how many replicas own moments and how they sync.
//
// Who writes: one copy of everything (but the replicas' own moments, above). Replicas (dp_rep) hold the same shards
// and, under DDP, every dp rank the same model, so only replica 0 (and, for
// DDP, the first rank of each shard group) writes; every TP rank, pipeline
// stage and ZeRO shard writes its own part. The head's copy of the tied wte
// is not saved: it equals the first stage's.
//
// Nothing half-written is ever loaded: the ranks write into
// DIR/step-N.partial/ (each file via a temporary name and a rename), rank 0
// writes the manifest last, renames the directory to DIR/step-N and only then
// points DIR/latest at it. A crash mid-save leaves a .partial directory that
// nothing reads, and the previous checkpoint still loads.
//
// Loading (any layout: another ZeRO stage, TP, PP, DP, dtype) reads every
// file, checks each against the manifest (present, the size and the checksum it says), places
// every element in the whole HF tensor it came from (ParamSpec::global_index)
// and requires every element of the model to be covered, then each rank takes
// its slice as ZeroModel::load_state says. DeepSpeed calls this a "universal
// checkpoint"; PyTorch DCP reshards the same way, by global offsets.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "comm/comm.h"
#include "core/dtype.h"
#include "model/config.h"
#include "parallel/pipeline.h"

namespace ss {

/// A checkpoint once read: the whole model's state in the HF flat layout
/// (make_param_layout(cfg)).
struct Checkpoint {
    std::string dir;          ///< the step directory it was read from
    nlohmann::json manifest;  ///< its manifest.json
    int step = 0;             ///< optimizer steps done when it was saved
    int adam_t = 0;           ///< Adam's step count t (bias correction)
    DType dtype = DType::f32;  ///< the saving run's storage dtype
    std::vector<float> master;  ///< fp32 master weights (an fp32 run's parameters)
    std::vector<float> m;       ///< Adam's first moment
    std::vector<float> v;       ///< Adam's second moment (replica 0's under local SGD)
    std::vector<float> outer_anchor;    ///< DiLoCo: the parameters at the last sync (empty: not a DiLoCo checkpoint)
    std::vector<float> outer_momentum;  ///< DiLoCo: the outer Nesterov momentum (empty likewise)
    /// Local SGD / DiLoCo: replica r's first moment at [r - 1] for r = 1 .. R - 1 (replica
    /// 0's is m); empty when the replicas shared their moments (all-reduced gradients).
    std::vector<std::vector<float>> replica_m;
    /// The same for the second moment (replica 0's is v).
    std::vector<std::vector<float>> replica_v;
};

/// "step-00000010"
std::string checkpoint_step_name(int step);

/// Saves step @p step of a run into @p dir (see the top of this file). Every rank
/// of the run calls it (it meets the others at barriers); @p run is the manifest's
/// description of the run (model, layout, data position), written by rank 0.
void save_checkpoint(Comm& comm, const PipelineRank& pipe, const std::string& dir, int step,
                     const nlohmann::json& run);

/// --keep-last: after step @p newest_step's checkpoint is complete and `latest`
/// names it, deletes the complete checkpoints DIR/step-N with N < @p newest_step
/// except the @p keep - 1 newest of them, so that @p keep remain (0 keeps all).
/// Checkpoints of later steps (an older run's, when this one resumed from
/// before them) and .partial directories are left alone. Returns how many it deleted.
int prune_checkpoints(const std::string& dir, int newest_step, int keep);

/// True when @p path belongs to the checkpoints in @p dir: @p dir itself when it is
/// one step directory, else its `latest`, its lock file, or anything inside one of
/// its step-N directories. An output there would overwrite a checkpoint.
bool checkpoint_owns_path(const std::string& dir, const std::string& path);

/// The step directory to resume from: @p dir itself if it holds a manifest.json,
/// else the one DIR/latest names. Throws ss::Error saying what is missing.
std::string find_checkpoint(const std::string& dir);

/// The model a checkpoint was saved for (its manifest's "model").
GPT2Config checkpoint_model(const nlohmann::json& manifest);

/// Reads and checks the checkpoint in @p step_dir for @p cfg. Throws ss::Error
/// naming the file for a missing, truncated or changed shard (size or checksum), a manifest that does not
/// match the files or the model, or a part of the model no shard holds.
Checkpoint read_checkpoint(const std::string& step_dir, const GPT2Config& cfg);

/// `shardscope checkpoint consolidate DIR OUT`: the checkpoint's parameters
/// (its fp32 master weights, in the saving run's dtype) as one HF-layout
/// safetensors file. Returns the step it came from. Refuses (ss::Error) an @p out
/// inside the checkpoint it reads (checkpoint_owns_path), and one it cannot write,
/// before reading anything.
int consolidate_checkpoint(const std::string& dir, const std::string& out);

}  // namespace ss
