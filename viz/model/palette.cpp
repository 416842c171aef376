// palette.cpp — the colour tables (see palette.h for why these colours).
#include "viz/model/palette.h"

namespace ss::viz {

Rgb payload_color(Payload p) {
    switch (p) {
        case Payload::param: return {0, 114, 178};     // Okabe-Ito blue
        case Payload::grad: return {230, 159, 0};      // orange
        case Payload::act: return {0, 158, 115};       // bluish green
        case Payload::act_grad: return {204, 121, 167};  // reddish purple
        case Payload::optim: return {213, 94, 0};      // vermillion
        case Payload::scalar: return {153, 153, 153};  // grey
    }
    return {153, 153, 153};
}

Rgb memory_color(Mem m) {
    switch (m) {
        case Mem::params: return {86, 160, 215};     // light blue (param)
        case Mem::grads: return {240, 190, 80};      // light orange (grad)
        case Mem::optim: return {225, 130, 70};      // light vermillion (optim)
        case Mem::acts: return {80, 190, 150};       // light green (act)
        case Mem::comm: return {150, 210, 240};      // sky blue: gathered params, comm buffers
        case Mem::workspace: return {190, 190, 170};  // khaki grey: scratch
        case Mem::hpz: return {185, 150, 220};        // lilac: hpZ's secondary partition of the parameters
        case Mem::outer: return {200, 120, 170};      // reddish purple: DiLoCo's outer state, beside optim's vermillion
        case Mem::count: break;
    }
    return {128, 128, 128};
}

Rgb span_color(const std::string& cat) {
    if (cat == "fwd") return {96, 110, 135};
    if (cat == "bwd") return {72, 82, 104};
    if (cat == "step") return {120, 100, 140};
    return {110, 110, 110};
}

Rgb axis_index_color(int i, int n) {
    // Eight well-separated tints; for n > 8 they repeat with a darker shade.
    static const Rgb kTints[8] = {{102, 194, 165}, {252, 141, 98}, {141, 160, 203}, {231, 138, 195},
                                  {166, 216, 84},  {255, 217, 47}, {229, 196, 148}, {179, 179, 179}};
    (void)n;
    Rgb c = kTints[i % 8];
    if ((i / 8) % 2 == 1) c = {uint8_t(c.r * 3 / 4), uint8_t(c.g * 3 / 4), uint8_t(c.b * 3 / 4)};
    return c;
}

Rgb rank_color(int rank) { return axis_index_color(rank, 8); }

Rgb exposed_color() { return {150, 20, 40}; }

}  // namespace ss::viz
