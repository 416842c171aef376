// test_mesh.cpp — the rank grid against group tables written out by hand.
//
// Each layout lists every group of every kind as a reader would draw it on
// paper; the mesh must produce exactly those members in exactly that order
// (the order is the rank within the group, so it matters as much as the set).
#include <catch2/catch.hpp>
#include <algorithm>
#include <cctype>
#include <map>
#include <sstream>
#include <string>

#include "core/check.h"
#include "mesh/mesh_report.h"
#include "mesh/process_mesh.h"

using namespace ss;
using Table = std::vector<std::vector<int>>;
using Catch::Matchers::Contains;

namespace {

Table singletons(int world) {
    Table t;
    for (int r = 0; r < world; ++r) t.push_back({r});
    return t;
}

std::vector<int> iota(int n, int from = 0, int step = 1) {
    std::vector<int> v;
    for (int i = 0; i < n; ++i) v.push_back(from + i * step);
    return v;
}

// The hand-written group in `table` that holds `rank`.
const std::vector<int>& row_with(const Table& table, int rank) {
    for (const auto& row : table)
        for (int r : row)
            if (r == rank) return row;
    FAIL("rank " << rank << " is in no group of the hand-written table");
    return table.front();
}

// Every kind: groups(kind) equals the table, and group(kind, r) is r's row for every r.
void check_tables(const ProcessMesh& mesh, const std::map<GroupKind, Table>& expect) {
    REQUIRE(expect.size() == all_group_kinds().size());  // the test covers every kind
    for (const auto& [kind, table] : expect) {
        INFO("group kind " << group_kind_name(kind));
        const std::vector<Group> got = mesh.groups(kind);
        Table members;
        for (const Group& g : got) {
            REQUIRE(g.axis == group_kind_name(kind));
            members.push_back(g.ranks);
        }
        REQUIRE(members == table);
        for (int r = 0; r < mesh.world_size(); ++r) {
            INFO("rank " << r);
            REQUIRE(mesh.group(kind, r).ranks == row_with(table, r));
        }
    }
}

// The mpu view against the same tables: groups, ranks (index in the row) and sizes.
void check_mpu(const ProcessMesh& mesh, const std::map<GroupKind, Table>& expect) {
    auto index_in = [](const std::vector<int>& row, int r) {
        for (int i = 0; i < int(row.size()); ++i)
            if (row[i] == r) return i;
        return -1;
    };
    for (int r = 0; r < mesh.world_size(); ++r) {
        INFO("rank " << r);
        const Mpu m = mesh.mpu(r);
        REQUIRE(m.rank() == r);
        const auto& dp = row_with(expect.at(GroupKind::dp), r);
        const auto& tp = row_with(expect.at(GroupKind::tp), r);
        const auto& pp = row_with(expect.at(GroupKind::pp), r);
        const auto& sp = row_with(expect.at(GroupKind::sp), r);
        const auto& dp_sp = row_with(expect.at(GroupKind::dp_sp), r);
        const auto& shard = row_with(expect.at(GroupKind::dp_shard), r);
        const auto& rep = row_with(expect.at(GroupKind::dp_rep), r);
        const auto& shard_sp = row_with(expect.at(GroupKind::dp_shard_sp), r);
        const auto& mp = row_with(expect.at(GroupKind::mp), r);

        REQUIRE(m.get_data_parallel_group().ranks == dp);
        REQUIRE(m.get_data_parallel_rank() == index_in(dp, r));
        REQUIRE(m.get_data_parallel_world_size() == int(dp.size()));
        REQUIRE(m.get_tensor_model_parallel_group().ranks == tp);
        REQUIRE(m.get_tensor_model_parallel_rank() == index_in(tp, r));
        REQUIRE(m.get_tensor_model_parallel_world_size() == int(tp.size()));
        REQUIRE(m.get_pipeline_model_parallel_group().ranks == pp);
        REQUIRE(m.get_pipeline_model_parallel_rank() == index_in(pp, r));
        REQUIRE(m.get_pipeline_model_parallel_world_size() == int(pp.size()));
        REQUIRE(m.get_sequence_parallel_group().ranks == sp);
        REQUIRE(m.get_sequence_parallel_rank() == index_in(sp, r));
        REQUIRE(m.get_sequence_parallel_world_size() == int(sp.size()));
        REQUIRE(m.get_context_parallel_group().ranks == sp);  // Megatron's name for the sp axis
        REQUIRE(m.get_context_parallel_rank() == index_in(sp, r));
        REQUIRE(m.get_context_parallel_world_size() == int(sp.size()));
        REQUIRE(m.get_model_parallel_group().ranks == mp);
        REQUIRE(m.get_model_parallel_rank() == index_in(mp, r));
        REQUIRE(m.get_model_parallel_world_size() == int(mp.size()));
        REQUIRE(m.get_sequence_data_parallel_group().ranks == dp_sp);
        REQUIRE(m.get_sequence_data_parallel_rank() == index_in(dp_sp, r));
        REQUIRE(m.get_sequence_data_parallel_world_size() == int(dp_sp.size()));
        REQUIRE(m.dp_shard_group().ranks == shard);
        REQUIRE(m.dp_shard_rank() == index_in(shard, r));
        REQUIRE(m.dp_shard_world_size() == int(shard.size()));
        REQUIRE(m.dp_rep_group().ranks == rep);
        REQUIRE(m.dp_rep_rank() == index_in(rep, r));
        REQUIRE(m.dp_rep_world_size() == int(rep.size()));
        REQUIRE(m.dp_shard_sp_group().ranks == shard_sp);
        REQUIRE(m.dp_shard_sp_rank() == index_in(shard_sp, r));
        REQUIRE(m.dp_shard_sp_world_size() == int(shard_sp.size()));

        // Pipeline neighbours: the previous / next member of r's pp group, -1 past the ends.
        const int stage = index_in(pp, r);
        REQUIRE(m.pp_is_first_stage() == (stage == 0));
        REQUIRE(m.pp_is_last_stage() == (stage == int(pp.size()) - 1));
        REQUIRE(m.pp_prev_rank() == (stage == 0 ? -1 : pp[stage - 1]));
        REQUIRE(m.pp_next_rank() == (stage == int(pp.size()) - 1 ? -1 : pp[stage + 1]));
        // Megatron's names read the pp group as a ring: the ends wrap around.
        const int n_pp = int(pp.size());
        REQUIRE(m.get_pipeline_model_parallel_first_rank() == pp.front());
        REQUIRE(m.get_pipeline_model_parallel_last_rank() == pp.back());
        REQUIRE(m.get_pipeline_model_parallel_next_rank() == pp[(stage + 1) % n_pp]);
        REQUIRE(m.get_pipeline_model_parallel_prev_rank() == pp[(stage + n_pp - 1) % n_pp]);

        REQUIRE(mesh.rank_at(m.coord()) == r);
    }
}

MeshShape shape(int pp, int dp_rep, int dp_shard, int sp, int tp) {
    MeshShape s;
    s.pp = pp, s.dp_rep = dp_rep, s.dp_shard = dp_shard, s.sp = sp, s.tp = tp;
    return s;
}

}  // namespace

