// group.h — a set of ranks that take part in one collective together.
#pragma once

#include <string>
#include <vector>

namespace ss {

/// The ranks of one communication group and the mesh axis it was sliced along.
///
/// `ranks` lists global rank ids in group order: a rank's index in it is its
/// rank within the group. `axis` is one of "pp", "dp_rep", "dp_shard", "dp",
/// "sp", "tp", "world" (or a composite such as "dp_shard+sp"), and is what the
/// tracer writes as `args.axis`.
struct Group {
    std::string axis;        ///< the axis it was sliced along: "tp", "dp", "dp_shard+sp", ...
    std::vector<int> ranks;  ///< global rank ids in group order (index = rank within the group)

    /// Number of ranks in the group.
    int size() const { return int(ranks.size()); }
    /// Index of global rank @p global_rank in this group, or -1 if it is not a member.
    int index_of(int global_rank) const {
        for (int i = 0; i < size(); ++i)
            if (ranks[i] == global_rank) return i;
        return -1;
    }
};

}  // namespace ss
