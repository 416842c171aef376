#include "plan/plan.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>
#include <tuple>

#include "core/check.h"
#include "core/text.h"
#include "model/sequence_split.h"
#include "parallel/pipeline.h"
#include "plan/memory.h"
#include "plan/zeropp.h"

namespace ss {

int64_t PlanResult::comm_bytes() const {
    int64_t b = 0;
    for (const CommCall& c : comm) b += c.bytes;
    return b;
}

std::string PlanResult::layout_str() const {
    const PlanLayout& l = input.layout;
    std::ostringstream s;
    s << "TP " << mesh.tp << (l.sequence_parallel && mesh.tp > 1 ? "+SP" : "") << " x PP " << mesh.pp;
    if (mesh.pp > 1)
        s << " (" << schedule_name(l.schedule) << (l.schedule == Schedule::interleaved ? " v=" + std::to_string(l.pp_virtual) : "")
          << ")";
    if (mesh.pp > 1 && (!l.pp_split.empty() || input.model.L % mesh.pp != 0)) {  // an uneven split: say it
        s << " [blocks " << join_ints(stage_layers(input, mesh.pp), ",") << "]";
    }
    s << " x SP " << mesh.sp;
    if (mesh.sp > 1) s << " (" << sp_mode_name(l.sp_mode) << ")";
    s << " x DP " << mesh.dp() << " (" << mesh.dp_shard << " x " << mesh.dp_rep << "), ZeRO-" << l.zero;
    const std::string zpp = zeropp_name(l, input.qgz_bits);
    if (!zpp.empty()) s << " + ZeRO++ " << zpp;
    if (l.recompute != Recompute::none) s << ", recompute " << recompute_name(l.recompute);
    if (mesh.dp_rep > 1 && l.replica_sync_every > 1)
        s << (l.replica_outer == ReplicaOuter::nesterov ? ", DiLoCo" : ", local SGD") << " every "
          << l.replica_sync_every << " steps";
    return s.str();
}

namespace {

// ZeRO++'s quantized collectives: which stages they change, qgZ's node, the wire format.
// The engine's rules (plan/zeropp.h, check_zeropp_flags), for `shardscope plan`'s flags.
void check_zeropp(PlanInput& in, int shard_n) {
    PlanLayout& l = in.layout;
    const NodeShape nodes{in.gpus, l.tp, in.gpus_per_node};
    check_hpz_flag(l.zero, l.hpz, l.dp_shard, l.sp, nodes);
    if (l.qgz && l.qgz_node <= 0) l.qgz_node = qgz_node_size(l.hpz, in.gpus_per_node, l.tp, shard_n);
    if (!l.qgz) l.qgz_node = 0;
    check_zeropp_flags(l.zero, l.qwz, l.qgz, shard_n, l.qgz_node, in.qgz_bits, in.quant_block, nodes);
}

// Valid (tp, pp, sp) triples closest to the one asked for (distance in factors of two).
std::string nearest_layouts(const PlanInput& in) {
    const PlanLayout& l = in.layout;
    const int H = in.model.H, L = in.model.L, T = in.seq(), world = in.gpus;
    std::vector<std::tuple<double, int, int, int>> found;
    auto dist = [](int a, int b) { return std::fabs(std::log2(double(std::max(a, 1))) - std::log2(double(std::max(b, 1)))); };
    for (int tp : divisors(H))
        for (int pp : divisors(L))
            for (int sp : divisors(T)) {
                if (world % (1LL * tp * pp * sp) != 0) continue;
                if (l.sp_mode == SpMode::ulysses && (H / tp) % sp != 0) continue;
                if (l.schedule == Schedule::interleaved && L % (1LL * pp * l.pp_virtual) != 0) continue;
                found.emplace_back(dist(tp, l.tp) + dist(pp, l.pp) + dist(sp, l.sp), tp, pp, sp);
            }
    std::sort(found.begin(), found.end());
    std::ostringstream s;
    for (size_t i = 0; i < found.size() && i < 4; ++i) {
        auto [d, tp, pp, sp] = found[i];
        s << (i ? "; " : "") << "--tp " << tp << " --pp " << pp << " --sp " << sp << " (DP " << world / (tp * pp * sp)
          << ")";
    }
    return found.empty() ? std::string("none: try another GPU count") : s.str();
}

// The values of an axis that divide @p n and leave the rest of the layout valid for the world.
std::vector<int> fitting(int n, int others, int world) {
    std::vector<int> ok;
    for (int d : divisors(n))
        if (world % (1LL * d * others) == 0) ok.push_back(d);
    return ok;
}

}  // namespace

PlanInput resolve(const PlanInput& in_, MeshShape* mesh_out, GbsPlan* gbs_out) {
    PlanInput in = in_;
    PlanLayout& l = in.layout;
    const GPT2Config& m = in.model;
    validate(m);
    const int T = in.seq(), world = in.gpus;
    SS_CHECK(world >= 1, "--gpus must be at least 1 (got " << world << ")");
    SS_CHECK(T >= 1 && T <= m.maxT, "--seq " << T << " must be between 1 and the positional table's maxT=" << m.maxT
                                             << "; use --seq " << m.maxT << " or less, or raise --max-seq");
    SS_CHECK(l.zero >= 0 && l.zero <= 3, "--zero " << l.zero << " does not exist; choose 0 (DDP), 1, 2 or 3");
    SS_CHECK(l.tp >= 1 && l.pp >= 1 && l.sp >= 1, "--tp, --pp and --sp must be at least 1 (got " << l.tp << ", "
                                                                                                << l.pp << ", " << l.sp << ")");
    SS_CHECK(in.hw.flops > 0 && in.hw.memory > 0 && in.hw.intra.busbw > 0 && in.hw.inter.busbw > 0 && in.hw.hbm_bw > 0,
             "hardware '" << in.hw.name << "' needs positive FLOP/s, memory, memory bandwidth and link bandwidths");
    if (in.gpus_per_node <= 0) in.gpus_per_node = in.hw.gpus_per_node;
    SS_CHECK(!in.flash_attention || in.act_model == ActModel::paper,
             "--flash-attention applies to the paper's activation layout (--acts paper); with --acts engine leave "
             "it out (this engine's attention keeps no scores under --recompute selective on one SP rank)");
    SS_CHECK(!in.grad_reduce_fp32 || (in.act_model == ActModel::paper && in.dtype == DType::bf16),
             "--grad-reduce-fp32 reduces bf16 gradients in fp32 on GPU stacks: it needs --dtype bf16 and --acts paper "
             "(with --dtype fp32 gradients are fp32 already; this engine reduces bf16 gradients in bf16); leave it out");
    if (l.schedule != Schedule::interleaved) l.pp_virtual = 1;
    SS_CHECK(l.schedule != Schedule::interleaved || (l.pp > 1 && l.pp_virtual >= 2),
             "--schedule interleaved needs --pp 2 or more and --pp-virtual 2 or more (model chunks per stage); got PP "
                 << l.pp << ", v " << l.pp_virtual << "; or use --schedule 1f1b");

    // Each degree must divide what it splits ...
    const int rest_tp = l.pp * l.sp, rest_sp = l.tp * l.pp, rest_pp = l.tp * l.sp;
    auto choose = [&](const char* axis, const std::vector<int>& fit) {  // "choose TP in {1, 2, 4}", or why none
        return fit.empty() ? std::string("no ") + axis + " fits beside the other axes on " + std::to_string(world) + " GPUs"
                           : std::string("choose ") + axis + " in {" + join_ints(fit) + "}";
    };
    SS_CHECK(m.H % l.tp == 0, "TP=" << l.tp << " does not divide n_head=" << m.H << " (each rank takes whole heads); "
                                    << choose("TP", fitting(m.H, rest_tp, world)) << "; nearest valid layouts: " << nearest_layouts(in));
    // V needs no check: wte is padded to Vp, a multiple of TP (model/config.h, padded_vocab).
    SS_CHECK(T % l.sp == 0, "SP=" << l.sp << " does not divide the sequence T=" << T << "; "
                                  << choose("SP", fitting(T, rest_sp, world)) << "; nearest valid layouts: " << nearest_layouts(in));
    check_sequence_split(l.sp_mode, l.ring_split, l.sp, T);  // zig-zag: 2 SP chunks (train checks the same)
    SS_CHECK(l.sp_mode != SpMode::ulysses || (m.H / l.tp) % l.sp == 0,
             "Ulysses SP=" << l.sp << " does not divide the " << m.H / l.tp << " heads each TP rank holds (H " << m.H
                           << " / TP " << l.tp << "): after its all-to-all each rank computes whole heads; "
                           << choose("SP", fitting(m.H / l.tp, rest_sp, world)) << ", or --sp-mode ring; nearest valid layouts: "
                           << nearest_layouts(in));
    // 1F1B and GPipe split L as the engine does (uneven, or --pp-split); interleaving needs equal chunks.
    SS_CHECK(l.pp_split.empty() || l.schedule != Schedule::interleaved,
             "--pp-split: the planner splits 1F1B and GPipe pipelines only; for --schedule interleaved leave it out "
             "(its chunks are equal: PP x v must divide L=" << m.L << ")");
    SS_CHECK(l.pp <= m.L, "PP=" << l.pp << " stages but L=" << m.L << " layers: every stage needs at least one; "
                                << choose("PP", fitting(m.L, rest_pp, world)) << " (or any PP <= " << m.L
                                << " that divides the world); nearest valid layouts: " << nearest_layouts(in));
    if (l.schedule != Schedule::interleaved) pipeline_split(m.L, l.pp, l.pp_split);  // throws for a bad --pp-split
    if (l.schedule == Schedule::interleaved && m.L % (1LL * l.pp * l.pp_virtual) != 0) {  // 64 bits: no wrap
        std::vector<int> fit;  // the v >= 2 that cut each stage's L / PP layers into equal chunks
        for (int v : divisors(m.L / l.pp))
            if (v >= 2) fit.push_back(v);
        SS_FAIL("interleaved: PP " << l.pp << " x v " << l.pp_virtual << " does not divide L=" << m.L
                                   << " layers into equal chunks; "
                                   << (fit.empty() ? "no v of 2 or more does at PP " + std::to_string(l.pp) +
                                                         ": use --schedule 1f1b, another --pp, or more --layers"
                                                   : "choose --pp-virtual in {" + join_ints(fit) + "}"));
    }
    // ... and together they must divide the world.
    const long long mp = 1LL * l.tp * l.pp * l.sp;
    SS_CHECK(world % mp == 0, "TP " << l.tp << " x PP " << l.pp << " x SP " << l.sp << " = " << mp << " does not divide "
                                    << world << " GPUs; nearest valid layouts: " << nearest_layouts(in));
    MeshShape shape;
    try {
        shape = fill_dp(world, MeshShape{l.pp, l.dp_rep, l.dp_shard, l.sp, l.tp});
        ProcessMesh check(world, shape);
    } catch (const Error& e) {
        SS_FAIL(e.what() << " (DP = " << world / mp << " = dp_shard x dp_rep; choose dp_shard in {"
                         << join_ints(divisors(int(world / mp))) << "})");
    }
    l.dp_shard = shape.dp_shard;
    l.dp_rep = shape.dp_rep;
    check_replica_sync(l.replica_sync_every, l.replica_outer, l.dp_rep);  // train's words (plan/plan.h)
    const int shard_n = shape.dp_shard * shape.sp;
    check_zeropp(in, shard_n);  // hpZ's checks too: train's (plan/zeropp.h)
    GbsPlan gbs = make_gbs(world, shape, in.mbs, in.ga, in.gbs, T);
    in.ga = gbs.ga;
    in.gbs = gbs.gbs;
    SS_CHECK(l.schedule != Schedule::interleaved || gbs.ga % l.pp == 0,
             "interleaved 1F1B needs the micro-batches (GA " << gbs.ga << ") to be a multiple of PP " << l.pp
                                                            << " (Megatron's rule); use --ga " << l.pp * ((gbs.ga + l.pp - 1) / l.pp));
    if (mesh_out) *mesh_out = shape;
    if (gbs_out) *gbs_out = gbs;
    return in;
}

void check_replica_sync(int sync_every, ReplicaOuter outer, int dp_rep) {
    SS_CHECK(sync_every >= 1, "--replica-sync-every must be at least 1 (got " << sync_every << ")");
    if (outer == ReplicaOuter::nesterov) {
        SS_CHECK(dp_rep > 1, "--replica-outer nesterov (DiLoCo) takes an outer step over the replicas' parameters, "
                             "and this layout has one replica; add --dp-rep 2 or more (and --replica-sync-every H "
                             "> 1), or drop --replica-outer");
        SS_CHECK(sync_every > 1,
                 "--replica-outer nesterov (DiLoCo) steps the replicas apart for H inner steps between outer "
                 "steps, and --replica-sync-every is 1 (the replicas all-reduce gradients every step); give "
                 "--replica-sync-every H with H > 1, e.g. 4");
    }
    // (DiLoCo's own message above is the more specific one.)
    SS_CHECK(sync_every == 1 || dp_rep > 1,
             "--replica-sync-every " << sync_every << " (local SGD) averages the replica groups' parameters "
                                     << "every " << sync_every << " steps, and this layout has one replica: "
                                     << "nothing to average. Add --dp-rep 2 or more, or leave --replica-sync-every out");
}

PlanResult plan(const PlanInput& question) {
    PlanResult r;
    r.input = resolve(question, &r.mesh, &r.gbs);
    r.num_params = num_params(r.input.model);
    r.memory = plan_memory(r.input, r.mesh, r.gbs.ga);
    r.comm = plan_comm(r.input, r.mesh, r.gbs, 0);
    r.time = plan_time(r.input, r.mesh, r.gbs, r.memory);
    return r;
}

}  // namespace ss