TEST_CASE("world 8 = dp 4 x tp 2: tp rows, dp columns", "[mesh]") {
    // rank = dp_shard_rank * 2 + tp_rank
    const ProcessMesh mesh(8, fill_dp(8, shape(1, 0, 0, 1, 2)));
    REQUIRE(mesh.shape().dp_shard == 4);
    REQUIRE(mesh.shape().dp_rep == 1);
    const Table dp = {{0, 2, 4, 6}, {1, 3, 5, 7}};
    const std::map<GroupKind, Table> expect = {
        {GroupKind::tp, {{0, 1}, {2, 3}, {4, 5}, {6, 7}}},
        {GroupKind::sp, singletons(8)},
        {GroupKind::dp_shard, dp},
        {GroupKind::dp_rep, singletons(8)},
        {GroupKind::dp, dp},
        {GroupKind::pp, singletons(8)},
        {GroupKind::dp_shard_sp, dp},
        {GroupKind::dp_sp, dp},
        {GroupKind::mp, {{0, 1}, {2, 3}, {4, 5}, {6, 7}}},  // pp = 1: model parallel = tp
        {GroupKind::world, {iota(8)}},
    };
    check_tables(mesh, expect);
    check_mpu(mesh, expect);
}

TEST_CASE("world 16 = pp 2 x dp_rep 2 x dp_shard 2 x tp 2", "[mesh]") {
    // rank = pp_rank * 8 + dp_rep_rank * 4 + dp_shard_rank * 2 + tp_rank
    const ProcessMesh mesh(16, shape(2, 2, 2, 1, 2));
    const Table shard = {{0, 2}, {1, 3}, {4, 6}, {5, 7}, {8, 10}, {9, 11}, {12, 14}, {13, 15}};
    const Table dp = {{0, 2, 4, 6}, {1, 3, 5, 7}, {8, 10, 12, 14}, {9, 11, 13, 15}};
    const std::map<GroupKind, Table> expect = {
        {GroupKind::tp, {{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}, {12, 13}, {14, 15}}},
        {GroupKind::sp, singletons(16)},
        {GroupKind::dp_shard, shard},
        {GroupKind::dp_rep, {{0, 4}, {1, 5}, {2, 6}, {3, 7}, {8, 12}, {9, 13}, {10, 14}, {11, 15}}},
        {GroupKind::dp, dp},
        {GroupKind::pp, {{0, 8}, {1, 9}, {2, 10}, {3, 11}, {4, 12}, {5, 13}, {6, 14}, {7, 15}}},
        {GroupKind::dp_shard_sp, shard},
        {GroupKind::dp_sp, dp},
        // Model parallel = pp (major) x tp: rank in group = pp_rank * 2 + tp_rank.
        {GroupKind::mp, {{0, 1, 8, 9}, {2, 3, 10, 11}, {4, 5, 12, 13}, {6, 7, 14, 15}}},
        {GroupKind::world, {iota(16)}},
    };
    check_tables(mesh, expect);
    check_mpu(mesh, expect);

    // Coordinates, written out:     pp rep shard tp   dp
    const int coords[16][5] = {{0, 0, 0, 0, 0}, {0, 0, 0, 1, 0}, {0, 0, 1, 0, 1}, {0, 0, 1, 1, 1},
                               {0, 1, 0, 0, 2}, {0, 1, 0, 1, 2}, {0, 1, 1, 0, 3}, {0, 1, 1, 1, 3},
                               {1, 0, 0, 0, 0}, {1, 0, 0, 1, 0}, {1, 0, 1, 0, 1}, {1, 0, 1, 1, 1},
                               {1, 1, 0, 0, 2}, {1, 1, 0, 1, 2}, {1, 1, 1, 0, 3}, {1, 1, 1, 1, 3}};
    for (int r = 0; r < 16; ++r) {
        INFO("rank " << r);
        const MeshCoord c = mesh.coord(r);
        REQUIRE(c.pp_rank == coords[r][0]);
        REQUIRE(c.dp_rep_rank == coords[r][1]);
        REQUIRE(c.dp_shard_rank == coords[r][2]);
        REQUIRE(c.sp_rank == 0);
        REQUIRE(c.tp_rank == coords[r][3]);
        REQUIRE(c.dp_rank == coords[r][4]);
    }
    // Pipeline neighbours by hand: stage 0's rank 5 sends to 13; 13 sends back to 5.
    REQUIRE(mesh.mpu(5).pp_next_rank() == 13);
    REQUIRE(mesh.mpu(5).pp_prev_rank() == -1);
    REQUIRE(mesh.mpu(13).pp_prev_rank() == 5);
    REQUIRE(mesh.mpu(13).pp_next_rank() == -1);
    REQUIRE(mesh.mpu(13).pp_is_last_stage());
    REQUIRE_FALSE(mesh.mpu(13).pp_is_first_stage());
}

