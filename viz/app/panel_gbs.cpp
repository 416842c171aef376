// panel_gbs.cpp — the GBS calculator: for any cluster, which axes take ranks and
// how big the global batch gets. Works with no trace loaded.
//
//     DP  = world / (TP x PP x SP)        GBS = MBS x GA x DP
//
// The arithmetic and its checks are viz/model/gbs.cpp (compute_gbs). The
// planner's columns (memory per GPU, communication per step by payload,
// predicted step time; src/plan/plan.h) are drawn by plan_section() in
// panel_gbs_plan.cpp.
#include <algorithm>
#include <cstdio>
#include <string>

#include "model/config.h"
#include "plan/hardware.h"
#include "plan/models.h"
#include "viz/app/panels.h"
#include "viz/app/widgets.h"

namespace ss::viz {

void plan_section(ViewerState& s, const GbsResult& r);  // panel_gbs_plan.cpp

std::vector<std::string> calculator_models() {
    std::vector<std::string> names = model_preset_names();
    for (const std::string& n : gpt3_model_names()) names.push_back(n);
    return names;
}

GPT2Config calculator_model(int i) {
    const std::vector<std::string> names = calculator_models();
    const std::string& n = names[size_t(std::clamp(i, 0, int(names.size()) - 1))];
    return is_gpt3_model(n) ? gpt3_model(n) : model_preset(n);
}

namespace {

// An integer input with +/- buttons, clamped to [lo, hi].
bool int_input(const char* label, int* v, int lo, int hi, const char* help) {
    ImGui::SetNextItemWidth(130);
    const bool changed = ImGui::InputInt(label, v, 1, 8);
    *v = std::clamp(*v, lo, hi);
    if (help) help_marker(help);
    return changed;
}

// The world split into the axes that take ranks, as a bar of chips.
void axes_bar(const GbsResult& r) {
    struct Chip {
        const char* name;
        int degree;
        Rgb color;
        const char* what;
    };
    const Chip chips[] = {
        {"TP", r.shape.tp, payload_color(Payload::act), "splits every weight matrix (Megatron)"},
        {"PP", r.shape.pp, payload_color(Payload::act_grad), "splits the layers into stages"},
        {"SP", r.shape.sp, Rgb{86, 180, 233}, "splits every sequence (Ulysses / ring)"},
        {"DP", r.dp, payload_color(Payload::grad), "different batches: the only axis that grows GBS"},
    };
    for (const Chip& c : chips) {
        swatch(c.color, c.degree > 1);
        ImGui::Text("%s %d", c.name, c.degree);
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", c.what);
        ImGui::SameLine(0, 4);
        if (&c != &chips[3]) {
            ImGui::TextDisabled("x");
            ImGui::SameLine(0, 4);
        }
    }
    ImGui::Text("= %d GPUs", r.shape.tp * r.shape.pp * r.shape.sp * r.dp);
    ImGui::TextDisabled("DP %d = dp_shard %d (ZeRO shards over these) x dp_rep %d (replicas)", r.dp, r.shape.dp_shard,
                        r.shape.dp_rep);
}

}  // namespace

void draw_gbs(ViewerState& s, ImVec2 size) {
    GbsUi& ui = s.gbs;
    heading("GBS calculator");
    ImGui::SameLine();
    ImGui::TextDisabled("which layout keeps the global batch sane? (needs no trace)");
    help_marker("GBS = MBS x GA x DP, DP = world / (TP x PP x SP)  (src/mesh/process_mesh.h; "
                "src/train/train.h). TP, PP and SP take ranks without adding batches, so giving ranks to "
                "them is how a large cluster keeps GBS at a value the optimizer tolerates (e.g. <= 1024 "
                "sequences). Replica groups (dp_rep) change memory and traffic, not GBS.");
    const std::vector<std::string> models = calculator_models();
    ui.model = std::clamp(ui.model, 0, int(models.size()) - 1);
    const GPT2Config cfg = calculator_model(ui.model);

    // ---- inputs --------------------------------------------------------------------------
    ImGui::BeginChild("gbs_inputs", ImVec2(std::min(430.0f, size.x * 0.42f), 0), true);
    ImGui::TextUnformatted("cluster");
    int_input("GPUs", &ui.in.gpus, 1, 1 << 20, "world size: every GPU is one rank");
    int_input("GPUs per node", &ui.in.gpus_per_node, 1, 1024,
              "GPUs joined by the fast link (NVLink); TP should stay inside a node");
    const std::vector<std::string> hws = hardware_preset_names();
    ui.hw = std::clamp(ui.hw, 0, int(hws.size()) - 1);
    ImGui::SetNextItemWidth(130);
    if (ImGui::BeginCombo("hardware", hws[size_t(ui.hw)].c_str())) {
        for (size_t i = 0; i < hws.size(); ++i)
            if (ImGui::Selectable(hws[i].c_str(), int(i) == ui.hw)) {
                ui.hw = int(i);
                const Hardware h = hardware_preset(hws[i]);
                ui.gpu_mem_gb = float(h.memory / 1e9);
                ui.in.gpus_per_node = std::min(h.gpus_per_node, 1 << 20);
            }
        ImGui::EndCombo();
    }
    help_marker("The planner's device presets (src/plan/hardware.h): peak FLOP/s, memory, and the intra- and "
                "inter-node links; cpu-local is this machine, from `shardscope bench --calibrate`.");
    ImGui::SetNextItemWidth(130);
    ImGui::InputFloat("GB per GPU", &ui.gpu_mem_gb, 8, 16, "%.0f");
    ui.gpu_mem_gb = std::max(ui.gpu_mem_gb, 0.01f);
    help_marker("GB here and in every number of this calculator is 10^9 bytes, as GPU memory is quoted "
                "(H100: 80 GB) and as `shardscope plan` prints it (src/plan/report.h, decimal_bytes). "
                "The trace panels count the Ledger's bytes in binary units (MiB = 2^20 bytes).");
    ImGui::Separator();
    ImGui::TextUnformatted("model and batch");
    ImGui::SetNextItemWidth(130);
    if (ImGui::BeginCombo("model", models[size_t(ui.model)].c_str())) {
        for (size_t i = 0; i < models.size(); ++i)
            if (ImGui::Selectable(models[i].c_str(), int(i) == ui.model)) ui.model = int(i);
        ImGui::EndCombo();
    }
    ImGui::SameLine();
    ImGui::TextDisabled("L %d, C %d, H %d", cfg.L, cfg.C, cfg.H);
    int_input("T (sequence)", &ui.seq, 1, 1 << 20, nullptr);
    int_input("MBS", &ui.in.mbs, 1, 1 << 16, "micro-batch size: sequences per rank per forward/backward");
    int_input("GA", &ui.in.ga, 1, 1 << 16, "gradient accumulation: micro-batches per optimizer step");
    ImGui::SetNextItemWidth(130);
    ImGui::InputScalar("target GBS", ImGuiDataType_S64, &ui.in.target_gbs);
    help_marker("Warn when GBS passes this. Past a model's critical batch size a larger batch stops "
                "buying fewer steps (McCandlish et al. 2018); GPT-2/3-size runs use ~0.5-4M tokens.");
    ImGui::Separator();
    ImGui::TextUnformatted("layout");
    int_input("TP", &ui.in.tp, 1, 4096, "tensor parallel: must divide the heads H");
    int_input("PP", &ui.in.pp, 1, 4096, "pipeline stages: must divide the layers L");
    int_input("SP", &ui.in.sp, 1, 4096, "sequence parallel (Ulysses / ring attention): takes ranks");
    ImGui::SetNextItemWidth(130);
    const char* sp_modes[] = {"Ulysses", "ring attention"};
    ImGui::Combo("SP mode", &ui.sp_mode, sp_modes, 2);
    int_input("dp_shard (0 = rest)", &ui.in.dp_shard, 0, 1 << 20, "ranks ZeRO shards over; 0: the rest of DP");
    int_input("dp_rep (0 = rest)", &ui.in.dp_rep, 0, 1 << 20, "replicas of the shard group (HSDP / MiCS)");
    ImGui::TextUnformatted("ZeRO");
    for (int z = 0; z <= 3; ++z) {
        ImGui::SameLine();
        ImGui::RadioButton(("" + std::to_string(z) + "##zero").c_str(), &ui.zero, z);
    }
    ImGui::SetNextItemWidth(130);
    const char* recompute[] = {"none", "selective", "full"};
    ImGui::Combo("recompute", &ui.recompute, recompute, 3);
    help_marker("Activation recomputation (Korthikanti et al. 2022): selective recomputes the attention core, "
                "full keeps only each layer's input and recomputes the layer in backward.");
    ImGui::Checkbox("FlashAttention", &ui.flash);
    help_marker("Attention as FlashAttention runs it (Dao et al. 2022; `plan --flash-attention`): no s x s scores "
                "kept, an fp32 log-sum-exp per query and head instead, and QK^T computed again in backward. "
                "Most GPU training stacks use it; off, the scores are kept as in Korthikanti's table.");
    ImGui::SetNextItemWidth(130);
    const char* dtypes[] = {"fp32", "bf16"};
    ImGui::Combo("dtype", &ui.dtype, dtypes, 2);
    help_marker("Bytes per parameter of the model states: bf16 2 + 2 + 12 (fp32 master weights and Adam m, v), "
                "fp32 4 + 4 + 8 (ZeRO paper, sec. 3.1).");
    ImGui::EndChild();
    ImGui::SameLine();

    // ---- results ---------------------------------------------------------------------------
    ImGui::BeginChild("gbs_results", ImVec2(0, 0), true);
    GbsInput in = ui.in;
    in.n_head = cfg.H;
    in.n_layer = cfg.L;
    const GbsResult r = compute_gbs(in);
    if (!r.ok) {
        ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 120, 110, 255));
        ImGui::TextWrapped("This layout cannot exist: %s", r.error.c_str());
        ImGui::PopStyleColor();
    } else {
        ImGui::TextUnformatted("which axes take ranks");
        help_marker("world = TP x PP x SP x DP. Only DP (different batches) multiplies the batch.");
        axes_bar(r);
        ImGui::Spacing();
        ImGui::TextUnformatted("the arithmetic");
        help_marker("From viz/model/gbs.cpp; the same formulas as `shardscope train` prints (src/train/train.h) "
                    "and the planner uses (src/plan/gbs.h).");
        ImGui::SetWindowFontScale(1.25f);
        for (const std::string& l : r.lines) ImGui::TextUnformatted(l.c_str());
        ImGui::SetWindowFontScale(1.0f);
        ImGui::Text("tokens per step = GBS x T = %s x %d = %s", fmt_int(uint64_t(r.gbs)).c_str(), ui.seq,
                    fmt_int(uint64_t(r.gbs) * uint64_t(ui.seq)).c_str());
        if (in.target_gbs > 0 && r.max_mbs_for_target >= 1)
            ImGui::TextDisabled("largest MBS with GBS <= %lld at GA %d: %lld", (long long)in.target_gbs, in.ga,
                                (long long)r.max_mbs_for_target);
        for (const std::string& w : r.warnings) {
            ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 190, 90, 255));
            ImGui::TextWrapped("! %s", w.c_str());
            ImGui::PopStyleColor();
        }
        ImGui::Separator();
        plan_section(s, r);
    }
    source_note("drawn by viz/app/panel_gbs.cpp from viz/model/gbs.cpp (and panel_gbs_plan.cpp from src/plan/)");
    ImGui::EndChild();
}

}  // namespace ss::viz
