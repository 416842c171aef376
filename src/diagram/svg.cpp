// svg.cpp — the SVG writer (svg.h): shapes appended as text, integers only.
#include "diagram/svg.h"

#include <cmath>
#include <cstdio>

namespace ss::diagram {

namespace {

std::string escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c == '&') out += "&amp;";
        else if (c == '<') out += "&lt;";
        else if (c == '>') out += "&gt;";
        else if (c == '"') out += "&quot;";
        else out += c;
    }
    return out;
}

std::string num(int v) { return std::to_string(v); }

}  // namespace

Svg::Svg(int width, int height) : width_(width), height_(height) {
    rect(0, 0, width, height, "#ffffff", "");
}

void Svg::rect(int x, int y, int w, int h, const std::string& fill, const std::string& stroke) {
    body_ += "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(w) + "\" height=\"" + num(h) +
             "\" fill=\"" + fill + "\"";
    if (!stroke.empty()) body_ += " stroke=\"" + stroke + "\"";
    body_ += "/>\n";
}

void Svg::line(int x1, int y1, int x2, int y2, const std::string& stroke, int width, bool dashed, bool arrow) {
    body_ += "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) + "\" y2=\"" + num(y2) +
             "\" stroke=\"" + stroke + "\" stroke-width=\"" + num(width) + "\"";
    if (dashed) body_ += " stroke-dasharray=\"4 3\"";
    if (arrow) {
        body_ += " marker-end=\"url(#arrow)\"";
        arrows_ = true;
    }
    body_ += "/>\n";
}

void Svg::polyline(const std::vector<std::pair<int, int>>& points, const std::string& stroke, int width) {
    body_ += "<polyline fill=\"none\" stroke=\"" + stroke + "\" stroke-width=\"" + num(width) + "\" points=\"";
    for (size_t i = 0; i < points.size(); ++i)
        body_ += (i ? " " : "") + num(points[i].first) + "," + num(points[i].second);
    body_ += "\"/>\n";
}

void Svg::text(int x, int y, const std::string& s, Anchor anchor, int size, const std::string& fill, bool bold) {
    static const char* anchors[] = {"start", "middle", "end"};
    body_ += "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" font-size=\"" + num(size) + "\" text-anchor=\"" +
             anchors[int(anchor)] + "\" fill=\"" + fill + "\"";
    if (bold) body_ += " font-weight=\"bold\"";
    body_ += ">" + escape(s) + "</text>\n";
}

std::string Svg::str() const {
    std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(width_) + "\" height=\"" +
                      num(height_) + "\" viewBox=\"0 0 " + num(width_) + " " + num(height_) +
                      "\" font-family=\"DejaVu Sans, Arial, sans-serif\">\n";
    if (arrows_)
        out += "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" "
               "markerHeight=\"7\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#333333\"/></marker></defs>\n";
    return out + body_ + "</svg>\n";
}

int svg_round(double x) { return int(std::lround(x)); }

std::string svg_bytes(double bytes) {
    static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024 && u < 4) bytes /= 1024, ++u;
    // Tenths as an integer, so the digits never depend on printf's rounding of a double.
    const long tenths = std::lround(bytes * 10);
    if (u == 0) return std::to_string(std::lround(bytes)) + " B";
    return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + " " + units[u];
}

const char* svg_colour(int i) {
    static const char* c[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                              "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
    return c[((i % 10) + 10) % 10];
}

}  // namespace ss::diagram