TEST_CASE("world 8 = dp_shard 2 x sp 2 x tp 2: ZeRO shards over dp_shard+sp", "[mesh]") {
    // rank = dp_shard_rank * 4 + sp_rank * 2 + tp_rank
    const ProcessMesh mesh(8, shape(1, 1, 2, 2, 2));
    const Table dp = {{0, 4}, {1, 5}, {2, 6}, {3, 7}};
    // dp_shard major, sp minor: index = dp_shard_rank * 2 + sp_rank.
    const Table shard_sp = {{0, 2, 4, 6}, {1, 3, 5, 7}};
    const std::map<GroupKind, Table> expect = {
        {GroupKind::tp, {{0, 1}, {2, 3}, {4, 5}, {6, 7}}},
        {GroupKind::sp, {{0, 2}, {1, 3}, {4, 6}, {5, 7}}},
        {GroupKind::dp_shard, dp},
        {GroupKind::dp_rep, singletons(8)},
        {GroupKind::dp, dp},
        {GroupKind::pp, singletons(8)},
        {GroupKind::dp_shard_sp, shard_sp},
        {GroupKind::dp_sp, shard_sp},
        {GroupKind::mp, {{0, 1}, {2, 3}, {4, 5}, {6, 7}}},  // sp is not model parallel: mp = tp here
        {GroupKind::world, {iota(8)}},
    };
    check_tables(mesh, expect);
    check_mpu(mesh, expect);
    // Rank 4 = dp_shard 1, sp 0: third in its dp_shard+sp group, second in dp.
    REQUIRE(mesh.mpu(4).dp_shard_sp_rank() == 2);
    REQUIRE(mesh.mpu(4).get_data_parallel_rank() == 1);
    REQUIRE(mesh.mpu(4).get_sequence_data_parallel_rank() == 2);
}

TEST_CASE("world 16 = pp 2 x dp 2 x sp 2 x tp 2: model parallel is tp x pp, not sp", "[mesh][mpu]") {
    // rank = pp_rank * 8 + dp_shard_rank * 4 + sp_rank * 2 + tp_rank
    const ProcessMesh mesh(16, fill_dp(16, shape(2, 0, 0, 2, 2)));
    REQUIRE(mesh.shape().dp_shard == 2);
    const Table tp = {{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}, {12, 13}, {14, 15}};
    const Table sp = {{0, 2}, {1, 3}, {4, 6}, {5, 7}, {8, 10}, {9, 11}, {12, 14}, {13, 15}};
    const Table dp = {{0, 4}, {1, 5}, {2, 6}, {3, 7}, {8, 12}, {9, 13}, {10, 14}, {11, 15}};
    const Table dp_sp = {{0, 2, 4, 6}, {1, 3, 5, 7}, {8, 10, 12, 14}, {9, 11, 13, 15}};
    // One model replica: both stages (pp major) x both tensor halves, at one (dp, sp).
    const Table mp = {{0, 1, 8, 9}, {2, 3, 10, 11}, {4, 5, 12, 13}, {6, 7, 14, 15}};
    const std::map<GroupKind, Table> expect = {
        {GroupKind::tp, tp},
        {GroupKind::sp, sp},
        {GroupKind::dp_shard, dp},
        {GroupKind::dp_rep, singletons(16)},
        {GroupKind::dp, dp},
        {GroupKind::pp, {{0, 8}, {1, 9}, {2, 10}, {3, 11}, {4, 12}, {5, 13}, {6, 14}, {7, 15}}},
        {GroupKind::dp_shard_sp, dp_sp},
        {GroupKind::dp_sp, dp_sp},
        {GroupKind::mp, mp},
        {GroupKind::world, {iota(16)}},
    };
    check_tables(mesh, expect);
    check_mpu(mesh, expect);

    // Rank 13 = (pp 1, dp 1, sp 0, tp 1), by hand.
    const Mpu m = mesh.mpu(13);
    REQUIRE(m.get_model_parallel_group().ranks == std::vector<int>{4, 5, 12, 13});
    REQUIRE(m.get_model_parallel_rank() == 3);  // pp_rank 1 * tp 2 + tp_rank 1
    REQUIRE(m.get_model_parallel_world_size() == 4);
    REQUIRE(m.get_context_parallel_group().ranks == std::vector<int>{13, 15});
    REQUIRE(m.get_context_parallel_rank() == 0);
    REQUIRE(m.get_context_parallel_world_size() == 2);
    REQUIRE(m.get_pipeline_model_parallel_first_rank() == 5);
    REQUIRE(m.get_pipeline_model_parallel_last_rank() == 13);
    REQUIRE(m.get_pipeline_model_parallel_next_rank() == 5);  // wraps; pp_next_rank() says -1
    REQUIRE(m.pp_next_rank() == -1);
    // Every rank: model parallel x data parallel x sp covers the world once (16 = 4 x 2 x 2),
    // so one model replica's ranks are exactly the world / (DP x sp).
    for (int r = 0; r < 16; ++r) {
        const Mpu v = mesh.mpu(r);
        REQUIRE(v.get_model_parallel_world_size() * v.get_data_parallel_world_size() *
                    v.get_context_parallel_world_size() == 16);
    }
}

