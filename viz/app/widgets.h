// widgets.h — the small pieces every panel uses: "(?)" help markers, the
// "drawn by" source note, colour swatches, and number formats.
//
// ShardScope's rule for the viewer (../shared/STYLE.md, rule 9): every number
// on screen explains itself (a help marker with its formula and source) and
// every panel names the source file that draws it. These helpers make that the
// easy path, as `HelpMarker()` does in ocornut/imgui's imgui_demo.cpp.
#pragma once

#include <cstdint>
#include <string>

#include "imgui.h"
#include "viz/model/palette.h"

namespace ss::viz {

/// ImGui colour from a palette colour.
inline ImU32 col(Rgb c, uint8_t alpha = 255) { return pack(c, alpha); }

/// A grey "(?)" on the same line; hovering shows @p text (formula and source).
void help_marker(const char* text);
/// A dim line "drawn by viz/app/panel_x.cpp from viz/model/y.cpp", wrapped at the panel's edge.
void source_note(const char* text);
/// A filled square of colour @p c in the text flow (outlined only when @p present is false).
void swatch(Rgb c, bool present = true);
/// A section title in the panel's accent colour.
void heading(const char* text);
/// A measured figure against its prediction in a table cell: "equal" (green) when
/// they agree, else the gap "+x.x%" of the prediction (amber); "not predicted" (dim)
/// when the prediction is 0 and the measurement is not. The Comm summary's bytes and
/// the Memory table's peaks both use it, so a gap reads the same everywhere.
void gap_cell(uint64_t measured, uint64_t predicted);

/// "812 B", "1.5 KiB", "12.3 MiB" (binary units, as `shardscope trace summary`).
std::string fmt_bytes(double bytes);
/// "350.2 µs", "12.35 ms", "1.204 s" from microseconds.
std::string fmt_time_us(double us);
/// "1,234,567".
std::string fmt_int(uint64_t n);
/// "12.3 GB/s" from bytes per microsecond x 1e-3 (i.e. GB/s already).
std::string fmt_gbs(double gb_per_s);

}  // namespace ss::viz
