#include "plan/search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <sstream>

#include "core/check.h"
#include "plan/zeropp.h"

namespace ss {

namespace {

// The degrees to try for one axis: the held value, or every divisor of n that also divides the world.
std::vector<int> choices(int held, int n, int world) {
    if (held > 0) return {held};
    std::vector<int> v;
    for (int d : divisors(n))
        if (world % d == 0) v.push_back(d);
    return v;
}

// One choice of ZeRO++ for a layout (plan/zeropp.h).
struct ZeroPP {
    int hpz = 0;
    bool qwz = false, qgz = false;
};

// The ZeRO++ choices for ZeRO stage @p zero over a shard group of @p n ranks, TP @p tp,
// nodes of @p node GPUs, @p world GPUs: hpZ with K = the group's members in a node (ZeRO-3,
// when the group spans nodes); qwZ (ZeRO-3) and qgZ (ZeRO-2/3) only when @p quantized.
std::vector<ZeroPP> zeropp_choices(int zero, int n, int tp, int node, int world, bool quantized) {
    std::vector<int> hpz{0};
    const int k = node % tp == 0 ? shard_members_per_node(node, tp) : 0;
    if (zero == 3 && k >= 2 && k < n && n % k == 0) hpz.push_back(k);
    std::vector<ZeroPP> out;
    for (int h : hpz)
        for (bool qwz : {false, true})
            for (bool qgz : {false, true}) {
                if ((qwz || qgz) && !quantized) continue;
                if (qwz && zero != 3) continue;
                if (qgz && (zero < 2 || n < 2 || n % qgz_node_size(h, node, tp, n) != 0 ||
                            !groups_inside_nodes(qgz_node_size(h, node, tp, n), tp, world, node)))
                    continue;  // (the checks plan makes: check_zeropp_flags)
                out.push_back({h, qwz, qgz});
            }
    return out;
}

struct Best {
    std::vector<PlanResult> kept;
    PlanResult closest;  // the smallest peak among the layouts that did not fit
    bool any_valid = false;
    int64_t smallest_gbs = -1;
};

}  // namespace

std::vector<PlanResult> search(const SearchInput& s, SearchStats* stats) {
    const auto t0 = std::chrono::steady_clock::now();
    PlanInput base = s.base;
    base.layout = PlanLayout{};  // the axes are the search's; how the replicas sync is the question's
    base.layout.replica_sync_every = s.base.layout.replica_sync_every;
    base.layout.replica_outer = s.base.layout.replica_outer;
    const GPT2Config& m = base.model;
    const int world = base.gpus, T = base.seq();
    SS_CHECK(world >= 1, "--gpus must be at least 1 (got " << world << ")");
    const int node = base.gpus_per_node > 0 ? base.gpus_per_node : base.hw.gpus_per_node;
    SS_CHECK(!s.allow_quantized || base.qgz_bits == 4 || base.qgz_bits == 8,
             "--qgz-bits " << base.qgz_bits << " is not a choice; choose 4 (ZeRO++'s int4) or 8");
    SS_CHECK(!s.allow_quantized || (base.quant_block >= 1 && base.quant_block <= (1 << 20)),
             "--quant-block " << base.quant_block << " must lie in [1, 1048576] elements per fp32 scale");
    std::vector<int> mbs_list = s.mbs.empty() ? std::vector<int>{base.mbs} : s.mbs;
    SearchStats st;
    Best best;
    best.closest.memory.total = INT64_MAX;

    // Keeps @p in with the least recompute that fits; returns that recompute, or nullopt.
    auto evaluate = [&](PlanInput in, const MeshShape& mesh, const GbsPlan& gbs) -> std::optional<Recompute> {
        best.any_valid = true;
        in.gbs = gbs.gbs;
        for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
            in.layout.recompute = r;
            MemoryPlan mem = plan_memory(in, mesh, gbs.ga);
            ++st.evaluated;
            if (!mem.fits()) {
                if (mem.total < best.closest.memory.total) {
                    best.closest.input = in;
                    best.closest.mesh = mesh;
                    best.closest.gbs = gbs;
                    best.closest.memory = mem;
                }
                continue;
            }
            PlanResult res;
            res.input = in;
            res.mesh = mesh;
            res.gbs = gbs;
            res.num_params = num_params(m);
            res.memory = std::move(mem);
            res.time = plan_time(in, mesh, gbs, res.memory);
            ++st.fitting;
            best.kept.push_back(std::move(res));
            return r;  // more recompute only costs time
        }
        return std::nullopt;
    };
    auto consider = [&](const PlanInput& in, const MeshShape& mesh, const GbsPlan& gbs) -> std::optional<Recompute> {
        try {
            return evaluate(in, mesh, gbs);
        } catch (const Error&) {  // a layout the engine cannot run (a schedule too long to hold): no candidate
            return std::nullopt;
        }
    };

