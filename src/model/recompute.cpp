// recompute.cpp — the names of the recompute choices (recompute.h).
#include "model/recompute.h"

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

Recompute parse_recompute(const std::string& s) {
    if (s == "none") return Recompute::none;
    if (s == "selective") return Recompute::selective;
    if (s == "full") return Recompute::full;
    SS_FAIL("--recompute " << s << " is not a choice; choose none, selective or full");
}

}  // namespace ss
