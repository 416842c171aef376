// widgets.cpp — help markers, source notes, swatches, number formats (see widgets.h).
#include "viz/app/widgets.h"

#include <cmath>
#include <cstdio>

#include "comm/trace/trace_summary.h"

namespace ss::viz {

void help_marker(const char* text) {
    ImGui::SameLine();
    ImGui::TextDisabled("(?)");
    if (ImGui::IsItemHovered()) {
        ImGui::BeginTooltip();
        ImGui::PushTextWrapPos(ImGui::GetFontSize() * 38.0f);
        ImGui::TextUnformatted(text);
        ImGui::PopTextWrapPos();
        ImGui::EndTooltip();
    }
}

void source_note(const char* text) {
    ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(140, 150, 165, 255));
    ImGui::PushTextWrapPos(0.0f);  // wrapped at the panel's edge: an Overview tile is narrower than a tab
    ImGui::TextUnformatted(text);
    ImGui::PopTextWrapPos();
    ImGui::PopStyleColor();
}

void swatch(Rgb c, bool present) {
    const float h = ImGui::GetTextLineHeight();
    const ImVec2 p = ImGui::GetCursorScreenPos();
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const ImVec2 a(p.x, p.y + 2), b(p.x + h - 4, p.y + h - 2);
    if (present)
        dl->AddRectFilled(a, b, col(c));
    else
        dl->AddRect(a, b, col(c, 160));
    ImGui::Dummy(ImVec2(h - 2, h));
    ImGui::SameLine(0, 4);
}

void heading(const char* text) {
    ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(235, 200, 120, 255));
    ImGui::TextUnformatted(text);
    ImGui::PopStyleColor();
}

void gap_cell(uint64_t measured, uint64_t predicted) {
    if (measured == predicted)
        ImGui::TextColored(ImVec4(0.5f, 0.9f, 0.5f, 1), "equal");
    else if (predicted == 0)
        ImGui::TextDisabled("not predicted");
    else
        ImGui::TextColored(ImVec4(1, 0.75f, 0.4f, 1), "%+.1f%%",
                           100.0 * (double(measured) - double(predicted)) / double(predicted));
}

std::string fmt_bytes(double bytes) { return bytes_str(bytes); }

std::string fmt_time_us(double us) {
    char buf[32];
    const double a = std::fabs(us);
    if (a < 0.05) return "0";
    if (a >= 1e6)
        std::snprintf(buf, sizeof buf, "%.3f s", us * 1e-6);
    else if (a >= 1e3)
        std::snprintf(buf, sizeof buf, "%.2f ms", us * 1e-3);
    else
        std::snprintf(buf, sizeof buf, "%.1f \xC2\xB5s", us);  // µs
    return buf;
}

std::string fmt_int(uint64_t n) {
    std::string s = std::to_string(n);
    for (int i = int(s.size()) - 3; i > 0; i -= 3) s.insert(size_t(i), ",");
    return s;
}

std::string fmt_gbs(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, v >= 100 ? "%.0f GB/s" : (v >= 1 ? "%.2f GB/s" : "%.3f GB/s"), v);
    return buf;
}

}  // namespace ss::viz