    for (int tp : choices(s.tp, m.H, world)) {
        if (tp > node && !s.tp_across_nodes && s.tp == 0) continue;
        for (int pp : choices(s.pp, m.L, world / tp)) {
            // Uneven stages (the engine's split) only where the user holds PP: the search's own PPs divide L.
            if (world % (tp * pp) != 0 || (m.L % pp != 0 && s.pp == 0) || pp > m.L) continue;
            for (int sp : choices(s.sp, T, world / (tp * pp))) {
                if (world % (tp * pp * sp) != 0 || T % sp != 0) continue;
                const int dp = world / (tp * pp * sp);
                for (SpMode mode : {SpMode::ulysses, SpMode::ring}) {
                    if (sp == 1 && mode == SpMode::ring) continue;
                    if (mode == SpMode::ulysses && (m.H / tp) % sp != 0) continue;
                    if (mode == SpMode::ring && T % (2 * sp) != 0) continue;  // zig-zag's 2 SP chunks
                    for (int zero = s.zero < 0 ? 0 : s.zero; zero <= (s.zero < 0 ? 3 : s.zero); ++zero)
                        for (int rep : choices(s.dp_rep, dp, dp)) {
                            // DDP all-reduces over all of DP anyway (unless local SGD keeps the replicas apart)
                            if (zero == 0 && rep > 1 && s.dp_rep == 0 && base.layout.replica_sync_every == 1) continue;
                            if (dp % rep != 0) continue;
                            // ZeRO over a shard group of one rank is DDP: the same row again (unless asked for).
                            if (zero >= 1 && s.zero < 0 && dp / rep * sp == 1) continue;
                            MeshShape mesh{pp, rep, dp / rep, sp, tp};
                            const int shard_n = dp / rep * sp;
                            const std::vector<ZeroPP> zpp = zeropp_choices(zero, shard_n, tp, node, world, s.allow_quantized);
                            for (int mbs : mbs_list) {
                                // GA: exactly the target GBS; or the largest power of two under the cap
                                // (more micro-batches amortise the step's fixed costs and shrink the
                                // bubble), falling back to fewer only while that needs recompute; or as given.
                                std::vector<int> gas;
                                const int64_t per_ga = int64_t(mbs) * dp;
                                if (base.gbs > 0) {
                                    if (base.gbs % per_ga == 0 && base.gbs / per_ga <= kSearchMaxGa)
                                        gas.push_back(int(base.gbs / per_ga));
                                    else if (base.gbs % per_ga == 0)
                                        st.ga_capped = true;
                                } else if (s.max_gbs > 0) {
                                    for (int64_t ga = 1; ga * per_ga <= s.max_gbs; ga *= 2) {
                                        if (ga > kSearchMaxGa) {
                                            st.ga_capped = true;
                                            break;
                                        }
                                        gas.insert(gas.begin(), int(ga));
                                    }
                                } else {
                                    gas.push_back(base.ga > 0 ? base.ga : 1);
                                }
                                if (best.smallest_gbs < 0 || per_ga < best.smallest_gbs) best.smallest_gbs = per_ga;
                                for (int ga : gas) {
                                    PlanInput in = base;
                                    in.mbs = mbs;
                                    in.ga = ga;
                                    in.gbs = 0;
                                    in.gpus_per_node = node;
                                    PlanLayout& l = in.layout;
                                    l.tp = tp;
                                    l.pp = pp;
                                    l.sp = sp;
                                    l.sp_mode = mode;
                                    l.dp_shard = dp / rep;
                                    l.dp_rep = rep;
                                    l.zero = zero;
                                    l.sequence_parallel = tp > 1;
                                    const GbsPlan gbs = make_gbs(world, mesh, mbs, ga, 0, T);
                                    bool without_recompute = false;
                                    auto keep = [&](std::optional<Recompute> r) {
                                        without_recompute |= r && *r == Recompute::none;
                                    };
                                    for (const ZeroPP& z : zpp) {
                                        l.hpz = z.hpz;
                                        l.qwz = z.qwz;
                                        l.qgz = z.qgz;
                                        l.qgz_node = z.qgz ? qgz_node_size(z.hpz, node, tp, shard_n) : 0;
                                        if (pp == 1) {
                                            keep(consider(in, mesh, gbs));
                                            continue;
                                        }
                                        l.schedule = Schedule::one_f_one_b;
                                        l.pp_virtual = 1;
                                        keep(consider(in, mesh, gbs));
                                        for (int v : {2, 4}) {
                                            if (m.L % (pp * v) != 0 || ga % pp != 0) continue;
                                            l.schedule = Schedule::interleaved;
                                            l.pp_virtual = v;
                                            keep(consider(in, mesh, gbs));
                                        }
                                    }
                                    if (without_recompute) break;  // fewer micro-batches would only be slower
                                }
                            }
                        }
                }
            }
        }
    }