TEST_CASE("model parallel on a 3-stage pipeline: rank = pp_rank * tp + tp_rank; next/prev wrap", "[mesh][mpu]") {
    // world 24 = pp 3 x dp_rep 2 x tp 4: rank = pp_rank * 8 + dp_rep_rank * 4 + tp_rank
    const ProcessMesh mesh(24, shape(3, 2, 1, 1, 4));
    const Mpu m = mesh.mpu(22);  // pp 2, rep 1, tp 2
    REQUIRE(m.get_model_parallel_group().ranks == std::vector<int>{4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23});
    REQUIRE(m.get_model_parallel_rank() == 10);
    REQUIRE(m.get_model_parallel_world_size() == 12);
    REQUIRE(m.get_pipeline_model_parallel_next_rank() == 6);   // last stage -> first
    REQUIRE(m.get_pipeline_model_parallel_prev_rank() == 14);
    REQUIRE(mesh.mpu(6).get_pipeline_model_parallel_prev_rank() == 22);  // first stage -> last
    REQUIRE(mesh.mpu(6).pp_prev_rank() == -1);
    REQUIRE(m.get_context_parallel_group().ranks == std::vector<int>{22});
    REQUIRE(mesh.groups(GroupKind::mp).size() == 2);  // one model replica per dp rank
}

TEST_CASE("world 32: every axis 2, groups of rank 21 = (pp 1, rep 0, shard 1, sp 0, tp 1)", "[mesh]") {
    const ProcessMesh mesh(32, shape(2, 2, 2, 2, 2));
    const Mpu m = mesh.mpu(21);
    REQUIRE(m.get_tensor_model_parallel_group().ranks == std::vector<int>{20, 21});
    REQUIRE(m.get_sequence_parallel_group().ranks == std::vector<int>{21, 23});
    REQUIRE(m.dp_shard_group().ranks == std::vector<int>{17, 21});
    REQUIRE(m.dp_rep_group().ranks == std::vector<int>{21, 29});
    REQUIRE(m.get_data_parallel_group().ranks == std::vector<int>{17, 21, 25, 29});
    REQUIRE(m.get_pipeline_model_parallel_group().ranks == std::vector<int>{5, 21});
    REQUIRE(m.dp_shard_sp_group().ranks == std::vector<int>{17, 19, 21, 23});
    REQUIRE(m.get_sequence_data_parallel_group().ranks == std::vector<int>{17, 19, 21, 23, 25, 27, 29, 31});
    REQUIRE(m.get_model_parallel_group().ranks == std::vector<int>{4, 5, 20, 21});
    REQUIRE(m.get_model_parallel_rank() == 3);
    REQUIRE(m.get_data_parallel_rank() == 1);
    REQUIRE(m.get_sequence_data_parallel_rank() == 2);
    REQUIRE(m.dp_shard_sp_rank() == 2);
    REQUIRE(m.pp_prev_rank() == 5);
    REQUIRE(m.pp_next_rank() == -1);
    for (GroupKind kind : all_group_kinds()) {  // every kind partitions the world
        std::vector<int> seen(32, 0);
        for (const Group& g : mesh.groups(kind))
            for (int r : g.ranks) seen[r]++;
        REQUIRE(seen == std::vector<int>(32, 1));
    }
}

// ---------------------------------------------------------------------------
// The mpu against its definitions, on many layouts at once (issue 17.5).
//
// The tables above are drawn by hand for a few layouts. The cases below state
// what each mpu answer means and check it for every rank of every layout in
// kLayouts: against a second, independent construction of Megatron's groups,
// and against the two partitions that DeepSpeed's arithmetic relies on.
// ---------------------------------------------------------------------------

namespace {

// pp, dp_rep, dp_shard, sp, tp: every axis alone, each pair, all of them, odd degrees,
// dp_rep x dp_shard with and without sp. The first is the seed's PP 2 x DP 2 x SP 2 x TP 2.
const MeshShape kLayouts[] = {
    shape(2, 1, 2, 2, 2), shape(2, 2, 2, 1, 2), shape(2, 2, 2, 2, 2), shape(4, 1, 2, 1, 2),
    shape(3, 2, 1, 1, 4), shape(1, 2, 3, 1, 2), shape(1, 1, 4, 2, 1), shape(2, 3, 1, 2, 1),
    shape(3, 1, 1, 2, 2), shape(1, 1, 1, 3, 1), shape(5, 1, 1, 1, 1), shape(1, 1, 1, 1, 1),
};

ProcessMesh mesh_of(const MeshShape& s) { return ProcessMesh(int(s.product()), s); }

std::string name_of(const MeshShape& s) {
    std::ostringstream os;
    os << "pp " << s.pp << " x dp_rep " << s.dp_rep << " x dp_shard " << s.dp_shard << " x sp " << s.sp << " x tp "
       << s.tp;
    return os.str();
}

// Megatron-LM's rank generator (megatron/core/parallel_state.py, RankGenerator), written
// again from its definition and not from ProcessMesh: the axes in Megatron's default
// order "tp-cp-ep-dp-pp" (ep = 1 here), the first axis fastest, so
//     rank = tp_rank + tp * (cp_rank + cp * (dp_rank + dp * pp_rank)).
// The group of a rank for a token such as "tp-pp" lets those axes run and holds the
// others; its members are listed with the axis that comes first in the order fastest.
// ShardScope's sp axis is Megatron's cp; its dp is dp_rep x dp_shard flattened.
struct MegatronRanks {
    std::vector<std::string> axis = {"tp", "cp", "dp", "pp"};
    std::vector<int> size;

    explicit MegatronRanks(const MeshShape& s) : size{s.tp, s.sp, s.dp(), s.pp} {}

