// panel_gbs_plan.cpp — the planner's columns of the GBS calculator: for the layout
// on the left, what one GPU holds, what it sends per step, and how long a step takes.
//
// Everything here is ss::plan() (src/plan/plan.h) on the calculator's inputs:
//
//     memory  src/plan/memory.h  ZeRO paper sec. 3.1/5 (model states), Korthikanti et al. 2022 (activations)
//     comm    src/plan/comm.h    ZeRO paper sec. 7, Megatron, Ulysses / ring, pipeline sends; alpha-beta time
//     time    src/plan/time.h    Narayanan et al. 2021 (FLOPs, bubble), overlap of DP traffic
//
// The planner throws ss::Error for a layout that cannot exist (a degree that does
// not divide the heads, the sequence or the layers); the message is shown as is.
#include <algorithm>
#include <cstdio>
#include <string>

#include "core/check.h"
#include "plan/plan.h"
#include "plan/report.h"
#include "viz/app/panels.h"
#include "viz/app/widgets.h"

namespace ss::viz {

namespace {

// The hardware presets, read once (cpu-local reads out/calibration.json when it exists).
const Hardware& hardware(int i) {
    static std::vector<Hardware> presets = [] {
        std::vector<Hardware> v;
        for (const std::string& n : hardware_preset_names()) v.push_back(hardware_preset(n));
        return v;
    }();
    return presets[size_t(std::clamp(i, 0, int(presets.size()) - 1))];
}

PlanInput plan_input(const GbsUi& ui) {
    PlanInput in;
    in.model = calculator_model(ui.model);
    in.T = ui.seq;
    in.gpus = ui.in.gpus;
    in.gpus_per_node = ui.in.gpus_per_node;
    in.hw = hardware(ui.hw);
    in.hw.memory = double(ui.gpu_mem_gb) * 1e9;
    in.layout.tp = ui.in.tp;
    in.layout.pp = ui.in.pp;
    in.layout.sp = ui.in.sp;
    in.layout.sp_mode = ui.sp_mode == 1 ? SpMode::ring : SpMode::ulysses;
    in.layout.dp_shard = ui.in.dp_shard;
    in.layout.dp_rep = ui.in.dp_rep;
    in.layout.zero = ui.zero;
    in.layout.recompute = ui.recompute == 2 ? Recompute::full : (ui.recompute == 1 ? Recompute::selective : Recompute::none);
    in.mbs = ui.in.mbs;
    in.ga = ui.in.ga;
    in.dtype = ui.dtype == 0 ? DType::f32 : DType::bf16;
    in.flash_attention = ui.flash;
    return in;
}

void memory_table(const PlanResult& r) {
    const MemoryPlan& m = r.memory;
    const double cap = m.capacity;
    struct Row {
        Mem cat;
        double bytes;
    };
    const Row rows[] = {{Mem::params, double(m.states.params)}, {Mem::grads, double(m.states.grads)},
                        {Mem::optim, double(m.states.optim)},   {Mem::acts, m.acts.total},
                        {Mem::comm, double(m.comm)}};
    // a bar of the GPU's memory, filled by category
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const float w = std::min(ImGui::GetContentRegionAvail().x - 8, 520.0f), h = 18;
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const double scale = double(w) / std::max(cap, double(m.total));
    float x = p.x;
    for (const Row& row : rows) {
        const float bw = float(row.bytes * scale);
        dl->AddRectFilled(ImVec2(x, p.y), ImVec2(x + bw, p.y + h), col(memory_color(row.cat)));
        x += bw;
    }
    const float cap_x = p.x + float(cap * scale);
    dl->AddRect(ImVec2(p.x, p.y), ImVec2(cap_x, p.y + h), IM_COL32(220, 220, 230, 200));
    ImGui::Dummy(ImVec2(w, h + 2));
    ImGui::Text("%s of %s per GPU (%.0f%%)", decimal_bytes(double(m.total)).c_str(), decimal_bytes(cap).c_str(),
                100.0 * double(m.total) / cap);
    if (!m.fits()) {
        ImGui::SameLine();
        ImGui::TextColored(ImVec4(1, 0.45f, 0.4f, 1), "DOES NOT FIT");
    }
    help_marker("Bytes one GPU holds at its peak, for the pipeline stage that needs the most (src/plan/memory.h). "
                "Model states (ZeRO paper, sec. 3.1 and 5): params 2 (bf16) or 4 bytes, grads the same, "
                "optimizer 12 (fp32 master + Adam m, v) or 8, per parameter of this GPU's TP/PP slice; ZeRO-1 "
                "divides the optimizer by the shard group N = dp_shard x sp, ZeRO-2 also the grads, ZeRO-3 "
                "also the params. Activations (Korthikanti et al. 2022, table 2): sbh(34 + 5as/h) per layer "
                "and micro-batch, /t with TP (and SP), fewer with recompute, times the micro-batches a stage "
                "keeps in flight. comm: buckets or ZeRO-3's largest gathered unit.");
    if (ImGui::BeginTable("plan_mem", 2, ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_RowBg)) {
        for (const Row& row : rows) {
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            swatch(memory_color(row.cat));
            ImGui::TextUnformatted(mem_name(row.cat));
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(decimal_bytes(row.bytes).c_str());
        }
        ImGui::EndTable();
    }
    ImGui::TextDisabled("activations: %s per layer and micro-batch (%s)", decimal_bytes(m.acts.per_layer).c_str(),
                        m.acts.formula.c_str());
}

void comm_table(const PlanResult& r) {
    std::array<double, kPayloads> bytes{}, seconds{};
    std::array<int64_t, kPayloads> calls{};
    for (const CommCall& c : r.comm) {
        bytes[size_t(c.payload)] += double(c.bytes);
        seconds[size_t(c.payload)] += c.seconds;
        calls[size_t(c.payload)] += c.calls;
    }
    if (ImGui::BeginTable("plan_comm", 4, ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_RowBg)) {
        ImGui::TableSetupColumn("payload");
        ImGui::TableSetupColumn("calls");
        ImGui::TableSetupColumn("bytes");
        ImGui::TableSetupColumn("time (alpha-beta)");
        ImGui::TableHeadersRow();
        for (int p = 0; p < kPayloads; ++p) {
            if (calls[size_t(p)] == 0) continue;
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            swatch(payload_color(Payload(p)));
            ImGui::TextUnformatted(payload_name(Payload(p)));
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(fmt_int(uint64_t(calls[size_t(p)])).c_str());
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(decimal_bytes(bytes[size_t(p)]).c_str());
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(fmt_time_us(seconds[size_t(p)] * 1e6).c_str());
        }
        ImGui::EndTable();
    }
    help_marker("Every collective global rank 0 issues in one optimizer step, added up by payload "
                "(src/plan/comm.h): bytes as nccl-tests and the trace count them. DP/ZeRO (ZeRO paper sec. 7): "
                "DDP all-reduces the gradients (2 Psi moved), ZeRO-3 gathers the params twice and "
                "reduce-scatters the grads (3 Psi). TP (Megatron): 2 all-reduces of activations per layer "
                "forward, 2 backward. Time: hops x alpha + bytes x busbw factor / busbw, on the intra- or "
                "inter-node link the axis uses.");
}

}  // namespace

void plan_section(ViewerState& s, const GbsResult& r) {
    (void)r;
    const GbsUi& ui = s.gbs;
    PlanResult pr;
    try {
        pr = plan(plan_input(ui));
    } catch (const Error& e) {
        ImGui::TextColored(ImVec4(1, 0.55f, 0.45f, 1), "the planner: this layout cannot run:");
        ImGui::TextWrapped("%s", e.what());
        return;
    }
    heading("the planner's prediction");
    ImGui::SameLine();
    ImGui::TextDisabled("%s on %s", pr.layout_str().c_str(), pr.input.hw.label.c_str());
    ImGui::TextUnformatted("memory per GPU");
    ImGui::SameLine();
    ImGui::TextDisabled("(bytes in decimal units, 1 GB = 10^9 bytes, as `shardscope plan` prints them)");
    memory_table(pr);
    ImGui::Spacing();
    ImGui::TextUnformatted("communication per step (rank 0)");
    comm_table(pr);
    ImGui::Spacing();
    const TimePlan& t = pr.time;
    ImGui::Text("step %s = %s tokens/s, MFU %.1f%%", fmt_time_us(t.step * 1e6).c_str(),
                fmt_int(uint64_t(t.tokens_per_s)).c_str(), 100 * t.mfu);
    help_marker("src/plan/time.h: compute = 6 x params x tokens FLOPs (+ attention; Narayanan et al. 2021, eq. 3; "
                "x 8/6 with full recompute) at the preset's peak x efficiency; plus TP/SP/PP traffic on the "
                "critical path, the pipeline bubble (p - 1)/(v m) of the micro-batches, the data-parallel "
                "traffic that does not hide under compute, and the optimizer. MFU = model FLOPs / (time x peak).");
    // Narayanan et al. 2021's bubble time fraction: idle over compute, not over the step (tutorials/08).
    if (pr.input.layout.pp > 1)
        ImGui::TextDisabled("pipeline bubble (p-1)/(v m) = %.1f%% of the compute time", 100 * t.bubble_fraction);
}

}  // namespace ss::viz
