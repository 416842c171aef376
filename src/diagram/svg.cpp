// svg.cpp — the SVG writer (svg.h): shapes appended as text, integers only.
#include "diagram/svg.h"

#include "diagram/diagram.h"  // model_flags_of

#include <algorithm>
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

Svg::Svg(int width, int height) : width_(width), height_(height) {}

int Svg::width() const { return std::max(width_, text_right_ + 10); }

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
    if (anchor == Anchor::start)  // titles, notes and footers: the canvas grows to hold them
        text_right_ = std::max(text_right_, x + int(double(s.size()) * size * (bold ? 0.60 : 0.55)));
}

std::string Svg::str() const {
    const int w = width();
    std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(w) + "\" height=\"" +
                      num(height_) + "\" viewBox=\"0 0 " + num(w) + " " + num(height_) +
                      "\" font-family=\"DejaVu Sans, Arial, sans-serif\">\n";
    if (arrows_)
        out += "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" "
               "markerHeight=\"7\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#333333\"/></marker></defs>\n";
    // The white background, first, over the whole (perhaps widened) canvas.
    return out + "<rect x=\"0\" y=\"0\" width=\"" + num(w) + "\" height=\"" + num(height_) + "\" fill=\"#ffffff\"/>\n" +
           body_ + "</svg>\n";
}

std::string model_flags_of(const GPT2Config& cfg) {
    const size_t plus = cfg.name.find("+custom");
    if (plus == std::string::npos) return "--model " + cfg.name;
    const std::string base = cfg.name.substr(0, plus);
    const GPT2Config p = model_preset(base);
    std::string s = "--model " + base;
    auto flag = [&](const char* f, int v, int preset) {
        if (v != preset) s += std::string(" ") + f + " " + std::to_string(v);
    };
    flag("--layers", cfg.L, p.L);
    flag("--dim", cfg.C, p.C);
    flag("--heads", cfg.H, p.H);
    flag("--vocab", cfg.V, p.V);
    flag("--max-seq", cfg.maxT, p.maxT);
    return s;
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