    std::vector<int> coords(int rank) const {
        std::vector<int> c(axis.size());
        for (size_t a = 0; a < axis.size(); ++a) c[a] = rank % size[a], rank /= size[a];
        return c;
    }
    int rank(const std::vector<int>& c) const {
        int r = 0;
        for (int a = int(axis.size()) - 1; a >= 0; --a) r = r * size[a] + c[a];
        return r;
    }
    std::vector<int> group(const std::string& token, int of_rank) const {
        std::vector<size_t> varying;  // the token's axes, in Megatron's order
        for (size_t a = 0; a < axis.size(); ++a)
            if (("-" + token + "-").find("-" + axis[a] + "-") != std::string::npos) varying.push_back(a);
        int n = 1;
        for (size_t a : varying) n *= size[a];
        std::vector<int> c = coords(of_rank), members;
        for (int i = 0; i < n; ++i) {
            int rest = i;
            for (size_t a : varying) c[a] = rest % size[a], rest /= size[a];  // first axis fastest
            members.push_back(rank(c));
        }
        return members;
    }
};

int index_of(const std::vector<int>& v, int x) {
    for (int i = 0; i < int(v.size()); ++i)
        if (v[i] == x) return i;
    return -1;
}

std::vector<int> intersect(const std::vector<int>& a, const std::vector<int>& b) {
    std::vector<int> out;
    for (int x : a)
        if (index_of(b, x) >= 0) out.push_back(x);
    return out;
}

}  // namespace

TEST_CASE("the mpu's groups are Megatron's parallel_state groups, rank for rank", "[mesh][mpu]") {
    // Megatron builds every group from one RankGenerator: 'tp', 'cp', 'dp' (data parallel
    // without context parallel), 'dp-cp' (with it), 'pp', and 'tp-pp' for the
    // model-parallel group. ShardScope's grid orders its axes the same way (tp fastest,
    // then sp = cp, then dp, pp outermost), so every group must agree member for member,
    // and a rank's rank in each group is its place in the list.
    for (const MeshShape& s : kLayouts) {
        const ProcessMesh mesh = mesh_of(s);
        const MegatronRanks megatron(s);
        INFO(name_of(s));
        for (int r = 0; r < mesh.world_size(); ++r) {
            INFO("rank " << r);
            const Mpu m = mesh.mpu(r);
            const std::vector<int> tp = megatron.group("tp", r), cp = megatron.group("cp", r),
                                   dp = megatron.group("dp", r), dp_cp = megatron.group("dp-cp", r),
                                   pp = megatron.group("pp", r), mp = megatron.group("tp-pp", r);
            REQUIRE(m.get_tensor_model_parallel_group().ranks == tp);
            REQUIRE(m.get_context_parallel_group().ranks == cp);
            REQUIRE(m.get_sequence_parallel_group().ranks == cp);
            REQUIRE(m.get_data_parallel_group().ranks == dp);
            REQUIRE(m.get_sequence_data_parallel_group().ranks == dp_cp);
            REQUIRE(m.get_pipeline_model_parallel_group().ranks == pp);
            REQUIRE(m.get_model_parallel_group().ranks == mp);
            REQUIRE(m.get_tensor_model_parallel_rank() == index_of(tp, r));
            REQUIRE(m.get_context_parallel_rank() == index_of(cp, r));
            REQUIRE(m.get_data_parallel_rank() == index_of(dp, r));
            REQUIRE(m.get_sequence_data_parallel_rank() == index_of(dp_cp, r));
            REQUIRE(m.get_pipeline_model_parallel_rank() == index_of(pp, r));
            REQUIRE(m.get_model_parallel_rank() == index_of(mp, r));
            // Megatron's pipeline helpers read its pp group: first and last stage, and
            // next / prev as a ring ((stage +- 1) mod pp).
            const int stage = index_of(pp, r), n_pp = int(pp.size());
            REQUIRE(m.get_pipeline_model_parallel_first_rank() == pp.front());
            REQUIRE(m.get_pipeline_model_parallel_last_rank() == pp.back());
            REQUIRE(m.get_pipeline_model_parallel_next_rank() == pp[(stage + 1) % n_pp]);
            REQUIRE(m.get_pipeline_model_parallel_prev_rank() == pp[(stage + n_pp - 1) % n_pp]);
        }
    }
}

TEST_CASE("the pipeline groups of Megatron's own example: 16 GPUs, TP 2, PP 4", "[mesh][mpu]") {
    // initialize_model_parallel's docstring (megatron/core/parallel_state.py) draws this
    // layout: "8 data_parallel groups: [g0, g2], [g1, g3], [g4, g6], ...; 8 tensor
    // model-parallel groups: [g0, g1], [g2, g3], ...; 4 pipeline model-parallel groups:
    // [g0, g4, g8, g12], [g1, g5, g9, g13], [g2, g6, g10, g14], [g3, g7, g11, g15]".
    const ProcessMesh mesh(16, fill_dp(16, shape(4, 0, 0, 1, 2)));
    REQUIRE(mesh.shape().dp() == 2);
    Table dp, tp, pp;
    for (const Group& g : mesh.groups(GroupKind::dp)) dp.push_back(g.ranks);
    for (const Group& g : mesh.groups(GroupKind::tp)) tp.push_back(g.ranks);
    for (const Group& g : mesh.groups(GroupKind::pp)) pp.push_back(g.ranks);
    REQUIRE(dp == Table{{0, 2}, {1, 3}, {4, 6}, {5, 7}, {8, 10}, {9, 11}, {12, 14}, {13, 15}});
    REQUIRE(tp == Table{{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}, {12, 13}, {14, 15}});
    REQUIRE(pp == Table{{0, 4, 8, 12}, {1, 5, 9, 13}, {2, 6, 10, 14}, {3, 7, 11, 15}});
    // Rank 9 sits on stage 2 of {1, 5, 9, 13}: it receives from 5 and sends to 13.
    const Mpu m = mesh.mpu(9);
    REQUIRE(m.get_pipeline_model_parallel_rank() == 2);
    REQUIRE(m.get_pipeline_model_parallel_world_size() == 4);
    REQUIRE(m.pp_prev_rank() == 5);
    REQUIRE(m.pp_next_rank() == 13);
    // Its model replica: 4 stages x 2 tensor halves at dp_rank 0, tp fastest.
    REQUIRE(m.get_model_parallel_group().ranks == std::vector<int>{0, 1, 4, 5, 8, 9, 12, 13});
    REQUIRE(m.get_model_parallel_rank() == 5);  // pp_rank 2 * tp 2 + tp_rank 1
}

