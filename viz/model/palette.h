// palette.h — the colours of the visualizer, in one place, so that a colour
// means the same thing in every panel and the tests can look for it in a PNG.
//
// Collectives are coloured by what their bytes ARE (the trace's `payload`),
// not by the op: the point of the timeline is that ZeRO-3 moves parameters
// while tensor parallelism moves activations. The hues are the Okabe-Ito
// palette (Okabe & Ito 2008, "Color Universal Design"), chosen to stay apart
// for readers with the common colour-vision deficiencies:
//
//     param     blue        grad      orange       act     bluish green
//     act_grad  purple      optim     vermillion   scalar  grey
//
// Memory categories reuse the hue of the payload they hold (params ~ param,
// grads ~ grad, acts ~ act) in a lighter tint, so a learner who saw blue
// all_gathers in the timeline finds the blue "comm"/"params" bars beside them.
// Compute spans are neutral slate greys, so collectives stand out over them.
#pragma once

#include <cstdint>
#include <string>

#include "comm/label.h"
#include "core/ledger.h"

namespace ss::viz {

/// An opaque colour, 8 bits per channel.
struct Rgb {
    uint8_t r = 0, g = 0, b = 0;
    bool operator==(const Rgb& o) const { return r == o.r && g == o.g && b == o.b; }
    bool operator!=(const Rgb& o) const { return !(*this == o); }
};

/// The colour of a collective carrying @p p (timeline, comm summary, legends).
Rgb payload_color(Payload p);
/// The colour of Ledger category @p m (memory bars and areas).
Rgb memory_color(Mem m);
/// The colour of a compute span of category @p cat ("fwd", "bwd", "step", other).
Rgb span_color(const std::string& cat);
/// A colour for index @p i of @p n along a mesh axis (grid panel's "colour by").
Rgb axis_index_color(int i, int n);
/// A colour per rank for memory lines (cycles through 8 distinct hues).
Rgb rank_color(int rank);
/// The strip that marks the exposed part of a collective in the timeline (the rank was blocked):
/// a dark red, darker than every payload hue, so it reads by lightness too.
Rgb exposed_color();

/// Packs @p c with alpha @p a as Dear ImGui's IM_COL32 does (A<<24 | B<<16 | G<<8 | R).
inline uint32_t pack(Rgb c, uint8_t a = 255) {
    return (uint32_t(a) << 24) | (uint32_t(c.b) << 16) | (uint32_t(c.g) << 8) | uint32_t(c.r);
}

/// Number of payload kinds (Payload::param .. Payload::scalar).
constexpr int kPayloads = 6;

}  // namespace ss::viz
