// gbs.cpp — the GBS arithmetic with its checks (see gbs.h).
#include "viz/model/gbs.h"

#include <exception>
#include <sstream>

namespace ss::viz {

GbsResult compute_gbs(const GbsInput& in) {
    GbsResult r;
    auto fail = [&](const std::string& why) {
        r.ok = false;
        r.error = why;
        return r;
    };
    if (in.gpus < 1) return fail("GPUs must be at least 1");
    if (in.gpus_per_node < 1) return fail("GPUs per node must be at least 1");
    if (in.mbs < 1 || in.ga < 1) return fail("MBS and GA must be at least 1");
    if (in.tp < 1 || in.pp < 1 || in.sp < 1) return fail("TP, PP and SP must be at least 1");
    try {
        check_divides("TP", in.tp, "n_head", in.n_head);
        check_divides("PP", in.pp, "n_layer", in.n_layer);
        const long long model_ranks = 1LL * in.tp * in.pp * in.sp;
        if (in.gpus % model_ranks != 0) {
            std::ostringstream s;
            s << "TP x PP x SP = " << in.tp << " x " << in.pp << " x " << in.sp << " = " << model_ranks
              << " does not divide " << in.gpus << " GPUs; DP = world / (TP x PP x SP) must be a whole number";
            return fail(s.str());
        }
        r.dp = int(in.gpus / model_ranks);
        MeshShape s;
        s.tp = in.tp;
        s.pp = in.pp;
        s.sp = in.sp;
        s.dp_shard = in.dp_shard;
        s.dp_rep = in.dp_rep;
        r.shape = fill_dp(in.gpus, s);
        ProcessMesh check(in.gpus, r.shape);  // throws with what to set
        (void)check;
    } catch (const std::exception& e) {
        return fail(e.what());
    }
    r.ok = true;
    r.gbs = 1LL * in.mbs * in.ga * r.dp;
    r.nodes = (in.gpus + in.gpus_per_node - 1) / in.gpus_per_node;

    std::ostringstream l1, l2, l3, l4;
    l1 << "DP = world / (TP x PP x SP) = " << in.gpus << " / (" << in.tp << " x " << in.pp << " x " << in.sp
       << ") = " << r.dp;
    l2 << "DP = dp_shard x dp_rep = " << r.shape.dp_shard << " x " << r.shape.dp_rep << " = " << r.dp;
    l3 << "GBS = MBS x GA x DP = " << in.mbs << " x " << in.ga << " x " << r.dp << " = " << r.gbs
       << " sequences per step";
    l4 << "nodes = ceil(GPUs / GPUs per node) = ceil(" << in.gpus << " / " << in.gpus_per_node << ") = " << r.nodes;
    r.lines = {l1.str(), l2.str(), l3.str(), l4.str()};

    if (in.target_gbs > 0) {
        r.max_mbs_for_target = in.target_gbs / (1LL * in.ga * r.dp);
        if (r.gbs > in.target_gbs) {
            std::ostringstream w;
            w << "GBS " << r.gbs << " is above the target " << in.target_gbs << ": ";
            if (r.max_mbs_for_target >= 1)
                w << "MBS <= " << r.max_mbs_for_target << " at GA " << in.ga << " keeps it, or give ranks to TP/PP/SP";
            else
                w << "even MBS 1 gives " << 1LL * in.ga * r.dp << "; give ranks to TP, PP or SP to lower DP";
            r.warnings.push_back(w.str());
        }
    }
    if (in.tp > in.gpus_per_node) {
        std::ostringstream w;
        w << "TP " << in.tp << " spans more than one node (" << in.gpus_per_node
          << " GPUs per node): its per-layer all-reduces would cross the slower inter-node links";
        r.warnings.push_back(w.str());
    } else if (in.gpus_per_node % in.tp != 0) {
        std::ostringstream w;
        w << "TP " << in.tp << " does not divide " << in.gpus_per_node
          << " GPUs per node: some TP groups straddle two nodes";
        r.warnings.push_back(w.str());
    }
    return r;
}

}  // namespace ss::viz