TEST_CASE("model parallel is the tp x pp ranks at one (dp_rep, dp_shard, sp) coordinate", "[mesh][mpu]") {
    // The definition, checked by search rather than by slicing: rank r's model-parallel
    // group is every rank q with r's dp_rep, dp_shard and sp coordinates, listed pp major,
    // tp fastest. Its size is tp * pp for every layout (sp is not in it: sp ranks hold
    // the same weights, like Megatron's context-parallel ranks).
    for (const MeshShape& s : kLayouts) {
        const ProcessMesh mesh = mesh_of(s);
        INFO(name_of(s));
        for (int r = 0; r < mesh.world_size(); ++r) {
            INFO("rank " << r);
            const MeshCoord c = mesh.coord(r);
            std::vector<int> expect;  // rank order is pp-major, tp-fastest order here
            for (int q = 0; q < mesh.world_size(); ++q) {
                const MeshCoord d = mesh.coord(q);
                if (d.dp_rep_rank == c.dp_rep_rank && d.dp_shard_rank == c.dp_shard_rank && d.sp_rank == c.sp_rank)
                    expect.push_back(q);
            }
            const Mpu m = mesh.mpu(r);
            const Group g = m.get_model_parallel_group();
            REQUIRE(g.axis == "pp+tp");
            REQUIRE(g.ranks == expect);
            REQUIRE(m.get_model_parallel_world_size() == s.tp * s.pp);
            REQUIRE(g.size() == s.tp * s.pp);
            REQUIRE(m.get_model_parallel_rank() == c.pp_rank * s.tp + c.tp_rank);
            REQUIRE(g.ranks[m.get_model_parallel_rank()] == r);
            // Every member sees the same group and places itself where the list does.
            for (int i = 0; i < g.size(); ++i) {
                const Mpu peer = mesh.mpu(g.ranks[i]);
                REQUIRE(peer.get_model_parallel_group().ranks == g.ranks);
                REQUIRE(peer.get_model_parallel_rank() == i);
            }
            // It holds the whole model: every (pp, tp) cell once, one pipeline of tp slices.
            std::vector<int> cells(s.pp * s.tp, 0);
            for (int q : g.ranks) cells[mesh.coord(q).pp_rank * s.tp + mesh.coord(q).tp_rank]++;
            REQUIRE(cells == std::vector<int>(s.pp * s.tp, 1));
        }
    }
}

TEST_CASE("model parallel x sequence data parallel partitions the world; with dp and cp too", "[mesh][mpu]") {
    // DeepSpeed's ZeRO sums a squared gradient norm over its data-parallel process
    // group, which with sequence parallelism is the sequence-data-parallel group
    // (dp x sp), and then over mpu.get_model_parallel_group(). Every gradient element
    // is counted exactly once only if those two groups are a grid of the world: each
    // rank in one group of each kind, any model-parallel group meeting any
    // sequence-data-parallel group in exactly one rank. That is the partition that
    // holds; model parallel x data parallel alone covers world / sp ranks, the sp ranks
    // being counted with the data (Megatron: CP "piggybacks" on DP for the gradients).
    for (const MeshShape& s : kLayouts) {
        const ProcessMesh mesh = mesh_of(s);
        const int world = mesh.world_size();
        INFO(name_of(s));
        const std::vector<Group> mp = mesh.groups(GroupKind::mp), sdp = mesh.groups(GroupKind::dp_sp);
        for (const std::vector<Group>* kind : {&mp, &sdp}) {  // each rank in exactly one group of each
            std::vector<int> seen(world, 0);
            for (const Group& g : *kind)
                for (int r : g.ranks) seen[r]++;
            REQUIRE(seen == std::vector<int>(world, 1));
        }
        REQUIRE(int(mp.size()) == int(sdp.front().size()));  // one model replica per sdp rank
        for (const Group& a : mp)
            for (const Group& b : sdp) REQUIRE(intersect(a.ranks, b.ranks).size() == 1u);

        std::vector<int> by_mp_sdp(world, 0), by_mp_dp_cp(world, 0);
        for (int r = 0; r < world; ++r) {
            INFO("rank " << r);
            const Mpu m = mesh.mpu(r);
            const std::vector<int> self{r};
            REQUIRE(intersect(m.get_model_parallel_group().ranks, m.get_sequence_data_parallel_group().ranks) == self);
            REQUIRE(intersect(m.get_model_parallel_group().ranks, m.get_data_parallel_group().ranks) == self);
            REQUIRE(intersect(m.get_model_parallel_group().ranks, m.get_context_parallel_group().ranks) == self);
            REQUIRE(intersect(m.get_data_parallel_group().ranks, m.get_context_parallel_group().ranks) == self);
            // (model-parallel rank, sequence-data-parallel rank) names r, and so does
            // (model-parallel rank, data-parallel rank, context-parallel rank).
            by_mp_sdp[m.get_model_parallel_rank() * m.get_sequence_data_parallel_world_size() +
                      m.get_sequence_data_parallel_rank()]++;
            by_mp_dp_cp[(m.get_model_parallel_rank() * m.get_data_parallel_world_size() + m.get_data_parallel_rank()) *
                            m.get_context_parallel_world_size() +
                        m.get_context_parallel_rank()]++;
            REQUIRE(m.get_model_parallel_world_size() * m.get_sequence_data_parallel_world_size() == world);
            REQUIRE(m.get_model_parallel_world_size() * m.get_data_parallel_world_size() *
                        m.get_context_parallel_world_size() == world);
            REQUIRE(m.get_model_parallel_world_size() * m.get_data_parallel_world_size() == world / s.sp);
        }
        REQUIRE(by_mp_sdp == std::vector<int>(world, 1));
        REQUIRE(by_mp_dp_cp == std::vector<int>(world, 1));
    }
}

