#include "mesh/layout_names.h"

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

SpMode parse_sp_mode(const std::string& s) {
    if (s == "ulysses") return SpMode::ulysses;
    if (s == "ring") return SpMode::ring;
    SS_FAIL("--sp-mode " << s << " is not a mode; use ulysses (all-to-all around attention) or ring "
                         << "(keys and values passed round the sp ranks)");
}

Schedule parse_schedule(const std::string& s) {
    if (s == "gpipe") return Schedule::gpipe;
    if (s == "1f1b") return Schedule::one_f_one_b;
    if (s == "interleaved") return Schedule::interleaved;
    SS_FAIL("--schedule " << s << " is not a schedule; choose gpipe, 1f1b or interleaved");
}

}  // namespace ss
