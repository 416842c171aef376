#include "plan/gbs.h"

#include <climits>
#include <cstdio>
#include <sstream>

#include "core/check.h"
#include "core/text.h"

namespace ss {

std::string GbsPlan::line() const {
    char buf[256];
    std::snprintf(buf, sizeof buf, "GBS = MBS %d x GA %d x DP %d = %lld   (DP = %d / (TP %d x PP %d x SP %d))", mbs, ga,
                  dp, (long long)gbs, world, tp, pp, sp);
    return buf;
}

std::string GbsPlan::axes_line() const {
    std::ostringstream s;
    s << "ranks that share samples: TP " << tp << ", PP " << pp << ", SP " << sp << " (" << tp * pp * sp
      << " per model copy); DP " << dp << " = dp_shard " << dp_shard << " x dp_rep " << dp_rep
      << " (replicas and shards both count)";
    return s.str();
}

namespace {

}  // namespace

GbsPlan make_gbs(int world, const MeshShape& mesh, int mbs, int ga, int64_t gbs, int T) {
    SS_CHECK(mbs >= 1, "--mbs must be at least 1 (got " << mbs << ")");
    SS_CHECK(ga >= 0, "--ga must be at least 1 (got " << ga << ")");
    SS_CHECK(gbs >= 0, "--gbs must be positive (got " << gbs << ")");
    GbsPlan g;
    g.world = world;
    g.tp = mesh.tp;
    g.pp = mesh.pp;
    g.sp = mesh.sp;
    g.dp = mesh.dp();
    g.dp_shard = mesh.dp_shard;
    g.dp_rep = mesh.dp_rep;
    g.mbs = mbs;
    g.T = T;
    const int64_t per_ga = int64_t(mbs) * g.dp;  // sequences of one micro-batch on every dp rank
    if (gbs > 0 && gbs % per_ga != 0) {
        std::ostringstream why;
        why << "GBS " << gbs << " cannot be made: GBS = MBS " << mbs << " x GA x DP " << g.dp << " is a multiple of "
            << per_ga << "; nearest: ";
        const int64_t lo = gbs / per_ga, hi = lo + 1;
        if (lo >= 1) why << "GBS " << lo * per_ga << " (--ga " << lo << ") or ";
        why << "GBS " << hi * per_ga << " (--ga " << hi << ")";
        if (gbs % g.dp == 0) {
            std::vector<int> mbs_ok;
            for (int m : divisors(int(std::min<int64_t>(gbs / g.dp, 1 << 20)))) mbs_ok.push_back(m);
            why << "; or keep GBS " << gbs << " with --mbs in {" << join_ints(mbs_ok) << "} (GA = " << gbs / g.dp
                << " / MBS)";
        } else {
            why << "; no MBS makes GBS " << gbs << " with DP " << g.dp
                << ": it must be a multiple of DP (change TP x PP x SP so that DP divides it)";
        }
        SS_FAIL(why.str());
    }
    if (ga > 0) {
        SS_CHECK(gbs == 0 || gbs == per_ga * ga, "--gbs " << gbs << " and --ga " << ga << " disagree: MBS " << mbs
                                                          << " x GA " << ga << " x DP " << g.dp << " = " << per_ga * ga
                                                          << "; give one of them");
        g.ga = ga;
    } else {
        SS_CHECK(gbs / per_ga <= INT_MAX, "--gbs " << gbs << " needs GA = " << gbs / per_ga << " micro-batches of MBS "
                                                   << mbs << " x DP " << g.dp << ", more than any run accumulates; "
                                                   << "raise --mbs or lower --gbs");
        g.ga = gbs > 0 ? int(gbs / per_ga) : 1;
    }
    // Every count below is exact in 64 bits, and the tokens per step exact in a double.
    SS_CHECK(double(per_ga) * g.ga * T <= 9007199254740992.0,
             "MBS " << mbs << " x GA " << g.ga << " x DP " << g.dp << " x T " << T
                    << " tokens a step is more than the planner counts exactly (2^53); lower --mbs, --ga or --gbs");
    g.gbs = per_ga * g.ga;
    return g;
}

}  // namespace ss
