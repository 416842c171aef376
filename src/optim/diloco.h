// diloco.h — DiLoCo's outer optimizer: SGD with Nesterov momentum on the
// replicas' averaged parameter change (Douillard et al. 2023, "DiLoCo:
// Distributed Low-Communication Training of Language Models",
// arXiv:2311.08105, Algorithm 1).
//
// Local SGD (parallel/replicas.h) lets R replicas take H inner AdamW steps on
// their own batches and then replaces their parameters by the average. DiLoCo
// keeps the parameters of the last sync, theta (the "anchor"), and treats
// what the replicas moved away from it as a gradient of the outer problem:
//
//   Delta = theta - (1/R) sum_r theta_r        the outer gradient (Algorithm 1: the mean of the deltas)
//   m     = mu m + Delta                       PyTorch SGD's momentum buffer (dampening 0)
//   theta = theta - lr_outer (Delta + mu m)    its Nesterov step (torch.optim.SGD, nesterov=True)
//
// and every replica continues from the new theta. The paper's outer settings
// are lr_outer = 0.7 and mu = 0.9. With lr_outer = 1 and mu = 0 the step is
// theta - (theta - mean) = the mean: local SGD's average, up to the rounding
// of one subtraction and one addition (docs/formulas.md says when it is exact).
//
// This file is the arithmetic only; replicas.h decides what is averaged and
// where the state lives (Mem::outer, sharded as the optimizer's state is).
#pragma once

#include <cstddef>
#include <string>

namespace ss {

/// What the replicas do every --replica-sync-every H steps.
enum class ReplicaOuter {
    avg,       ///< local SGD: every replica takes the average of the replicas' parameters
    nesterov,  ///< DiLoCo: an outer Nesterov step on the averaged change since the last sync
};

/// "avg", "nesterov".
const char* replica_outer_name(ReplicaOuter o);
/// Inverse of replica_outer_name (throws ss::Error listing the choices).
ReplicaOuter parse_replica_outer(const std::string& s);

/// The outer optimizer's hyper-parameters (the paper's defaults, arXiv:2311.08105 section 3).
struct OuterParams {
    float lr = 0.7f;        ///< outer learning rate lr_outer (dimensionless: a fraction of Delta)
    float momentum = 0.9f;  ///< Nesterov momentum mu, in [0, 1)
};

/// One outer step over @p n elements: @p anchor (theta, the parameters of the last
/// sync) and @p momentum (m) are updated from @p mean (the replicas' averaged current
/// parameters), and the new theta is written to @p out too (@p out may be @p mean).
/// All fp32; the formula is at the top of this file.
void outer_nesterov_update(float* anchor, float* momentum, const float* mean, float* out, size_t n,
                           const OuterParams& hp);

}  // namespace ss
