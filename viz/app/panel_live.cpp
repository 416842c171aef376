// panel_live.cpp — the Live run panel: pick a layout, press Run, watch the trace.
//
// The run is `train()` (src/train/train.h) on the threads backend, in this
// process, on a worker thread (viz/app/live.cpp); its lines appear below as
// it prints them, and when it ends its trace (out/live-N.json, written at the
// end) is loaded into every other panel; Stop ends it before its next step.
// Only layouts the engine runs are offered: data parallelism with ZeRO 0-3 and
// replica groups, and tensor parallelism.
#include <algorithm>
#include <cstdio>
#include <string>

#include "model/config.h"
#include "viz/app/panels.h"
#include "viz/app/widgets.h"

namespace ss::viz {

void draw_live(ViewerState& s, ImVec2 size) {
    (void)size;
    LiveUi& ui = s.live;
    LiveConfig& c = ui.cfg;
    heading("Live run");
    ImGui::SameLine();
    ImGui::TextDisabled("run the engine here, on threads, and look at its trace");
    help_marker("Each rank is a thread of this process (the threads backend); collectives are the project's "
                "own ring over shared memory. The run writes a trace like `shardscope train --trace` and every "
                "panel switches to it when the run ends. A few seconds for the tiny model.");
    const bool running = live_active(ui);  // going, or ended and not yet shown
    const std::vector<std::string> models = model_preset_names();
    const int model_max = std::min<int>(int(models.size()), 2);  // tiny and small run in seconds
    ImGui::BeginDisabled(running);
    ImGui::SetNextItemWidth(140);
    if (ImGui::BeginCombo("model", models[size_t(std::clamp(c.model, 0, model_max - 1))].c_str())) {
        for (int i = 0; i < model_max; ++i)
            if (ImGui::Selectable(models[size_t(i)].c_str(), i == c.model)) c.model = i;
        ImGui::EndCombo();
    }
    auto slider = [](const char* label, int* v, int lo, int hi, const char* help) {
        ImGui::SetNextItemWidth(200);
        ImGui::SliderInt(label, v, lo, hi);
        if (help) help_marker(help);
    };
    slider("ranks", &c.ranks, 1, 16, "world size: threads, one per rank");
    slider("TP", &c.tp, 1, 4, "tensor-parallel degree: must divide the ranks and the heads (tiny: H = 4)");
    slider("dp_rep", &c.dp_rep, 1, 8, "replica groups; dp_shard = ranks / (TP x dp_rep)");
    ImGui::TextUnformatted("ZeRO stage");
    for (int z = 0; z <= 3; ++z) {
        ImGui::SameLine();
        ImGui::RadioButton((std::to_string(z) + "##live_zero").c_str(), &c.zero, z);
    }
    help_marker("0 = DDP (every rank holds everything); 1 shards the optimizer state; 2 also the gradients; "
                "3 also the parameters, gathered layer by layer (ZeRO paper, Rajbhandari et al. 2020).");
    slider("MBS", &c.mbs, 1, 8, "micro-batch size per rank");
    slider("GA", &c.ga, 1, 4, "gradient accumulation steps");
    slider("steps", &c.steps, 1, 10, nullptr);
    ImGui::SetNextItemWidth(140);
    const char* dtypes[] = {"fp32", "bf16"};
    ImGui::Combo("dtype", &c.dtype, dtypes, 2);
    ImGui::EndDisabled();

    const int dp = c.ranks / std::max(c.tp * c.dp_rep, 1);
    const bool valid = c.ranks % (c.tp * c.dp_rep) == 0;
    if (valid)
        ImGui::Text("DP = ranks / TP = %d / %d = %d = dp_shard %d x dp_rep %d;  GBS = MBS x GA x DP = %d x %d x %d = %d",
                    c.ranks, c.tp, c.ranks / c.tp, dp, c.dp_rep, c.mbs, c.ga, c.ranks / c.tp,
                    c.mbs * c.ga * (c.ranks / c.tp));
    else
        ImGui::TextColored(ImVec4(1, 0.5f, 0.4f, 1), "TP x dp_rep = %d does not divide %d ranks", c.tp * c.dp_rep,
                           c.ranks);
    ImGui::BeginDisabled(running || !valid);
    if (ImGui::Button(running ? "running..." : "Run", ImVec2(120, 0))) live_start(ui);
    ImGui::EndDisabled();
    if (running) {
        const bool stopping = ui.run->stop.requested;
        ImGui::SameLine();
        ImGui::BeginDisabled(stopping);
        if (ImGui::Button(stopping ? "stopping..." : "Stop", ImVec2(120, 0))) live_stop(ui);
        ImGui::EndDisabled();
        help_marker("Rank 0 ends the run before its next step (train()'s StopRequest, src/train/train.h); the "
                    "other ranks stop at their next collective, as when a rank fails. A stopped run writes no "
                    "trace. Closing the window stops a run the same way.");
    }
    if (ui.run) {
        ImGui::SameLine();
        ImGui::TextDisabled("trace: %s", ui.run->trace.c_str());
        std::string log, error;
        {
            std::lock_guard<std::mutex> lock(ui.run->mu);
            log = ui.run->log;
            error = ui.run->error;
        }
        if (!error.empty()) ImGui::TextColored(ImVec4(1, 0.5f, 0.4f, 1), "the run failed: %s", error.c_str());
        ImGui::BeginChild("live_log", ImVec2(0, -ImGui::GetTextLineHeightWithSpacing()), true);
        ImGui::TextUnformatted(log.c_str());
        if (running) ImGui::SetScrollHereY(1.0f);
        ImGui::EndChild();
    }
    source_note("drawn by viz/app/panel_live.cpp; the run is viz/app/live.cpp calling train() (src/train/train.h)");
}

}  // namespace ss::viz
