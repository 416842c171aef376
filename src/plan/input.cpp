#include "plan/input.h"

#include "core/check.h"

namespace ss {

const char* recompute_name(Recompute r) {
    switch (r) {
        case Recompute::none: return "none";
        case Recompute::selective: return "selective";
        case Recompute::full: return "full";
    }
    return "?";
}

const char* act_model_name(ActModel a) { return a == ActModel::paper ? "paper" : "engine"; }

Recompute parse_recompute(const std::string& s) {
    if (s == "none") return Recompute::none;
    if (s == "selective") return Recompute::selective;
    if (s == "full") return Recompute::full;
    SS_FAIL("--recompute " << s << " is not a choice; choose none, selective or full");
}

ActModel parse_act_model(const std::string& s) {
    if (s == "paper") return ActModel::paper;
    if (s == "engine") return ActModel::engine;
    SS_FAIL("--acts " << s << " is not a choice; choose paper (Korthikanti et al., bf16 GPUs) or engine (this CPU engine, fp32)");
}

}  // namespace ss
