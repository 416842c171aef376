#include "plan/input.h"

#include "core/check.h"

namespace ss {

const char* act_model_name(ActModel a) { return a == ActModel::paper ? "paper" : "engine"; }

ActModel parse_act_model(const std::string& s) {
    if (s == "paper") return ActModel::paper;
    if (s == "engine") return ActModel::engine;
    SS_FAIL("--acts " << s << " is not a choice; choose paper (Korthikanti et al., bf16 GPUs) or engine (this CPU engine, fp32)");
}

}  // namespace ss