TEST_CASE("world 12 = pp 3 x dp_shard 2 x tp 2: three stages", "[mesh]") {
    // rank = pp_rank * 4 + dp_shard_rank * 2 + tp_rank
    const ProcessMesh mesh(12, fill_dp(12, shape(3, 0, 0, 1, 2)));
    REQUIRE(mesh.shape().dp_shard == 2);
    const Table dp = {{0, 2}, {1, 3}, {4, 6}, {5, 7}, {8, 10}, {9, 11}};
    const std::map<GroupKind, Table> expect = {
        {GroupKind::tp, {{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}}},
        {GroupKind::sp, singletons(12)},
        {GroupKind::dp_shard, dp},
        {GroupKind::dp_rep, singletons(12)},
        {GroupKind::dp, dp},
        {GroupKind::pp, {{0, 4, 8}, {1, 5, 9}, {2, 6, 10}, {3, 7, 11}}},
        {GroupKind::dp_shard_sp, dp},
        {GroupKind::dp_sp, dp},
        {GroupKind::mp, {{0, 1, 4, 5, 8, 9}, {2, 3, 6, 7, 10, 11}}},
        {GroupKind::world, {iota(12)}},
    };
    check_tables(mesh, expect);
    check_mpu(mesh, expect);
    REQUIRE(mesh.mpu(5).pp_prev_rank() == 1);
    REQUIRE(mesh.mpu(5).pp_next_rank() == 9);
}

TEST_CASE("world 1: every group is rank 0 alone", "[mesh]") {
    const ProcessMesh mesh(1, fill_dp(1, shape(1, 0, 0, 1, 1)));
    std::map<GroupKind, Table> expect;
    for (GroupKind kind : all_group_kinds()) expect[kind] = {{0}};
    check_tables(mesh, expect);
    check_mpu(mesh, expect);
    const Mpu m = mesh.mpu(0);
    REQUIRE(m.pp_is_first_stage());
    REQUIRE(m.pp_is_last_stage());
    REQUIRE(m.pp_next_rank() == -1);
    REQUIRE(m.pp_prev_rank() == -1);
}

TEST_CASE("fill_dp lets the missing dp degree take the rest of the world", "[mesh]") {
    MeshShape s = fill_dp(16, shape(2, 0, 0, 1, 2));
    REQUIRE((s.dp_rep == 1 && s.dp_shard == 4));
    s = fill_dp(16, shape(1, 2, 0, 1, 2));  // dp_rep given: dp_shard fills
    REQUIRE((s.dp_rep == 2 && s.dp_shard == 4));
    s = fill_dp(16, shape(1, 0, 2, 1, 2));  // dp_shard given: dp_rep fills
    REQUIRE((s.dp_rep == 4 && s.dp_shard == 2));
    s = fill_dp(16, shape(1, 2, 2, 1, 2));  // both given: unchanged, even if wrong
    REQUIRE((s.dp_rep == 2 && s.dp_shard == 2));

    REQUIRE_THROWS_WITH(fill_dp(10, shape(1, 0, 0, 1, 4)),
                        Contains("pp*sp*tp = 4 does not divide the world size 10") && Contains("e.g. 8 or 12"));
    REQUIRE_THROWS_WITH(fill_dp(16, shape(1, 3, 0, 1, 2)),
                        Contains("pp*sp*tp*dp_rep = 6 does not divide the world size 16"));
    REQUIRE_THROWS_WITH(fill_dp(8, shape(1, -1, 0, 1, 2)), Contains("dp_rep=-1 is not a valid degree"));
    REQUIRE_THROWS_WITH(fill_dp(8, shape(1, 0, 0, 1, 0)), Contains("tp=0 is not a valid degree"));
    REQUIRE_THROWS_WITH(fill_dp(0, shape(1, 0, 0, 1, 1)), Contains("world size 0 is not valid"));
}

