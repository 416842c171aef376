#include "plan/input.h"

#include "core/check.h"

namespace ss {

const char* sp_mode_name(SpMode m) { return m == SpMode::ulysses ? "ulysses" : "ring"; }

const char* schedule_name(Schedule s) {
    switch (s) {
        case Schedule::gpipe: return "gpipe";
        case Schedule::one_f_one_b: return "1f1b";
        case Schedule::interleaved: return "interleaved";
    }
    return "?";
}

const char* recompute_name(Recompute r) {
    switch (r) {
        case Recompute::none: return "none";
        case Recompute::selective: return "selective";
        case Recompute::full: return "full";
    }
    return "?";
}

const char* act_model_name(ActModel a) { return a == ActModel::paper ? "paper" : "engine"; }

SpMode parse_sp_mode(const std::string& s) {
    if (s == "ulysses") return SpMode::ulysses;
    if (s == "ring") return SpMode::ring;
    SS_FAIL("--sp-mode " << s << " is not a mode; choose ulysses (all-to-all around attention) or ring (ring attention)");
}

Schedule parse_schedule(const std::string& s) {
    if (s == "gpipe") return Schedule::gpipe;
    if (s == "1f1b") return Schedule::one_f_one_b;
    if (s == "interleaved") return Schedule::interleaved;
    SS_FAIL("--schedule " << s << " is not a schedule; choose gpipe, 1f1b or interleaved");
}

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
