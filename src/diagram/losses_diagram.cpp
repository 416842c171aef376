// losses_diagram.cpp — `shardscope diagram losses`: loss per step of `train --json` reports.
//
//   loss ^
//   5.5  |\__                       one line per --run LABEL=FILE.json,
//   5.0  |   \___  ___ zero3        the steps as train/report.cpp writes them
//   4.5  |       \____ ddp          ("steps": [{"step", "loss", ...}])
//        +--------------------> step
//
// Ticks are "nice" numbers (1, 2 or 5 times a power of ten) and are printed
// from integers, so the bytes are the same on every machine.
#include <algorithm>
#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "diagram/diagram.h"

namespace ss::diagram {

namespace {

constexpr int kLeft = 70, kTop = 50, kPlotW = 640, kPlotH = 340, kLegendW = 170;

// A tick step near span / 5 that is 1, 2 or 5 x 10^e; returned as (mantissa, e).
std::pair<int, int> nice_step(double span) {
    const double raw = std::max(span, 1e-9) / 5;
    int e = int(std::floor(std::log10(raw)));
    const double f = raw / std::pow(10.0, e);
    int m = f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10;
    if (m == 10) m = 1, ++e;
    return {m, e};
}

// k x mantissa x 10^e, printed without floating point ("0.25", "120").
std::string tick_label(long k, int mant, int e) {
    long v = k * mant;
    if (e >= 0) {
        for (int i = 0; i < e; ++i) v *= 10;
        return std::to_string(v);
    }
    const bool neg = v < 0;
    std::string digits = std::to_string(neg ? -v : v);
    while (int(digits.size()) <= -e) digits = "0" + digits;
    digits.insert(digits.size() - size_t(-e), ".");
    return (neg ? "-" : "") + digits;
}

}  // namespace

LossRun read_loss_report(const std::string& label, const std::string& path) {
    std::ifstream in(path);
    SS_CHECK(in, "--run " << label << "=" << path << ": cannot open " << path
                          << "; make it with `shardscope train --json " << path << "`");
    nlohmann::json j;
    try {
        in >> j;
    } catch (const std::exception& e) {
        SS_FAIL("--run " << label << "=" << path << ": not JSON (" << e.what()
                         << "); give the file `shardscope train --json` wrote");
    }
    SS_CHECK(j.is_object() && j.contains("steps") && j["steps"].is_array() && !j["steps"].empty(),
             "--run " << label << "=" << path << ": no \"steps\" list; give the file `shardscope train --json` wrote");
    LossRun run{label, {}};
    for (const auto& st : j["steps"]) {
        SS_CHECK(st.is_object() && st.contains("step") && st["step"].is_number() && st.contains("loss") &&
                     st["loss"].is_number(),
                 "--run " << label << "=" << path << ": a step without a numeric \"step\" and \"loss\"");
        run.steps.push_back({st["step"].get<int>(), st["loss"].get<double>()});
    }
    return run;
}

Svg draw_losses(const std::vector<LossRun>& runs) {
    SS_CHECK(!runs.empty(), "diagram losses: give at least one --run LABEL=FILE.json");
    double lo = 1e300, hi = -1e300;
    int s0 = 1 << 30, s1 = -(1 << 30);
    for (const LossRun& r : runs)
        for (const auto& [step, loss] : r.steps) {
            SS_CHECK(std::isfinite(loss), "--run " << r.label << ": step " << step << " has loss " << loss
                                                   << "; a chart needs finite losses");
            lo = std::min(lo, loss), hi = std::max(hi, loss);
            s0 = std::min(s0, step), s1 = std::max(s1, step);
        }
    if (s1 == s0) ++s1;
    // y axis: from a tick at or below the lowest loss to one at or above the highest.
    const auto [ym, ye] = nice_step(hi - lo);
    const double ystep = ym * std::pow(10.0, ye);
    const long yk0 = long(std::floor(lo / ystep)), yk1 = std::max(yk0 + 1, long(std::ceil(hi / ystep)));
    const double ylo = yk0 * ystep, yhi = yk1 * ystep;
    const auto [xm, xe] = nice_step(double(s1 - s0));
    const long xstep = std::max(1L, long(std::llround(xm * std::pow(10.0, xe))));
    auto X = [&](double step) { return kLeft + svg_round(kPlotW * (step - s0) / double(s1 - s0)); };
    auto Y = [&](double loss) { return kTop + kPlotH - svg_round(kPlotH * (loss - ylo) / (yhi - ylo)); };

    Svg s(kLeft + kPlotW + kLegendW + 20, kTop + kPlotH + 60);
    s.text(10, 26, "Training loss per step", Anchor::start, 15, "#222222", true);
    for (long k = yk0; k <= yk1; ++k) {
        const int y = Y(k * ystep);
        s.line(kLeft, y, kLeft + kPlotW, y, "#e6e6e6");
        s.text(kLeft - 6, y + 4, tick_label(k, ym, ye), Anchor::end, 11);
    }
    for (long t = (s0 + xstep - 1) / xstep * xstep; t <= s1; t += xstep) {
        s.line(X(double(t)), kTop + kPlotH, X(double(t)), kTop + kPlotH + 5, "#333333");
        s.text(X(double(t)), kTop + kPlotH + 18, std::to_string(t), Anchor::middle, 11);
    }
    s.line(kLeft, kTop + kPlotH, kLeft + kPlotW, kTop + kPlotH);
    s.line(kLeft, kTop, kLeft, kTop + kPlotH);
    s.text(kLeft + kPlotW / 2, kTop + kPlotH + 38, "step", Anchor::middle, 12);
    s.text(kLeft - 50, kTop - 10, "loss (nats)", Anchor::start, 12);
    for (size_t i = 0; i < runs.size(); ++i) {
        std::vector<std::pair<int, int>> pts;
        for (const auto& [step, loss] : runs[i].steps) pts.push_back({X(step), Y(loss)});
        s.polyline(pts, svg_colour(int(i)), 2);
        const int ly = kTop + 10 + int(i) * 20;
        s.line(kLeft + kPlotW + 20, ly, kLeft + kPlotW + 44, ly, svg_colour(int(i)), 3);
        s.text(kLeft + kPlotW + 50, ly + 4, runs[i].label, Anchor::start, 12);
    }
    return s;
}

}  // namespace ss::diagram
