// mpi_groups_mpi.cpp — what the mpi and nccl backends' prepare() share: the
// checks of the group list and the hash that tells whether every rank passed
// the same one (mpi_detail.h).
#include <set>

#include "comm/comm.h"
#include "comm/mpi_detail.h"
#include "core/check.h"

namespace ss::mpi {

uint64_t hash_groups(const std::vector<Group>& groups) {
    uint64_t h = 1469598103934665603ull;
    auto mix = [&](uint64_t v) {
        h ^= v;
        h *= 1099511628211ull;
    };
    for (const Group& g : groups) {
        mix(uint64_t(g.ranks.size()) | (1ull << 63));
        for (int r : g.ranks) mix(uint64_t(uint32_t(r)));
    }
    return h;
}

std::vector<const Group*> fresh_groups(const std::vector<Group>& groups, int world,
                                       const std::map<std::vector<int>, int>& prepared, const char* who) {
    std::vector<const Group*> fresh;
    std::set<std::vector<int>> seen;
    for (size_t i = 0; i < groups.size(); ++i) {
        const Group& g = groups[i];
        SS_CHECK(!g.ranks.empty(), who << ": group " << i << " (" << g.axis << ") is empty");
        std::vector<char> in(size_t(world), 0);
        for (int r : g.ranks) {
            SS_CHECK(r >= 0 && r < world, who << ": group " << i << " (" << g.axis << " " << ranks_str(g.ranks)
                                              << ") has rank " << r << ", outside the world [0, " << world << ")");
            SS_CHECK(!in[size_t(r)], who << ": group " << i << " (" << g.axis << " " << ranks_str(g.ranks)
                                         << ") lists rank " << r << " twice");
            in[size_t(r)] = 1;
        }
        if (!prepared.count(g.ranks) && seen.insert(g.ranks).second) fresh.push_back(&g);
    }
    return fresh;
}

}  // namespace ss::mpi
