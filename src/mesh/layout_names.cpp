// layout_names.cpp — the layout's names (layout_names.h).
#include "mesh/layout_names.h"

#include "core/check.h"
#include "core/names.h"

namespace ss {

namespace {
constexpr Named<SpMode> kSpModes[] = {{SpMode::ulysses, "ulysses"}, {SpMode::ring, "ring"}};
constexpr Named<RingSplit> kRingSplits[] = {{RingSplit::zigzag, "zigzag"}, {RingSplit::contiguous, "contiguous"}};
constexpr Named<Schedule> kSchedules[] = {
    {Schedule::gpipe, "gpipe"}, {Schedule::one_f_one_b, "1f1b"}, {Schedule::interleaved, "interleaved"}};
}  // namespace

const char* sp_mode_name(SpMode m) { return name_of(kSpModes, m); }
const char* ring_split_name(RingSplit s) { return name_of(kRingSplits, s); }
const char* schedule_name(Schedule s) { return name_of(kSchedules, s); }

SpMode parse_sp_mode(const std::string& s) {
    if (const SpMode* m = find_name(kSpModes, s)) return *m;
    SS_FAIL("--sp-mode " << s << " is not a mode; use ulysses (all-to-all around attention) or ring "
                         << "(keys and values passed round the sp ranks)");
}

RingSplit parse_ring_split(const std::string& s) {
    if (const RingSplit* k = find_name(kRingSplits, s)) return *k;
    SS_FAIL("--ring-split " << s << " is not a split; use zigzag (rank i holds chunks i and 2SP-1-i: even causal "
                            << "work) or contiguous (rank i holds the i-th T/SP tokens)");
}

Schedule parse_schedule(const std::string& s) {
    if (const Schedule* k = find_name(kSchedules, s)) return *k;
    SS_FAIL("--schedule " << s << " is not a schedule; choose gpipe, 1f1b or interleaved");
}

}  // namespace ss
