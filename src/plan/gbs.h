// gbs.h — the global batch size arithmetic, written out.
//
//     GBS = MBS x GA x DP            sequences per optimizer step
//     DP  = world / (TP x PP x SP)   the ranks that see different samples
//
// (Goyal et al. 2017, section 2; docs/formulas.md.) TP, PP and SP ranks work
// on the SAME samples (pieces of each weight, of the layers, of each
// sequence), so they take ranks away from DP and shrink the GBS a world of a
// given size makes. Replicas (dp_rep) and ZeRO shards (dp_shard) are both part
// of DP: they change memory and traffic, never the GBS.
#pragma once

#include <cstdint>
#include <string>

#include "mesh/process_mesh.h"

namespace ss {

/// One layout's batch arithmetic.
struct GbsPlan {
    int world = 1;     ///< ranks
    int tp = 1;        ///< tensor-parallel degree (shares samples)
    int pp = 1;        ///< pipeline stages (share samples)
    int sp = 1;        ///< sequence-parallel degree (shares samples)
    int dp = 1;        ///< data-parallel degree = world / (tp x pp x sp)
    int dp_shard = 1;  ///< ZeRO shard group (part of dp)
    int dp_rep = 1;    ///< replicas (part of dp)
    int mbs = 1;       ///< micro-batch size
    int ga = 1;        ///< gradient accumulation steps (pipeline micro-batches when pp > 1)
    int T = 1;         ///< sequence length
    int64_t gbs = 1;   ///< MBS x GA x DP

    /// Tokens per optimizer step: GBS x T.
    int64_t tokens() const { return gbs * T; }
    /// "GBS = MBS 16 x GA 1 x DP 32 = 512   (DP = 512 / (TP 4 x PP 1 x SP 4))".
    std::string line() const;
    /// Which axes take ranks from DP and which do not, in one line.
    std::string axes_line() const;
};

/// The arithmetic for @p mesh on @p world ranks. GA comes from @p ga when > 0,
/// else from the target @p gbs when > 0, else 1. Throws ss::Error when the
/// target cannot be made (it is not a multiple of MBS x DP, or it disagrees
/// with @p ga), naming the nearest GBS this layout can make and the MBS / GA
/// that would make the target.
GbsPlan make_gbs(int world, const MeshShape& mesh, int mbs, int ga, int64_t gbs, int T);

}  // namespace ss
