// pipeline.h — pipeline parallelism: the model's blocks on different ranks
// (GPipe, Huang et al. 2019; PipeDream-Flush / 1F1B and interleaved 1F1B,
// Narayanan et al. 2021, arXiv:2104.04473).
//
// The L blocks are cut into p*v consecutive virtual stages (v = 1 but for
// the interleaved schedule); pipeline rank r holds virtual stages r, r+p, ...
// as its model chunks. Each chunk is a ZeroModel over a ModelPart, so data
// parallelism, ZeRO and tensor / sequence parallelism work inside a stage as
// they do on the whole model:
//
//     pp rank 0               pp rank 1               pp rank 2 (last)
//     wte, wpe, h.0 h.1  -->  h.2 h.3            -->  h.4 h.5, ln_f, wte (copy)
//                  act [B,T,C] ->          act ->          loss
//                 <- act_grad              <- act_grad
//
//     wte's gradients are summed between the first and the last stage
//     (Megatron-LM's embedding group), traced as grad on axis pp.
//
// One optimizer step runs the schedule's action lists (schedule/
// pipeline_schedule.h): every forward and backward of the step's m = GA
// micro-batches, with send / recv (payload act forward, act_grad backward,
// axis "pp") between neighbouring virtual stages. Only the last stage has the
// loss; each micro-batch's backward is scaled by 1/(MBS x T x GA) as without
// pipelining, so the step's gradient is the same as on one rank.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "comm/comm.h"
#include "mesh/process_mesh.h"
#include "model/gpt2.h"
#include "schedule/pipeline_schedule.h"
#include "parallel/zero.h"

namespace ss {

/// Blocks per virtual stage: @p given if not empty (it must have @p stages
/// entries, each >= 1, summing to @p L), else an even split (the first L % stages
/// stages take one more). Throws ss::Error saying what to change.
std::vector<int> pipeline_split(int L, int stages, const std::vector<int>& given);

/// The part of the model virtual stage @p vs of @p split holds.
ModelPart pipeline_part(const std::vector<int>& split, int vs);

/// The embedding group of a pipeline group: its first and last stage, which
/// both hold wte (axis "pp"); the group itself when it has one or two ranks.
Group embedding_group(const Group& pp_group);
/// Every embedding group of @p mesh that is not already a pp group (pp > 2):
/// what an MPI run must prepare besides mesh_groups().
std::vector<Group> embedding_groups(const ProcessMesh& mesh);

/// The tied embedding: sums @p chunk's wte gradients over @p embedding_group, the
/// first and the last stage (Megatron-LM's embedding group), so both copies of the
/// tied weight take the same step. Once per step, after the chunk's last backward;
/// nothing where the group is one rank or the chunk holds no wte.
void sync_tied_grads(Comm& comm, const Group& embedding_group, ZeroModel& chunk);

/// One rank's share of a pipeline: its model chunks and the executor of the schedule.
class PipelineRank {
public:
    /// Makes the chunk of a virtual stage: a ZeroModel over @p part (the caller
    /// wires its dp / tp / sp groups).
    using MakeChunk = std::function<std::unique_ptr<ZeroModel>(const ModelPart& part)>;

    /// @p spec: schedule, p (= pp_group's size), m micro-batches, v chunks.
    /// @p split: blocks per virtual stage (pipeline_split). @p pp_group: this rank's
    /// pipeline group (stage 0 first). @p embedding_group: the first and the last
    /// stage of it (size 1 when p = 1). @p resid_tokens: tokens of each sequence in
    /// this rank's residual stream (T / sp, and / tp under Megatron-SP).
    PipelineRank(Comm& comm, const GPT2Config& cfg, const PipeSpec& spec, std::vector<int> split, Group pp_group,
                 Group embedding_group, int resid_tokens, const MakeChunk& make_chunk);

    /// The schedule this rank runs (all ranks' lists).
    const PipeSchedule& schedule() const { return schedule_; }
    /// --overlap: post each receive early (the next few of the schedule) and let
    /// sends travel while the stage computes, or (off) send and receive blocking
    /// where the schedule says. The bits are the same.
    void set_overlap(bool on) { overlap_ = on; }
    /// This rank's chunks, chunk 0 first.
    std::vector<std::unique_ptr<ZeroModel>>& chunks() { return chunks_; }

    /// Counter-based initialisation of every chunk.
    void init(uint64_t seed);
    /// Every chunk takes its tensors from an HF-layout safetensors file.
    void load(const std::string& path);
    /// Starts a step: every chunk's gradient accumulators to zero.
    void zero_grad();
    /// Runs one step's actions: micro-batch i reads tokens[i] / targets[i] ([B, T]
    /// of this rank's tokens). Returns the sum of the micro-batch losses on the
    /// last stage, 0 elsewhere. Ends with the embedding group's gradient sum.
    float run(const std::vector<std::vector<int>>& tokens, const std::vector<std::vector<int>>& targets, int B,
              int T, float dloss, int step);
    /// Every chunk's optimizer step.
    void step();
    /// The whole model's fp32 parameters (summed over the chunks and the pp group;
    /// every rank of the run must call; every rank gets them).
    std::vector<float> whole_params();
    /// The same for the last step's averaged gradients (between run() and step()).
    std::vector<float> full_grads();
    /// The first nan or inf among this rank's gradients, over its chunks (ZeroModel::find_nonfinite_grad).
    NonFinite find_nonfinite_grad() const;
    /// Checkpoints: true when some chunk's copy is the one saved (ZeroModel::checkpoint_writer).
    bool checkpoint_writer() const;
    /// Every saving chunk's pieces (ZeroModel::checkpoint_pieces) into one file's tensors.
    void checkpoint_pieces(StFile& out) const;
    /// Every chunk loads its part of a checkpoint's whole state (ZeroModel::load_state).
    void load_state(const std::vector<float>& master, const std::vector<float>& m, const std::vector<float>& v,
                    int adam_t, int steps_done, const std::vector<float>& outer_anchor = {},
                    const std::vector<float>& outer_momentum = {});

private:
    std::vector<float> sum_parts(std::vector<float> (ZeroModel::*part)(), Payload payload);
    int rank_of(int vs) const { return pp_.ranks[size_t(vs % spec_.p)]; }
    int first_block(int vs) const { return pipeline_part(split_, vs).first; }

    Comm& comm_;
    GPT2Config cfg_;
    PipeSpec spec_;
    std::vector<int> split_;
    Group pp_, emb_;
    int stage_ = 0;     // this rank's index in the pp group
    int resid_T_ = 0;
    PipeSchedule schedule_;
    bool overlap_ = false;  // set_overlap
    std::vector<std::unique_ptr<ZeroModel>> chunks_;
};

}  // namespace ss
