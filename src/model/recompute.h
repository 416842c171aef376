// recompute.h — activation recomputation (Chen et al. 2016; Korthikanti et
// al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
// arXiv:2205.05198, section 5): trade compute in backward for memory.
#pragma once

#include <string>

namespace ss {

/// What the backward pass recomputes instead of keeping (Korthikanti et al. 2022).
enum class Recompute {
    none,       ///< keep every activation
    selective,  ///< recompute the attention core (softmax probabilities, the as^2 term) in backward
    full,       ///< keep only each layer's input, recompute the whole layer in backward (Chen et al. 2016)
};

/// "none", "selective", "full": the names the command line, the trace and the planner's JSON use.
const char* recompute_name(Recompute r);
/// Inverse of recompute_name (throws ss::Error listing the accepted names).
Recompute parse_recompute(const std::string& s);

}  // namespace ss