TEST_CASE("a grid that does not fill the world says what to set", "[mesh]") {
    REQUIRE_THROWS_WITH(ProcessMesh(12, shape(1, 2, 2, 1, 2)),
                        Contains("world size 12 is not pp*dp_rep*dp_shard*sp*tp = 1*2*2*1*2 = 8") &&
                            Contains("set --dp-shard 3 (or --dp-rep 3) to use all 12 ranks, or run on 8 ranks"));
    REQUIRE_THROWS_WITH(ProcessMesh(16, shape(2, 1, 1, 1, 2)),
                        Contains("= 4; set --dp-shard 4 (or --dp-rep 4) to use all 16 ranks"));
    REQUIRE_THROWS_WITH(ProcessMesh(10, shape(1, 1, 1, 1, 4)),
                        Contains("run on 4 ranks (pp*sp*tp = 4 must divide the world size"));
    REQUIRE_THROWS_WITH(ProcessMesh(8, shape(1, 1, 0, 1, 2)), Contains("dp_shard=0 is not a valid degree"));
    REQUIRE_THROWS_WITH(ProcessMesh(8, shape(-2, 1, 1, 1, 2)), Contains("pp=-2 is not a valid degree"));
    REQUIRE_THROWS_WITH(ProcessMesh(8, shape(1, 1, 1, 0, 2)), Contains("--sp 1 leaves the sp axis unsplit"));
    REQUIRE_THROWS_AS(ProcessMesh(0, shape(1, 1, 1, 1, 1)), Error);

    const ProcessMesh mesh(4, shape(1, 1, 2, 1, 2));
    REQUIRE_THROWS_WITH(mesh.coord(4), Contains("rank 4 is outside the mesh: ranks are 0 .. 3"));
    REQUIRE_THROWS_AS(mesh.mpu(-1), Error);
    MeshCoord bad;
    bad.tp_rank = 2;
    REQUIRE_THROWS_WITH(mesh.rank_at(bad), Contains("tp_rank=2 is outside the mesh"));
}

TEST_CASE("check_divides lists the degrees that would work", "[mesh]") {
    REQUIRE_NOTHROW(check_divides("TP", 2, "n_head", 12));
    REQUIRE_THROWS_WITH(check_divides("TP", 3, "n_head", 4), "TP=3 does not divide n_head=4; choose TP in {1, 2, 4}");
    REQUIRE_THROWS_WITH(check_divides("PP", 5, "n_layer", 12),
                        "PP=5 does not divide n_layer=12; choose PP in {1, 2, 3, 4, 6, 12}");
    REQUIRE_THROWS_WITH(check_divides("SP", 0, "T", 7), "SP=0 does not divide T=7; choose SP in {1, 7}");
    REQUIRE(divisors(1) == std::vector<int>{1});
}

TEST_CASE("mesh_report prints shape, DP, ranks and groups", "[mesh]") {
    const std::string text = mesh_report(ProcessMesh(16, shape(2, 2, 2, 1, 2)));
    REQUIRE_THAT(text, Contains("mesh: 16 ranks = pp 2 x dp_rep 2 x dp_shard 2 x sp 1 x tp 2"));
    REQUIRE_THAT(text, Contains("DP = dp_rep x dp_shard = 2 x 2 = 4"));
    REQUIRE_THAT(text, Contains("    13   1       1         0   0   1  |   2\n"));
    REQUIRE_THAT(text, Contains("{0,2,4,6} {1,3,5,7} {8,10,12,14} {9,11,13,15}"));
    REQUIRE_THAT(text, Contains("{0,8} {1,9} {2,10}"));
    REQUIRE_THAT(text, Contains("sp           16 groups of  1 rank   (axis not split"));
    // Replica groups are hybrid sharding (HSDP / MiCS), not ZeRO++'s hpZ, which
    // keeps ZeRO-3's partition over all of dp (tutorials/05, docs/mesh.md).
    REQUIRE_THAT(text, Contains("all-reduce gradient shards across copies (HSDP, MiCS)"));
    REQUIRE_THAT(text, !Contains("hpZ"));
}

TEST_CASE("mesh_report prints every mpu call's answer on the rank asked for", "[mesh][mpu]") {
    const ProcessMesh mesh(16, shape(2, 1, 2, 2, 2));
    const std::string text = mesh_report(mesh, 13);
    // Rank 13 = (pp 1, dp 1, sp 0, tp 1): the answers the unit test above derives by hand.
    const char* const answers[] = {
        "mpu of rank 13 (pp 1, dp_rep 0, dp_shard 1, sp 0, tp 1)",
        "    get_model_parallel_rank()                   = 3\n",
        "    get_model_parallel_world_size()             = 4\n",
        "    get_model_parallel_group()                  = {4,5,12,13}\n",
        "    get_data_parallel_group()                   = {9,13}\n",
        "    get_context_parallel_group()                = {13,15}\n",
        "    get_pipeline_model_parallel_next_rank()     = 5\n",  // Megatron's wraps to stage 0
        "    pp_next_rank()                              = -1\n",  // ShardScope's stops at the end
    };
    for (const char* line : answers) REQUIRE_THAT(text, Contains(line));
    REQUIRE_THAT(text, Contains("pp+tp         4 groups of  4 ranks"));
    REQUIRE_THAT(text, Contains("no expert axis yet"));
    REQUIRE_THAT(mesh_report(mesh), Contains("mpu of rank 0 "));  // rank 0 unless asked
    REQUIRE_THROWS_WITH(mesh_report(mesh, 16), Contains("rank 16 is outside the mesh: ranks are 0 .. 15"));
    // A large group prints its ends and its size, not thousands of members.
    const std::string big = mesh_report(ProcessMesh(4096, shape(1, 1, 4096, 1, 1)), 5);
    REQUIRE_THAT(big, Contains("get_data_parallel_group()                   = {0,1,2,3,4,5,6,7,...,4094,4095} (4096 ranks)"));
    // The Groups section lists every member, a group wider than a line wrapped after a comma:
    // no line of members passes 100 characters (the dp group's 4096 were one line of 19,377).
    std::istringstream lines(big);
    int longest = 0, member_lines = 0;
    for (std::string l; std::getline(lines, l);)
        if (l.size() > 6 && l.rfind("      ", 0) == 0 && (l[6] == '{' || std::isdigit(static_cast<unsigned char>(l[6])))) {
            longest = std::max(longest, int(l.size()));
            ++member_lines;
        }
    REQUIRE(member_lines > 100);
    REQUIRE(longest <= 100);
    REQUIRE_THAT(big, Contains("      {0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,"));
    REQUIRE_THAT(big, Contains(",4094,4095}\n"));
}
