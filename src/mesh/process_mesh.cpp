// process_mesh.cpp — coordinates, slicing and the checks of the rank grid.
//
// Every group comes from one function, ProcessMesh::group(): take the rank's
// coordinates, let the kind's axes run through all their values (major axis
// first) and hold the other coordinates fixed. The kinds differ only in which
// axes vary (the table below).
#include "mesh/process_mesh.h"

#include <array>
#include <sstream>

#include "core/check.h"

namespace ss {
namespace {

// The grid's axes, outermost first; tp varies fastest.
enum Axis { PP, DP_REP, DP_SHARD, SP, TP, N_AXES };

const char* const kAxisName[N_AXES] = {"pp", "dp_rep", "dp_shard", "sp", "tp"};

using Coords = std::array<int, N_AXES>;

struct KindInfo {
    GroupKind kind;
    const char* name;
    std::vector<int> axes;  // the axes that vary within one group, major first (grid order)
};

const std::vector<KindInfo>& kind_table() {
    static const std::vector<KindInfo> table = {
        {GroupKind::tp, "tp", {TP}},
        {GroupKind::sp, "sp", {SP}},
        {GroupKind::dp_shard, "dp_shard", {DP_SHARD}},
        {GroupKind::dp_rep, "dp_rep", {DP_REP}},
        {GroupKind::dp, "dp", {DP_REP, DP_SHARD}},
        {GroupKind::pp, "pp", {PP}},
        {GroupKind::dp_shard_sp, "dp_shard+sp", {DP_SHARD, SP}},
        {GroupKind::dp_sp, "dp+sp", {DP_REP, DP_SHARD, SP}},
        {GroupKind::mp, "pp+tp", {PP, TP}},
        {GroupKind::world, "world", {PP, DP_REP, DP_SHARD, SP, TP}},
    };
    return table;
}

const KindInfo& info(GroupKind kind) {
    for (const KindInfo& k : kind_table())
        if (k.kind == kind) return k;
    SS_FAIL("unknown group kind " << int(kind));
}

Coords degrees(const MeshShape& s) { return {s.pp, s.dp_rep, s.dp_shard, s.sp, s.tp}; }

// Row-major over the grid: the last axis (tp) is the fastest.
int linear(const Coords& c, const Coords& deg) {
    int r = 0;
    for (int a = 0; a < N_AXES; ++a) r = r * deg[a] + c[a];
    return r;
}

Coords unlinear(int rank, const Coords& deg) {
    Coords c{};
    for (int a = N_AXES - 1; a >= 0; --a) {
        c[a] = rank % deg[a];
        rank /= deg[a];
    }
    return c;
}

void check_degree(const char* name, const char* flag, int d) {
    SS_CHECK(d >= 1, name << "=" << d << " is not a valid degree: every axis needs at least 1 rank ("
                          << flag << " 1 leaves the " << name << " axis unsplit)");
}

void check_world(int world) {
    SS_CHECK(world >= 1, "world size " << world << " is not valid: run on at least 1 rank (--ranks 1 or more)");
}

}  // namespace

const std::vector<GroupKind>& all_group_kinds() {
    static const std::vector<GroupKind> kinds = {
        GroupKind::tp, GroupKind::sp, GroupKind::dp_shard, GroupKind::dp_rep, GroupKind::dp,
        GroupKind::pp, GroupKind::dp_shard_sp, GroupKind::dp_sp, GroupKind::mp, GroupKind::world,
    };
    return kinds;
}

const char* group_kind_name(GroupKind kind) { return info(kind).name; }

std::vector<int> divisors(int n) {
    std::vector<int> d;
    for (int i = 1; i <= n; ++i)
        if (n % i == 0) d.push_back(i);
    return d;
}

void check_divides(const char* axis, int degree, const char* what, int n) {
    SS_CHECK(n >= 1, what << "=" << n << " must be at least 1");
    if (degree >= 1 && n % degree == 0) return;
    std::ostringstream choices;
    const std::vector<int> d = divisors(n);
    for (size_t i = 0; i < d.size(); ++i) choices << (i ? ", " : "") << d[i];
    SS_FAIL(axis << "=" << degree << " does not divide " << what << "=" << n << "; choose " << axis
                 << " in {" << choices.str() << "}");
}

MeshShape fill_dp(int world, MeshShape s) {
    check_world(world);
    check_degree("pp", "--pp", s.pp);
    check_degree("sp", "--sp", s.sp);
    check_degree("tp", "--tp", s.tp);
    SS_CHECK(s.dp_rep >= 0, "dp_rep=" << s.dp_rep << " is not a valid degree: give at least 1, or leave it out to take the rest of the world");
    SS_CHECK(s.dp_shard >= 0, "dp_shard=" << s.dp_shard << " is not a valid degree: give at least 1, or leave it out to take the rest of the world");
    if (s.dp_rep > 0 && s.dp_shard > 0) return s;  // both given: ProcessMesh checks the product

    // Neither given: plain ZeRO over all of DP (dp_rep = 1). One given: the other takes the rest.
    const bool fill_shard = s.dp_shard == 0;
    if (fill_shard && s.dp_rep == 0) s.dp_rep = 1;
    const long long fixed = 1LL * s.pp * s.sp * s.tp * (fill_shard ? s.dp_rep : s.dp_shard);
    const char* filled = fill_shard ? "dp_shard" : "dp_rep";
    std::ostringstream fixed_text;
    fixed_text << "pp*sp*tp" << (fill_shard ? (s.dp_rep > 1 ? "*dp_rep" : "") : "*dp_shard") << " = " << fixed;
    if (world % fixed != 0) {
        std::ostringstream near;  // the nearest worlds that would divide
        const long long below = world / fixed * fixed, above = below + fixed;
        if (below > 0) near << below << " or ";
        near << above;
        SS_FAIL(fixed_text.str() << " does not divide the world size " << world << ", so " << filled
                                 << " cannot take the rest of the world; run on a multiple of " << fixed
                                 << " ranks (e.g. " << near.str() << "), or change the degrees so their product divides "
                                 << world);
    }
    (fill_shard ? s.dp_shard : s.dp_rep) = int(world / fixed);
    return s;
}

ProcessMesh::ProcessMesh(int world, MeshShape shape) : world_(world), shape_(shape) {
    check_world(world);
    check_degree("pp", "--pp", shape.pp);
    check_degree("dp_rep", "--dp-rep", shape.dp_rep);
    check_degree("dp_shard", "--dp-shard", shape.dp_shard);
    check_degree("sp", "--sp", shape.sp);
    check_degree("tp", "--tp", shape.tp);
    const long long product = shape.product();
    if (product == world) return;

    // Say what would fill the world: a different dp_shard, a different dp_rep, or a different world.
    std::ostringstream fix;
    const long long others = 1LL * shape.pp * shape.sp * shape.tp;
    const bool shard_fits = world % (others * shape.dp_rep) == 0;
    const bool rep_fits = world % (others * shape.dp_shard) == 0;
    if (shard_fits) fix << "set --dp-shard " << world / (others * shape.dp_rep);
    if (rep_fits) fix << (shard_fits ? " (or --dp-rep " : "set --dp-rep ") << world / (others * shape.dp_shard)
                      << (shard_fits ? ")" : "");
    if (shard_fits || rep_fits) fix << " to use all " << world << " ranks, or ";
    fix << "run on " << product << " ranks";
    if (!shard_fits && !rep_fits)
        fix << " (pp*sp*tp = " << others << " must divide the world size for the dp axes to fill it)";
    SS_FAIL("world size " << world << " is not pp*dp_rep*dp_shard*sp*tp = " << shape.pp << "*" << shape.dp_rep
                          << "*" << shape.dp_shard << "*" << shape.sp << "*" << shape.tp << " = " << product
                          << "; " << fix.str());
}

MeshCoord ProcessMesh::coord(int rank) const {
    SS_CHECK(rank >= 0 && rank < world_, "rank " << rank << " is outside the mesh: ranks are 0 .. " << world_ - 1);
    const Coords c = unlinear(rank, degrees(shape_));
    MeshCoord m;
    m.pp_rank = c[PP];
    m.dp_rep_rank = c[DP_REP];
    m.dp_shard_rank = c[DP_SHARD];
    m.sp_rank = c[SP];
    m.tp_rank = c[TP];
    m.dp_rank = c[DP_REP] * shape_.dp_shard + c[DP_SHARD];
    return m;
}

int ProcessMesh::rank_at(const MeshCoord& m) const {
    const Coords deg = degrees(shape_);
    const Coords c = {m.pp_rank, m.dp_rep_rank, m.dp_shard_rank, m.sp_rank, m.tp_rank};
    for (int a = 0; a < N_AXES; ++a)
        SS_CHECK(c[a] >= 0 && c[a] < deg[a], kAxisName[a] << "_rank=" << c[a] << " is outside the mesh: "
                                                           << kAxisName[a] << " has " << deg[a] << " ranks (0 .. "
                                                           << deg[a] - 1 << ")");
    return linear(c, deg);
}

Group ProcessMesh::group(GroupKind kind, int rank) const {
    const KindInfo& k = info(kind);
    const Coords deg = degrees(shape_);
    (void)coord(rank);  // range check
    Coords c = unlinear(rank, deg);
    int n = 1;
    for (int a : k.axes) n *= deg[a];

    Group g;
    g.axis = k.name;
    g.ranks.reserve(n);
    for (int i = 0; i < n; ++i) {
        // Member i: write i in mixed radix over the varying axes, the last axis fastest.
        int rest = i;
        for (int j = int(k.axes.size()) - 1; j >= 0; --j) {
            c[k.axes[j]] = rest % deg[k.axes[j]];
            rest /= deg[k.axes[j]];
        }
        g.ranks.push_back(linear(c, deg));
    }
    return g;
}

std::vector<Group> ProcessMesh::groups(GroupKind kind) const {
    // Each group has one member whose varying coordinates are all 0: its first
    // and smallest rank. Collect the group once, from that member (building it
    // from every member would cost world x group size: minutes for a large world).
    const KindInfo& k = info(kind);
    const Coords deg = degrees(shape_);
    std::vector<Group> out;
    for (int r = 0; r < world_; ++r) {
        const Coords c = unlinear(r, deg);
        bool first = true;
        for (int a : k.axes) first = first && c[a] == 0;
        if (first) out.push_back(group(kind, r));
    }
    return out;
}

Mpu ProcessMesh::mpu(int rank) const { return Mpu(*this, rank); }

Mpu::Mpu(const ProcessMesh& mesh, int rank) : mesh_(mesh), rank_(rank), coord_(mesh.coord(rank)) {}

int Mpu::pp_next_rank() const {
    if (pp_is_last_stage()) return -1;
    MeshCoord next = coord_;
    next.pp_rank += 1;
    return mesh_.rank_at(next);
}

int Mpu::pp_prev_rank() const {
    if (pp_is_first_stage()) return -1;
    MeshCoord prev = coord_;
    prev.pp_rank -= 1;
    return mesh_.rank_at(prev);
}

// Megatron's pipeline neighbours: the pp group read as a ring (stage (i +- 1) mod pp).
int Mpu::get_pipeline_model_parallel_first_rank() const { return get_pipeline_model_parallel_group().ranks.front(); }

int Mpu::get_pipeline_model_parallel_last_rank() const { return get_pipeline_model_parallel_group().ranks.back(); }

int Mpu::get_pipeline_model_parallel_next_rank() const {
    MeshCoord next = coord_;
    next.pp_rank = (coord_.pp_rank + 1) % mesh_.shape().pp;
    return mesh_.rank_at(next);
}

int Mpu::get_pipeline_model_parallel_prev_rank() const {
    MeshCoord prev = coord_;
    prev.pp_rank = (coord_.pp_rank + mesh_.shape().pp - 1) % mesh_.shape().pp;
    return mesh_.rank_at(prev);
}

}  // namespace ss
