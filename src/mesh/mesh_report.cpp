// mesh_report.cpp — writes the rank grid as text: shape, legend, ranks, groups, one rank's mpu.
#include "mesh/mesh_report.h"

#include <algorithm>
#include <iomanip>
#include <sstream>
#include <type_traits>

namespace ss {
namespace {

// What each kind of group is for: the collective it runs, in a few words.
const char* purpose(GroupKind kind) {
    switch (kind) {
        case GroupKind::tp: return "Megatron TP: all-reduce activations in every layer (f/g)";
        case GroupKind::sp: return "sequence parallel: all-to-all around attention, or K/V around a ring";
        case GroupKind::dp_shard: return "ZeRO: all-gather parameters, reduce-scatter gradients";
        case GroupKind::dp_rep: return "replicas: all-reduce gradient shards across copies (HSDP, MiCS)";
        case GroupKind::dp: return "data parallel: different batches, same model; GBS counts these";
        case GroupKind::pp: return "pipeline: activations to the next stage, gradients to the previous";
        case GroupKind::dp_shard_sp: return "ZeRO shards over these when sp > 1";
        case GroupKind::dp_sp: return "gradients averaged here (DeepSpeed's sequence-data-parallel)";
        case GroupKind::mp: return "model parallel (tp x pp): one replica of the model, the same samples";
        case GroupKind::world: return "every rank";
    }
    return "";
}

// Writes "{0,1} {2,3} ..." wrapped so that no line passes `width` characters. A group
// wider than a line is itself wrapped after a comma (a dp group of 4096 ranks was
// one line of 19,377 characters); a group that fits goes whole onto one line.
void write_members(std::ostringstream& os, const std::vector<Group>& groups, int indent, int width) {
    int col = indent;
    os << std::string(indent, ' ');
    auto new_line = [&] {
        os << "\n" << std::string(indent, ' ');
        col = indent;
    };
    for (const Group& g : groups) {
        // The group's pieces: "{r0," "r1," ... "rn}"; a line may break after any of them.
        std::vector<std::string> pieces;
        for (int i = 0; i < g.size(); ++i)
            pieces.push_back((i == 0 ? "{" : "") + std::to_string(g.ranks[i]) + (i + 1 < g.size() ? "," : "}"));
        int whole = 0;
        for (const std::string& p : pieces) whole += int(p.size());
        if (col > indent && col + 1 + whole > width) new_line();  // start it on a line of its own
        if (col > indent) {
            os << " ";
            ++col;
        }
        for (const std::string& p : pieces) {
            if (col > indent && col + int(p.size()) > width) new_line();
            os << p;
            col += int(p.size());
        }
    }
    os << "\n";
}

// A group as the mpu section prints it: every member up to 32, else the first
// and last few and the count (a dp group of a large world has thousands).
std::string members(const Group& g) {
    std::ostringstream os;
    const int n = g.size(), shown = n <= 32 ? n : 8;
    os << "{";
    for (int i = 0; i < shown; ++i) os << (i ? "," : "") << g.ranks[i];
    if (shown < n) os << ",...," << g.ranks[n - 2] << "," << g.ranks[n - 1] << "} (" << n << " ranks)";
    else os << "}";
    return os.str();
}

// One line per call: the call's name as the method spells it (#call, so the
// text cannot drift from the code), then its answer on this rank.
#define SS_MPU_CALL(call) line(#call "()", m.call())

// 5. Every mpu call's answer on one rank, family by family, each with what it means.
void write_mpu(std::ostringstream& os, const Mpu& m) {
    auto line = [&os](const char* call, const auto& answer) {
        os << "    " << std::left << std::setw(44) << call << std::right << "= ";
        if constexpr (std::is_same_v<std::decay_t<decltype(answer)>, Group>) os << members(answer) << "\n";
        else os << answer << "\n";
    };
    const MeshCoord& c = m.coord();
    os << "\nmpu of rank " << m.rank() << " (pp " << c.pp_rank << ", dp_rep " << c.dp_rep_rank << ", dp_shard "
       << c.dp_shard_rank << ", sp " << c.sp_rank << ", tp " << c.tp_rank
       << "): each call's answer here, in the names DeepSpeed reads from an mpu (--rank picks another)\n";
    os << "  model parallel = tp x pp: the ranks one model replica is split over (Megatron's get_model_parallel_group(),\n"
          "  its tp-pp group; not sp). Megatron has no _rank or _world_size of it. DeepSpeed's pipeline grid\n"
          "  answers them for tp x pp too (its tp: get_slice_parallel_*); old Megatron, without PP, meant tp:\n"
          "  so DeepSpeed asks for the tensor names first\n";
    SS_MPU_CALL(get_model_parallel_rank);
    SS_MPU_CALL(get_model_parallel_world_size);
    SS_MPU_CALL(get_model_parallel_group);
    os << "  data parallel = dp_rep x dp_shard: different batches, same model slice (GBS counts these)\n";
    SS_MPU_CALL(get_data_parallel_rank);
    SS_MPU_CALL(get_data_parallel_world_size);
    SS_MPU_CALL(get_data_parallel_group);
    os << "  tensor model parallel = tp: a slice of every weight matrix\n";
    SS_MPU_CALL(get_tensor_model_parallel_rank);
    SS_MPU_CALL(get_tensor_model_parallel_world_size);
    SS_MPU_CALL(get_tensor_model_parallel_group);
    os << "  pipeline model parallel = pp: a slice of the layers; Megatron's next/prev wrap around the ends\n";
    SS_MPU_CALL(get_pipeline_model_parallel_rank);
    SS_MPU_CALL(get_pipeline_model_parallel_world_size);
    SS_MPU_CALL(get_pipeline_model_parallel_group);
    SS_MPU_CALL(get_pipeline_model_parallel_first_rank);
    SS_MPU_CALL(get_pipeline_model_parallel_last_rank);
    SS_MPU_CALL(get_pipeline_model_parallel_next_rank);
    SS_MPU_CALL(get_pipeline_model_parallel_prev_rank);
    os << "  sequence parallel = sp (DeepSpeed's Ulysses name); context parallel is the same axis under Megatron's name\n";
    SS_MPU_CALL(get_sequence_parallel_rank);
    SS_MPU_CALL(get_sequence_parallel_world_size);
    SS_MPU_CALL(get_sequence_parallel_group);
    SS_MPU_CALL(get_context_parallel_rank);
    SS_MPU_CALL(get_context_parallel_world_size);
    SS_MPU_CALL(get_context_parallel_group);
    os << "  sequence data parallel = dp x sp: gradients are averaged here (Megatron: data parallel with context parallel)\n";
    SS_MPU_CALL(get_sequence_data_parallel_rank);
    SS_MPU_CALL(get_sequence_data_parallel_world_size);
    SS_MPU_CALL(get_sequence_data_parallel_group);
    os << "  ShardScope's own: the ZeRO shard group, the replica group, and what ZeRO shards over when sp > 1\n";
    SS_MPU_CALL(dp_shard_rank);
    SS_MPU_CALL(dp_shard_world_size);
    SS_MPU_CALL(dp_shard_group);
    SS_MPU_CALL(dp_rep_rank);
    SS_MPU_CALL(dp_rep_world_size);
    SS_MPU_CALL(dp_rep_group);
    SS_MPU_CALL(dp_shard_sp_rank);
    SS_MPU_CALL(dp_shard_sp_world_size);
    SS_MPU_CALL(dp_shard_sp_group);
    SS_MPU_CALL(pp_next_rank);
    SS_MPU_CALL(pp_prev_rank);
    os << "  expert parallel: no expert axis yet, so no get_expert_model_parallel_* (it would take its ranks from dp)\n";
}

#undef SS_MPU_CALL

}  // namespace

std::string mesh_report(const ProcessMesh& mesh, int mpu_rank) {
    const MeshShape& s = mesh.shape();
    const int world = mesh.world_size();
    std::ostringstream os;

    // 1. The shape, and what GBS counts.
    os << "mesh: " << world << (world == 1 ? " rank" : " ranks") << " = pp " << s.pp << " x dp_rep " << s.dp_rep
       << " x dp_shard " << s.dp_shard << " x sp " << s.sp << " x tp " << s.tp << "\n";
    os << "DP = dp_rep x dp_shard = " << s.dp_rep << " x " << s.dp_shard << " = " << s.dp()
       << " batches per step:  GBS = MBS x GA x " << s.dp()
       << "  (pp, sp and tp ranks work on the same samples)\n\n";

    // 2. Legend.
    os << "Legend: axes outermost first. tp varies fastest, so TP peers are consecutive ranks\n"
       << "(one node's NVLink carries TP's per-layer all-reduces); pp is outermost, its traffic is lightest.\n"
       << "  rank = (((pp_rank*" << s.dp_rep << " + dp_rep_rank)*" << s.dp_shard << " + dp_shard_rank)*" << s.sp
       << " + sp_rank)*" << s.tp << " + tp_rank\n"
       << "  pp        pipeline stage: holds a slice of the layers\n"
       << "  dp_rep    replica: a full copy of the (ZeRO-sharded) model, its own batches\n"
       << "  dp_shard  ZeRO shard: holds 1/dp_shard of params, grads, optimizer state; its own batches\n"
       << "  sp        sequence piece: holds part of every sequence (Ulysses / ring attention)\n"
       << "  tp        tensor slice: holds a slice of every weight matrix (Megatron)\n"
       << "  dp        data-parallel rank = dp_rep_rank * dp_shard + dp_shard_rank: which batch it sees\n\n";

    // 3. Every rank's coordinates.
    os << "Ranks\n  rank  pp  dp_rep  dp_shard  sp  tp  |  dp\n";
    for (int r = 0; r < world; ++r) {
        const MeshCoord c = mesh.coord(r);
        os << "  " << std::setw(4) << r << std::setw(4) << c.pp_rank << std::setw(8) << c.dp_rep_rank << std::setw(10)
           << c.dp_shard_rank << std::setw(4) << c.sp_rank << std::setw(4) << c.tp_rank << "  |" << std::setw(4)
           << c.dp_rank << "\n";
    }

    // 4. Every group of every kind.
    os << "\nGroups (members in group order: a rank's place in {...} is its rank in the group)\n";
    // Columns as wide as the world's largest count (4096 groups of 1 shifted the rows).
    const int digits = int(std::to_string(world).size());
    for (GroupKind kind : all_group_kinds()) {
        const std::vector<Group> groups = mesh.groups(kind);
        const int n = int(groups.size()), size = groups.front().size();
        os << "  " << std::left << std::setw(12) << group_kind_name(kind) << std::right << std::setw(std::max(3, digits))
           << n << (n == 1 ? " group  of " : " groups of ") << std::setw(std::max(2, digits)) << size
           << (size == 1 ? " rank   " : " ranks  ");
        if (size == 1 && world > 1) {
            os << "(axis not split: nothing to communicate)\n";
            continue;
        }
        os << purpose(kind);
        if (kind == GroupKind::dp_shard_sp && s.sp == 1) os << "; = dp_shard (sp = 1)";
        if (kind == GroupKind::dp_sp && s.sp == 1) os << "; = dp (sp = 1)";
        os << "\n";
        write_members(os, groups, 6, 100);
    }
    write_mpu(os, mesh.mpu(mpu_rank));
    return os.str();
}

}  // namespace ss
