// plan_cmd.cpp — `shardscope plan`: the planner's questions from flags (src/plan/).
//
//   shardscope plan --gpus 512 --hw h100 --model gpt2-xl --mbs 16 --tp 4 --sp 4 --zero 1
//   shardscope plan --gpus 512 --hw h100 --model gpt2-xl --mbs 16 --search --max-gbs 1024
//   shardscope plan --gpus 64 --model gpt3-13b --zero 3 --hpz 8 --qwz --qgz      (ZeRO++, Wang et al. 2023)
//
// Flags mean what they mean in `shardscope train`; a layout flag left out lets
// dp take the rest of the world. With --search the layout flags that are given
// hold that axis fixed and the others are searched.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <memory>

#include "app/commands.h"
#include "app/flag_range.h"
#include "app/layout_flags.h"
#include "app/model_flags.h"
#include "core/atomic_file.h"
#include "core/check.h"
#include "core/output_path.h"
#include "plan/models.h"
#include "plan/report.h"
#include "plan/search.h"
#include "train/plan_for_run.h"

namespace ss::app {

namespace {

struct PlanFlags {
    ModelFlags model;
    PlanInput in;
    std::string hw = "h100", calibration = "out/calibration.json", dtype = "bf16";
    std::string acts = "paper";
    int mbs = 0;
    int64_t max_gbs = 0;
    double gpu_mem_gb = 0, flops_tflops = 0, efficiency = 0, hbm_gbs = 0;
    double intra_gbs = 0, inter_gbs = 0, intra_us = -1, inter_us = -1;
    bool search = false, no_overlap = false, tp_across_nodes = false, allow_quantized = false;
    std::string link, link_intra, link_inter, emulate;  // cpu-local: the links an emulated run has (comm/links.h)
    int top = 10;
    std::string json;
};

Hardware make_hardware(const PlanFlags& f) {
    Hardware h = hardware_preset(f.hw, f.calibration);
    bool custom = false;
    auto over = [&](double v, double& field, double scale) {
        if (v > 0) {
            field = v * scale;
            custom = true;
        }
    };
    over(f.gpu_mem_gb, h.memory, 1e9);
    over(f.flops_tflops, h.flops, 1e12);
    over(f.efficiency, h.efficiency, 1);
    over(f.hbm_gbs, h.hbm_bw, 1e9);
    over(f.intra_gbs, h.intra.busbw, 1e9);
    over(f.inter_gbs, h.inter.busbw, 1e9);
    if (f.intra_us >= 0) h.intra.alpha = f.intra_us * 1e-6, custom = true;
    if (f.inter_us >= 0) h.inter.alpha = f.inter_us * 1e-6, custom = true;
    SS_CHECK(h.efficiency > 0 && h.efficiency <= 1, "--efficiency must be in (0, 1] (got " << h.efficiency << ")");
    if (custom) h.label += " (adjusted)";
    // cpu-local with emulated links: the links a `train --link ...` run on this machine has.
    const bool links = !f.link.empty() || !f.link_intra.empty() || !f.link_inter.empty() || !f.emulate.empty();
    if (links) {
        SS_CHECK(f.hw == "cpu-local", "--link, --link-intra, --link-inter and --emulate describe the emulated links "
                                      "of a threads run on this machine: use them with --hw cpu-local (for a "
                                      "cluster's links give --intra-gbs, --inter-gbs, --intra-us, --inter-us)");
        // --emulate scales by the calibrated matmul rate, the rate this prediction computes at.
        const int gpn = f.link_intra.empty() ? 0 : f.in.gpus_per_node;
        const EmulatedLinks e = make_emulated_links(f.link, f.link_intra, f.link_inter, gpn, f.emulate, f.in.gpus,
                                                    h.flops / 1e9);
        h = emulated_hardware(h, e, f.in.gpus);
    }
    return h;
}

// --model: GPT-2's presets (model/config.h) or the GPT-3 shapes (plan/models.h), with overrides.
GPT2Config resolve_model(const ModelFlags& f) {
    return is_gpt3_model(f.model) ? f.resolve_from(gpt3_model(f.model)) : f.resolve();
}

}  // namespace

void add_plan_command(CLI::App& root) {
    auto f = std::make_shared<PlanFlags>();
    CLI::App* cmd = root.add_subcommand(
        "plan", "Predict GBS, memory per GPU, communication and step time of a layout on any cluster; --search ranks them all");
    PlanLayout& l = f->in.layout;
    add_model_flags(*cmd, f->model);  // --model also takes the GPT-3 shapes: gpt3-125m ... gpt3-175b
    cmd->get_option("--model")->description("Preset: tiny, small, gpt2, gpt2-medium, gpt2-large, gpt2-xl, or a GPT-3 "
                                            "shape: gpt3-125m, -350m, -760m, -1.3b, -2.7b, -6.7b, -13b, -175b");
    cmd->add_option("--seq", f->in.T, "Sequence length T (default: the model's maxT)");
    cmd->add_option("--gpus", f->in.gpus, "World size: GPUs (or ranks)")->capture_default_str();
    cmd->add_option("--gpus-per-node", f->in.gpus_per_node, "GPUs per node (default: the hardware's, 8 for GPUs)");
    cmd->add_option("--hw", f->hw, "Hardware preset: h100, h200, a100, cpu-local")->capture_default_str();
    cmd->add_option("--calibration", f->calibration,
                    "cpu-local: calibration JSON (from `shardscope bench --calibrate`); none: the defaults")
        ->capture_default_str();
    cmd->add_option("--gpu-mem-gb", f->gpu_mem_gb, "Memory per GPU in GB (default: the preset's)");
    cmd->add_option("--flops", f->flops_tflops, "Peak dense TFLOP/s per GPU (default: the preset's)");
    cmd->add_option("--efficiency", f->efficiency, "Fraction of the peak a layer reaches (default: the preset's)");
    cmd->add_option("--hbm-gbs", f->hbm_gbs, "Memory bandwidth per GPU, GB/s");
    cmd->add_option("--intra-gbs", f->intra_gbs, "Bus bandwidth inside a node, GB/s (nccl-tests busbw)");
    cmd->add_option("--inter-gbs", f->inter_gbs, "Bus bandwidth between nodes per GPU, GB/s");
    cmd->add_option("--intra-us", f->intra_us, "Latency per hop inside a node, microseconds");
    cmd->add_option("--inter-us", f->inter_us, "Latency per hop between nodes, microseconds");
    cmd->add_option("--mbs", f->mbs, "Micro-batch size (default 1; --search tries 1, 2, 4, 8, 16)");
    cmd->add_option("--ga", f->in.ga, "Gradient accumulation steps (pipeline micro-batches)");
    cmd->add_option("--gbs", f->in.gbs, "Target global batch size: GA = GBS / (MBS x DP)");
    cmd->add_option("--max-gbs", f->max_gbs, "--search: keep GBS at or under this");
    auto* tp = cmd->add_option("--tp", l.tp, "Tensor-parallel degree (must divide the heads)");
    auto* pp = cmd->add_option("--pp", l.pp, "Pipeline stages (L not divisible by PP: the first L mod PP stages "
                                             "take one block more, as train splits them; or --pp-split)");
    auto* sp = cmd->add_option("--sp", l.sp, "Sequence-parallel degree (must divide T; Ulysses: the heads of a TP rank)");
    add_sp_mode_flag(*cmd, l.sp_mode);
    add_ring_split_flag(*cmd, l.ring_split);
    cmd->add_flag("--sequence-parallel", l.sequence_parallel, "Megatron sequence parallelism on the tp axis");
    cmd->add_option("--dp-shard", l.dp_shard, "Ranks ZeRO shards over (default: the rest of the world)");
    auto* rep = cmd->add_option("--dp-rep", l.dp_rep, "Replicas of the shard group: HSDP (FSDP HYBRID_SHARD) / MiCS (default: 1)");
    cmd->add_option("--replica-sync-every", l.replica_sync_every,
                    "H > 1 with replicas (dp_rep 2 or more): local SGD, the replicas reduce no gradients and average every H "
                    "steps (train's flag; --search: the layouts with replicas)")
        ->capture_default_str();
    cmd->add_option_function<std::string>(
           "--replica-outer", [f](const std::string& o) { f->in.layout.replica_outer = parse_replica_outer(o); },
           "With --replica-sync-every H > 1: avg (local SGD) or nesterov (DiLoCo: its outer state, 8 bytes per "
           "element the optimizer updates)")
        ->default_str("avg");
    auto* zero = cmd->add_option("--zero", l.zero, "ZeRO stage 0 (DDP), 1, 2, 3")->capture_default_str();
    cmd->add_option("--hpz", l.hpz, "ZeRO-3: ZeRO++ hpZ over groups of K (usually the GPUs per node); 0: off");
    cmd->add_flag("--qwz", l.qwz, "ZeRO-3: ZeRO++ qwZ, parameter all-gathers in int8 blocks (changes results)");
    cmd->add_flag("--qgz", l.qgz, "ZeRO-2/3: ZeRO++ qgZ, the gradient reduce-scatter as quantized all-to-alls inside "
                                  "a node (--hpz K or --gpus-per-node) then across nodes (changes results)");
    cmd->add_option("--quant-block", f->in.quant_block, "qwZ/qgZ: elements per quantization block (one fp32 scale each)")
        ->capture_default_str();
    cmd->add_option("--qgz-bits", f->in.qgz_bits, "qgZ: bits per gradient element on the wire, 4 or 8")
        ->capture_default_str();
    add_schedule_flag(*cmd, l.schedule);
    cmd->add_option("--pp-virtual", l.pp_virtual, "Model chunks per stage (interleaved)")->capture_default_str();
    cmd->add_option("--pp-split", l.pp_split, "Blocks per stage for 1F1B and GPipe, e.g. 3,3,2 (default: even, or the "
                                              "first L mod PP stages one block more, as train splits them)")
        ->delimiter(',');
    add_recompute_flag(*cmd, l.recompute);
    cmd->add_option("--dtype", f->dtype, "bf16 (2 + 2 + 12 bytes per parameter) or fp32 (4 + 4 + 8)")->capture_default_str();
    cmd->add_option("--acts", f->acts, "Activation layout: paper (Korthikanti, 16-bit GPUs) or engine (this fp32 engine)")
        ->capture_default_str();
    cmd->add_flag("--flash-attention", f->in.flash_attention,
                  "Attention as FlashAttention runs it (--acts paper): no s x s scores kept, QK^T again in backward");
    cmd->add_flag("--grad-reduce-fp32", f->in.grad_reduce_fp32,
                  "bf16: gradients kept and reduced in fp32, 4 bytes (Megatron-LM's default under --bf16; FSDP's "
                  "reduce_dtype=float32)");
    cmd->add_option("--bucket-mb", f->in.bucket_mb, "Gradient bucket in MiB")->capture_default_str();
    cmd->add_flag("--no-overlap", f->no_overlap, "Nothing hides under compute (every collective on the critical path)");
    cmd->add_option("--prefetch", f->in.prefetch, "ZeRO-3: units gathered ahead of use (0: none)")->capture_default_str();
    cmd->add_option("--link", f->link, "--hw cpu-local: the emulated link of `train --link GBPS[,US]`");
    cmd->add_option("--link-intra", f->link_intra, "--hw cpu-local: `train --link-intra GBPS,US` (with --gpus-per-node)");
    cmd->add_option("--link-inter", f->link_inter, "--hw cpu-local: `train --link-inter GBPS,US`");
    cmd->add_option("--emulate", f->emulate, "--hw cpu-local: `train --emulate PRESET`, time-scaled by the calibrated "
                                             "matmul rate");
    cmd->add_flag("--search", f->search, "Rank every valid layout by predicted tokens/s");
    cmd->add_option("--top", f->top, "--search: how many layouts to print")->capture_default_str();
    cmd->add_flag("--tp-across-nodes", f->tp_across_nodes, "--search: allow TP groups larger than a node");
    cmd->add_flag("--allow-quantized", f->allow_quantized,
                  "--search: also try ZeRO++'s qwZ and qgZ, which change results (marked * in the table)");
    cmd->add_option("--json", f->json, "Write the answer as JSON here");
    // What each number may be (flag_range.h). A hardware flag left out keeps the preset's value.
    limit(*cmd, "--seq", at_least(1), "leave --seq out for the model's maxT");
    limit(*cmd, "--gpus", at_least(1, kMaxPlanGpus));
    limit(*cmd, "--gpus-per-node", at_least(1));
    // Bounds far past any hardware, so that no time or byte count prints 300 digits.
    limit(*cmd, "--gpu-mem-gb", above(0, 1e6), "GB; leave it out for the preset's");
    limit(*cmd, "--flops", above(0, 1e6), "TFLOP/s; leave it out for the preset's");
    for (const char* bw : {"--hbm-gbs", "--intra-gbs", "--inter-gbs"})
        limit(*cmd, bw, at_least(1e-3, 1e6), "GB/s, 1 MB/s to 1 PB/s; leave it out for the preset's");
    limit(*cmd, "--efficiency", above(0, 1), "a fraction of the peak");
    for (const char* hw : {"--intra-us", "--inter-us"})
        limit(*cmd, hw, at_least(0, 1e6), "microseconds; leave it out for the preset's");
    for (const char* n : {"--mbs", "--ga", "--gbs", "--max-gbs", "--top"}) limit(*cmd, n, at_least(1));
    for (const char* axis : {"--tp", "--pp", "--sp", "--pp-virtual"}) limit(*cmd, axis, at_least(1), "1 leaves it unsplit");
    limit(*cmd, "--pp-split", at_least(1), "blocks per stage");
    for (const char* axis : {"--dp-shard", "--dp-rep"})
        limit(*cmd, axis, at_least(1), "leave it out to take the rest of the world");
    limit(*cmd, "--zero", at_least(0, 3));
    limit(*cmd, "--replica-sync-every", at_least(1), "1: every step");
    limit(*cmd, "--hpz", at_least(0), "leave it out for plain ZeRO-3");
    limit(*cmd, "--quant-block", at_least(1, 1 << 20), "elements per fp32 scale; ZeRO++'s default is 256");
    limit(*cmd, "--bucket-mb", at_least(0));
    limit(*cmd, "--prefetch", at_least(0));
    cmd->callback([f, cmd, tp, pp, sp, rep, zero] {
        require_given_calibration(*cmd, f->calibration);
        if (!f->json.empty()) check_writable_file("--json", f->json);  // found now, not after the plan is printed
        PlanInput& in = f->in;
        // ZeRO++'s wire format flags do nothing without what they shape (train refuses them alike)
        const bool quantized = in.layout.qwz || in.layout.qgz || f->allow_quantized;
        SS_CHECK(quantized || cmd->count("--quant-block") == 0,
                 "--quant-block does nothing in this plan: it needs --qwz or --qgz (the blocks they quantize by), "
                 "or --search --allow-quantized; add that, or leave --quant-block out");
        SS_CHECK(in.layout.qgz || f->allow_quantized || cmd->count("--qgz-bits") == 0,
                 "--qgz-bits does nothing in this plan: it needs --qgz, or --search --allow-quantized; add that, "
                 "or leave --qgz-bits out");
        in.model = resolve_model(f->model);
        in.hw = make_hardware(*f);
        {  // whole nodes, or part of one (the links of a group depend on where the node boundaries fall)
            const int gpn = in.gpus_per_node > 0 ? in.gpus_per_node : in.hw.gpus_per_node;
            SS_CHECK(in.gpus <= gpn || in.gpus % gpn == 0,
                     "--gpus " << in.gpus << " is " << double(in.gpus) / gpn << " nodes of " << gpn
                               << " GPUs; give a multiple of " << gpn << " (or set --gpus-per-node)");
        }
        in.dtype = parse_dtype(f->dtype);
        in.act_model = parse_act_model(f->acts);
        in.overlap = !f->no_overlap;
        in.mbs = f->mbs > 0 ? f->mbs : 1;
        if (!f->search) {
            SS_CHECK(f->max_gbs == 0, "--max-gbs is a --search constraint; for one layout give --gbs or --ga");
            SS_CHECK(!f->allow_quantized, "--allow-quantized is a --search choice; for one layout give --qwz or --qgz");
            PlanResult r = plan(in);
            std::cout << format_plan(r);
            if (!r.memory.fits()) {
                // Say what would work: the fastest layouts of the same world, MBS and GBS that fit.
                SearchInput s;
                s.base = in;
                s.base.layout = PlanLayout{};
                s.base.layout.replica_sync_every = in.layout.replica_sync_every;  // the same algorithm
                s.base.layout.replica_outer = in.layout.replica_outer;
                s.base.ga = 0;
                s.base.gbs = r.gbs.gbs;
                s.top = 3;
                try {
                    std::vector<PlanResult> alt = search(s);
                    std::cout << "\nlayouts of " << in.gpus << " GPUs with MBS " << in.mbs << " and GBS " << r.gbs.gbs
                              << " that fit (predicted tokens/s):\n";
                    for (const PlanResult& a : alt) {
                        char buf[320];
                        std::snprintf(buf, sizeof buf, "  %s, GA %d: %.1f GB, %s tokens/s\n", a.layout_str().c_str(),
                                      a.gbs.ga, a.memory.total / 1e9, commas(int64_t(a.time.tokens_per_s)).c_str());
                        std::cout << buf;
                    }
                } catch (const Error& e) {
                    std::cout << "\n" << e.what() << "\n";
                }
            }
            if (!f->json.empty()) write_json_file(f->json, plan_json(r));
            return;
        }
        // The search chooses ZeRO++ itself: hpZ always, the lossy qwZ and qgZ when allowed.
        SS_CHECK(!in.layout.qwz && !in.layout.qgz && in.layout.hpz == 0,
                 "--search tries hpZ by itself, and qwZ and qgZ with --allow-quantized (they change results); "
                 "leave --hpz, --qwz and --qgz out of the search");
        SS_CHECK(in.gbs == 0 || f->max_gbs == 0, "--gbs " << in.gbs << " and --max-gbs " << f->max_gbs
                                                   << " both set the batch: --gbs asks for exactly that GBS, "
                                                   << "--max-gbs for any up to it; give one of them");
        // What the search chooses itself: a flag for it would be dropped without a word.
        for (const char* chosen : {"--ga", "--schedule", "--pp-virtual", "--pp-split", "--recompute", "--dp-shard",
                                   "--sp-mode", "--ring-split", "--sequence-parallel"})
            SS_CHECK(cmd->count(chosen) == 0,
                     "--search chooses " << chosen + 2 << " itself (every value, for every layout); leave " << chosen
                                         << " out, or drop --search to plan that one layout (--tp, --pp, --sp, "
                                         << "--dp-rep, --zero and --mbs hold an axis fixed in a search)");
        // Local SGD applies to the layouts with replicas; a fixed --dp-rep must have them.
        check_replica_sync(in.layout.replica_sync_every, in.layout.replica_outer, rep->count() ? in.layout.dp_rep : 2);
        SearchInput s;
        s.base = in;
        s.max_gbs = f->max_gbs;
        s.allow_quantized = f->allow_quantized;
        if (f->mbs == 0) s.mbs = {1, 2, 4, 8, 16};
        s.tp = tp->count() ? in.layout.tp : 0;
        s.pp = pp->count() ? in.layout.pp : 0;
        s.sp = sp->count() ? in.layout.sp : 0;
        s.dp_rep = rep->count() ? in.layout.dp_rep : 0;
        s.zero = zero->count() ? in.layout.zero : -1;
        s.top = f->top;
        s.tp_across_nodes = f->tp_across_nodes;
        SearchStats stats;
        std::vector<PlanResult> best = search(s, &stats);
        std::cout << format_search(s, best, stats);
        if (!f->json.empty()) write_json_file(f->json, search_json(s, best, stats));
    });
}

}  // namespace ss::app
