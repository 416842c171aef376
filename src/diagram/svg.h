// svg.h — a small deterministic SVG writer for the pictures `shardscope diagram` draws.
//
// Every coordinate is an integer and every colour a fixed string, so the same
// picture is the same bytes on every machine and compiler: docs/img/*.svg are
// compared byte for byte with a fresh drawing (tests/test_diagram.cpp). No
// floating point reaches the output; callers round (svg_round) before drawing.
//
//   Svg s(640, 200);                      <svg width="640" height="200" ...>
//   s.rect(10, 10, 100, 20, "#4e79a7");     <rect x="10" y="10" width="100" height="20" fill="#4e79a7"/>
//   s.text(60, 24, "rank 0", Anchor::middle);
//   std::string bytes = s.str();          ... </svg>
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ss::diagram {

/// Where a text's x coordinate sits on it.
enum class Anchor { start, middle, end };

/// One SVG document, drawn in order (later shapes on top).
class Svg {
public:
    /// A @p width x @p height picture with a white background.
    Svg(int width, int height);
    /// A rectangle filled with @p fill, outlined with @p stroke ("" = none).
    void rect(int x, int y, int w, int h, const std::string& fill, const std::string& stroke = "#333333");
    /// A straight line; @p dashed draws it dashed; @p arrow puts an arrowhead at (x2, y2).
    void line(int x1, int y1, int x2, int y2, const std::string& stroke = "#333333", int width = 1,
              bool dashed = false, bool arrow = false);
    /// A polyline through @p points (a chart's series).
    void polyline(const std::vector<std::pair<int, int>>& points, const std::string& stroke, int width = 2);
    /// Text at (x, y) (y is the baseline), @p size px, @p bold; '&', '<', '>' are escaped.
    void text(int x, int y, const std::string& s, Anchor anchor = Anchor::start, int size = 12,
              const std::string& fill = "#222222", bool bold = false);
    /// A caption line: text(x, y, s) at 11 px in grey, left-aligned (the pictures' notes and footers).
    void note(int x, int y, const std::string& s) { text(x, y, s, Anchor::start, 11, "#555555"); }
    /// The document: the header, every shape in order, the closing tag, ending in a newline.
    std::string str() const;
    /// The picture's width in px: as made, or wider where a left-aligned text would run past
    /// it (its width estimated at 0.55 em a character, 0.60 bold: DejaVu Sans' prose measures 0.51 and 0.55).
    int width() const;
    /// The picture's height in px.
    int height() const { return height_; }

private:
    int width_, height_;
    int text_right_ = 0;   // the right end of the widest left-aligned text, estimated
    bool arrows_ = false;  // an arrowhead marker is defined once, in str()
    std::string body_;
};

/// @p x rounded to the nearest integer, halves away from zero (the same on every machine).
int svg_round(double x);

/// "12.3 KiB", "1.5 MiB", "512 B": bytes with one fixed decimal, in binary units.
std::string svg_bytes(double bytes);

/// The qualitative palette every picture draws from (Tableau 10): colour @p i mod 10.
const char* svg_colour(int i);

}  // namespace ss::diagram
