// trace_prediction.cpp — measured step time beside the prediction (trace_prediction.h).
#include "comm/trace/trace_prediction.h"

#include <algorithm>
#include <vector>

#include "comm/trace/trace.h"
#include "core/text.h"

namespace ss {

namespace {

double number(const nlohmann::json& j, const char* key) {
    if (!j.is_object()) return 0;
    auto it = j.find(key);
    return it != j.end() && it->is_number() ? it->get<double>() : 0;
}

std::string text(const nlohmann::json& j, const char* key) {
    if (!j.is_object()) return "";
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

const nlohmann::json& field(const nlohmann::json& j, const char* key) {
    static const nlohmann::json none;
    if (!j.is_object()) return none;
    auto it = j.find(key);
    return it != j.end() ? *it : none;
}

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

StepTimeCheck step_time_check(const nlohmann::json& other_data) {
    StepTimeCheck c;
    const nlohmann::json& steps = field(other_data, "steps");
    if (steps.is_array()) {
        std::vector<double> ms, tok;
        std::vector<int> number_of;  // each kept step's number: a resumed run's trace starts past 1
        for (size_t i = 0; i < steps.size(); ++i) {
            const nlohmann::json& st = steps[i];
            if (number(st, "ms") <= 0) continue;
            ms.push_back(number(st, "ms"));
            tok.push_back(number(st, "tokens_per_s"));
            const nlohmann::json& n = field(st, "step");
            number_of.push_back(fits_int(n, 0) ? int(n.get<int64_t>()) : int(i + 1));
        }
        c.steps = int(ms.size());
        // The trace's first step warms up, when there is another.
        const size_t skip = c.steps > 1 ? 1 : 0;
        if (c.steps > 0) {
            c.warmup_step = skip ? number_of.front() : -1;
            c.first_counted = number_of[skip];
            c.last_counted = number_of.back();
        }
        c.measured_ms = median(std::vector<double>(ms.begin() + long(skip), ms.end()));
        c.measured_tokens_per_s = median(std::vector<double>(tok.begin() + long(skip), tok.end()));
    }
    const nlohmann::json& p = field(other_data, "prediction");
    c.unavailable = text(p, "unavailable");
    c.caveat = text(p, "caveat");
    const nlohmann::json& time = field(p, "time");
    c.predicted_ms = number(time, "step_s") * 1e3;
    c.predicted_tokens_per_s = number(time, "tokens_per_s");
    // There, but not a prediction: said so, not taken for a trace without one.
    auto shown = [](const nlohmann::json& v) {
        const std::string s = v.dump();
        return s.size() > 40 ? s.substr(0, 37) + "..." : s;
    };
    if (!p.is_null() && c.unavailable.empty() && !(c.predicted_ms > 0)) {
        if (!p.is_object())
            c.malformed = "otherData.prediction is " + shown(p) + ", not an object";
        else if (!time.is_object())
            c.malformed = time.is_null() ? "otherData.prediction has no \"time\"" : "otherData.prediction.time is " + shown(time) + ", not an object";
        else
            c.malformed = "otherData.prediction.time.step_s is " + shown(field(time, "step_s")) +
                          ", not a number of seconds > 0";
    }
    const nlohmann::json& cluster = field(p, "cluster");
    c.hardware = text(cluster, "hw");
    c.source = text(cluster, "source");
    return c;
}

std::string measured_steps_text(const StepTimeCheck& c) {
    if (c.warmup_step < 0) return "step " + std::to_string(c.first_counted) + ", the only one";
    return "median of steps " + std::to_string(c.first_counted) + "-" + std::to_string(c.last_counted) + "; step " +
           std::to_string(c.warmup_step) + " warms up";
}

std::string prediction_hardware_text(const StepTimeCheck& c, bool emulated) {
    if (!emulated) return c.source;
    // train's plan_for_run (emulated_hardware) puts the emulated links in place of the preset's.
    return "its links are the run's emulated links, as the run timed them (time-scaled where --emulate "
           "scaled them); its compute: " + (c.source.empty() ? std::string("the hardware preset's") : c.source);
}

std::string format_step_time_check(const StepTimeCheck& c, bool emulated) {
    if (c.steps == 0) return "";
    std::string out = "\nstep time of the whole run, measured beside the planner's prediction for its layout\n";
    const std::string which = measured_steps_text(c);
    out += strprintf("  measured   %10.2f ms a step, %12.0f tokens/s  (%s%s)\n", c.measured_ms,
                     c.measured_tokens_per_s, which.c_str(), emulated ? "; on emulated links" : "");
    if (c.predicted_ms > 0) {
        out += strprintf("  predicted  %10.2f ms a step, %12.0f tokens/s  (a prediction: plan --hw %s)\n",
                         c.predicted_ms, c.predicted_tokens_per_s, c.hardware.empty() ? "?" : c.hardware.c_str());
        out += strprintf("  measured / predicted = %.2f (above 1: the run was slower than predicted)\n", c.ratio());
        if (!c.source.empty() || emulated)
            out += "  the prediction's hardware numbers: " + prediction_hardware_text(c, emulated) + "\n";
        if (!c.caveat.empty()) out += "  the prediction differs from the run: " + c.caveat + "\n";
    } else if (!c.unavailable.empty()) {
        out += "  predicted  none: " + c.unavailable + "\n";
    } else if (!c.malformed.empty()) {
        out += "  predicted  none: the trace's prediction is malformed: " + c.malformed + "\n";
    } else {
        out += "  predicted  none: the trace holds no prediction (a trace from before `train` wrote one)\n";
    }
    return out;
}

}  // namespace ss
