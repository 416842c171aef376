// diloco.cpp — the outer Nesterov step of DiLoCo, as written in diloco.h.
#include "optim/diloco.h"

#include "core/check.h"
#include "core/names.h"

namespace ss {

namespace {
constexpr Named<ReplicaOuter> kOuter[] = {{ReplicaOuter::avg, "avg"}, {ReplicaOuter::nesterov, "nesterov"}};
}  // namespace

const char* replica_outer_name(ReplicaOuter o) { return name_of(kOuter, o); }

ReplicaOuter parse_replica_outer(const std::string& s) {
    if (const ReplicaOuter* o = find_name(kOuter, s)) return *o;
    SS_FAIL("--replica-outer " << s << " is not a choice; use avg (local SGD: the replicas' parameters are "
                               << "averaged) or nesterov (DiLoCo: an outer Nesterov step on the averaged change)");
}

void outer_nesterov_update(float* anchor, float* momentum, const float* mean, float* out, size_t n,
                           const OuterParams& hp) {
    const float lr = hp.lr, mu = hp.momentum;
    for (size_t i = 0; i < n; ++i) {
        const float delta = anchor[i] - mean[i];  // the outer gradient: how far the replicas moved, on average
        momentum[i] = mu * momentum[i] + delta;   // m = mu m + Delta
        anchor[i] -= lr * (delta + mu * momentum[i]);  // theta -= lr (Delta + mu m): Nesterov's look-ahead
        out[i] = anchor[i];
    }
}

}  // namespace ss