    if (!best.any_valid) {
        std::ostringstream why;
        why << "no layout of " << world << " GPUs is valid";
        if (s.max_gbs > 0 && best.smallest_gbs > s.max_gbs)
            why << ": the smallest GBS any of them makes is " << best.smallest_gbs << " (MBS x DP with the most TP x PP x SP)"
                << ", over --max-gbs " << s.max_gbs << "; raise --max-gbs or lower --mbs";
        else if (base.gbs > 0 && st.ga_capped)
            why << ": GBS " << base.gbs << " needs more than " << kSearchMaxGa << " micro-batches (GA) in every layout "
                << "that makes it, more than the search tries; raise --mbs or lower --gbs";
        else if (base.gbs > 0)
            why << ": no MBS x GA x DP makes GBS " << base.gbs << "; choose a GBS that is a multiple of MBS x DP";
        else
        {
            std::string held;  // the flags that hold an axis, as given
            auto hold = [&](const char* flag, int v) {
                if (v > 0) held += (held.empty() ? "" : ", ") + std::string(flag) + " " + std::to_string(v);
            };
            hold("--tp", s.tp);
            hold("--pp", s.pp);
            hold("--sp", s.sp);
            hold("--dp-rep", s.dp_rep);
            why << " with the axes held fixed (" << (held.empty() ? "none" : held)
                << "): each must divide what it splits (TP the heads, PP at most L, SP the sequence, --dp-rep the DP "
                   "the others leave) and together the GPUs; release one of them";
        }
        SS_FAIL(why.str());
    }
    if (best.kept.empty()) {
        const PlanResult& c = best.closest;
        std::ostringstream why;
        why.precision(3);
        why << "the model fits nowhere on " << world << " GPUs of " << base.hw.memory / 1e9
            << " GB: the smallest peak is " << c.memory.total / 1e9 << " GB (TP " << c.mesh.tp << " x PP " << c.mesh.pp
            << " x SP " << c.mesh.sp << " x DP " << c.mesh.dp() << ", ZeRO-" << c.input.layout.zero << ", recompute "
            << recompute_name(c.input.layout.recompute) << ", MBS " << c.input.mbs
            << ")";
        const int64_t states_gpus = int64_t(std::ceil(16.0 * double(num_params(m)) / base.hw.memory));
        if (states_gpus > world)
            why << "; the model states alone need " << states_gpus
                << " GPUs (16 bytes per parameter, ZeRO-3); use more GPUs, GPUs with more memory (--gpu-mem-gb), or a "
                   "smaller --mbs";
        else  // the states would fit sharded: what is left is the activations and buffers of one micro-batch
            why << "; the model states fit sharded over " << states_gpus << " of them (16 bytes per parameter, ZeRO-3), "
                << "but not with the activations and buffers of MBS " << c.input.mbs
                << "; use GPUs with more memory (--gpu-mem-gb)" << (c.input.mbs > 1 ? ", a smaller --mbs" : "")
                << " or a shorter --seq";
        SS_FAIL(why.str());
    }
    std::sort(best.kept.begin(), best.kept.end(), [](const PlanResult& a, const PlanResult& b) {
        if (a.time.tokens_per_s != b.time.tokens_per_s) return a.time.tokens_per_s > b.time.tokens_per_s;
        return a.memory.total < b.memory.total;
    });
    if (s.top > 0 && int(best.kept.size()) > s.top) best.kept.resize(size_t(s.top));
    for (PlanResult& r : best.kept) r.comm = plan_comm(r.input, r.mesh, r.gbs, 0);  // only for those returned
    st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (stats) *stats = st;
    return best.kept;
}

}  // namespace ss
