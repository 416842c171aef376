// recompute.cpp — the names of the recompute choices (recompute.h).
#include "model/recompute.h"

#include "core/check.h"
#include "core/names.h"

namespace ss {

namespace {
constexpr Named<Recompute> kNames[] = {
    {Recompute::none, "none"}, {Recompute::selective, "selective"}, {Recompute::full, "full"}};
}  // namespace

const char* recompute_name(Recompute r) { return name_of(kNames, r); }

Recompute parse_recompute(const std::string& s) {
    if (const Recompute* r = find_name(kNames, s)) return *r;
    SS_FAIL("--recompute " << s << " is not a choice; choose none, selective or full");
}

}  // namespace ss
