// trace_prediction.h — a run's measured step time beside the planner's prediction for it.
//
// `train --trace` writes both into the trace's otherData (src/train/report.cpp):
// "steps", each step's measured ms and tokens/s, and "prediction", the
// planner's plan for the layout that ran (its "time": step_s, tokens_per_s),
// or {"unavailable": why}. `trace summary` prints them side by side, so a
// prediction is never read without how far it was from the run:
//
//     measured    = the median of the trace's steps after its first, which warms up
//                   (steps 5-6 of a run resumed at step 4; a 1-step trace: that step)
//     ratio       = measured ms / predicted ms   (> 1: the run was slower than predicted)
//
// The prediction stays a prediction: its line names the hardware model and
// where its numbers come from (otherData.prediction.cluster).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace ss {

/// What a trace says of its step time: measured, and predicted by the planner.
struct StepTimeCheck {
    int steps = 0;                      ///< measured steps in otherData.steps (0: none, nothing to print)
    /// The median is over steps first_counted..last_counted, the run's own numbers
    /// (otherData.steps[].step; where absent, the position from 1): 5..6 for a run resumed at step 4.
    int first_counted = 1;
    int last_counted = 0;               ///< see first_counted
    int warmup_step = -1;               ///< the trace's first step, left out as warm-up; -1 when it is the only one
    double measured_ms = 0;             ///< median ms a step
    double measured_tokens_per_s = 0;   ///< median tokens/s of the same steps
    double predicted_ms = 0;            ///< otherData.prediction.time.step_s x 1e3 (0: no prediction)
    double predicted_tokens_per_s = 0;  ///< otherData.prediction.time.tokens_per_s
    std::string hardware;               ///< prediction.cluster.hw: "cpu-local", "h100", ...
    std::string source;                 ///< prediction.cluster.source: where its numbers come from
    std::string unavailable;            ///< prediction.unavailable: why the planner made none
    std::string malformed;              ///< what is wrong with a prediction that is there but unreadable ("": nothing)
    std::string caveat;                 ///< prediction.caveat: what it models otherwise than the run did ("": nothing)
    /// measured_ms / predicted_ms, or 0 without both.
    double ratio() const { return predicted_ms > 0 && measured_ms > 0 ? measured_ms / predicted_ms : 0.0; }
};

/// Reads otherData's "steps" and "prediction" (fields missing or of another type are left out).
StepTimeCheck step_time_check(const nlohmann::json& other_data);

/// Which steps the measured figure is: "median of steps 5-6; step 4 warms up", or
/// "step 4, the only one". `trace summary` and the viewer's Comm panel both say it.
std::string measured_steps_text(const StepTimeCheck& c);

/// Where the prediction's hardware numbers come from, for @p c: its cluster.source
/// ("defaults measured on the development machine ..."), which on @p emulated links
/// is true of its compute only: the links it models are the run's emulated ones, as
/// the run timed them (time-scaled by --emulate). `trace summary` and the viewer say it.
std::string prediction_hardware_text(const StepTimeCheck& c, bool emulated);

/// The lines `trace summary` prints for @p c ("" when the trace has no measured steps).
/// @p emulated: the run's links were emulated, so its times are the emulation's.
std::string format_step_time_check(const StepTimeCheck& c, bool emulated);

}  // namespace ss
