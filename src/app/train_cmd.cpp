// train_cmd.cpp — `shardscope train`: flags in, train() out.
//
//   shardscope train --model small --mbs 8 --steps 50
//   shardscope train --model tiny --dtype bf16 --dump-grads out/grads.safetensors --json out/run.json
#include <CLI/CLI.hpp>
#include <iostream>

#include "comm/links.h"
#include "app/commands.h"
#include "app/flag_range.h"
#include "app/inert_flags.h"
#include "app/layout_flags.h"
#include "app/model_flags.h"
#include "core/check.h"
#include "train/train.h"

namespace ss::app {

void add_train_command(CLI::App& root) {
    auto* cmd = root.add_subcommand("train", "Train GPT-2 and report loss, speed, memory and the GBS arithmetic");
    auto opts = std::make_shared<TrainOptions>();
    auto model = std::make_shared<ModelFlags>();
    auto dtype = std::make_shared<std::string>("fp32");
    add_model_flags(*cmd, *model);
    cmd->add_option("--seq", opts->T, "Sequence length T (default: the model's maxT)");
    cmd->add_option("--mbs", opts->mbs, "Micro-batch size: sequences per rank per micro-batch")->capture_default_str();
    cmd->add_option("--ga", opts->ga, "Gradient accumulation: micro-batches per optimizer step")->capture_default_str();
    cmd->add_option("--steps", opts->steps, "Optimizer steps")->capture_default_str();
    cmd->add_option("--lr", opts->lr, "AdamW learning rate")->capture_default_str();
    cmd->add_option("--weight-decay", opts->weight_decay, "AdamW decoupled weight decay")->capture_default_str();
    cmd->add_option("--seed", opts->seed, "Initialisation seed")->capture_default_str();
    cmd->add_option("--dtype", *dtype, "fp32, or bf16 (bf16 params/grads, fp32 master weights and Adam)")
        ->capture_default_str();
    cmd->add_option("--threads", opts->blas_threads, "OpenBLAS threads per rank")->capture_default_str();
    cmd->add_option("--data", opts->data, "llm.c token file (default: the built-in corpus)");
    cmd->add_option("--init", opts->init, "Start from this safetensors file (HF GPT-2 names)");
    cmd->add_option("--save", opts->save, "Save the parameters here at the end (safetensors)");
    cmd->add_option("--dump-grads", opts->dump_grads, "Save the first step's full gradients here (safetensors)");
    cmd->add_option("--json", opts->json, "Write a machine-readable summary here");
    cmd->add_flag("--quiet", opts->quiet, "No per-step lines");
    cmd->add_option("--ranks", opts->ranks, "World size (ranks); all of them data-parallel")->capture_default_str();
    cmd->add_option_function<std::string>(
           "--backend", [opts](const std::string& b) { opts->backend = parse_backend(b); },
           "threads: ranks are threads of this process; mpi or nccl: one process per rank under mpirun")
        ->default_str("threads");
    cmd->add_option("--device", opts->device,
                    "cpu, or cuda (gpu is the same): each rank computes on GPU (rank mod GPUs); several ranks may share one GPU "
                    "(default: cpu, or the SHARDSCOPE_DEVICE environment variable)");
    cmd->add_option("--comm-timeout", opts->comm_timeout, "Seconds a rank waits for another before the run fails")
        ->capture_default_str();
    cmd->add_option("--trace", opts->trace, "Write a Chrome trace of every collective, span and memory change");
    cmd->add_option("--zero", opts->zero, "ZeRO stage: 0 (DDP), 1 (optimizer states), 2 (+ gradients), 3 (+ parameters)")
        ->capture_default_str();
    cmd->add_option("--tp", opts->tp, "Tensor-parallel degree (Megatron): ranks that split every layer")
        ->capture_default_str();
    cmd->add_flag("--sequence-parallel", opts->sequence_parallel,
                  "Megatron sequence parallelism on the tp axis: LayerNorms and residuals on T/tp tokens");
    cmd->add_option("--sp", opts->sp, "Sequence-parallel degree: ranks that split every sequence")
        ->capture_default_str();
    add_sp_mode_flag(*cmd, opts->sp_mode);
    add_ring_split_flag(*cmd, opts->ring_split);
    cmd->add_option("--dp-shard", opts->dp_shard, "Ranks per ZeRO shard group (default: the rest of the world)");
    cmd->add_option("--dp-rep", opts->dp_rep, "Replicas of the shard group: HSDP (FSDP HYBRID_SHARD) / MiCS, not ZeRO++ hpZ (default: 1)");
    cmd->add_option("--bucket-mb", opts->bucket_mb, "DDP: all-reduce gradients in buckets of this many MiB (0: naive)")
        ->capture_default_str();
    cmd->add_option("--replica-sync-every", opts->replica_sync_every,
                    "K > 1: replicas skip the gradient all-reduce and average parameters every K steps (local SGD)")
        ->capture_default_str();
    cmd->add_option_function<std::string>(
           "--replica-outer", [opts](const std::string& o) { opts->replica_outer = parse_replica_outer(o); },
           "With --replica-sync-every H > 1, how the replicas sync: avg (local SGD, the average) or nesterov "
           "(DiLoCo: an outer Nesterov step on the averaged change since the last sync; src/optim/diloco.h)")
        ->default_str("avg");
    cmd->add_option("--outer-lr", opts->outer_lr,
                    "--replica-outer nesterov: the outer learning rate (DiLoCo's 0.7; 1 with --outer-momentum 0 is avg)")
        ->capture_default_str();
    cmd->add_option("--outer-momentum", opts->outer_momentum,
                    "--replica-outer nesterov: the outer Nesterov momentum, in [0, 1) (DiLoCo's 0.9)")
        ->capture_default_str();
    cmd->add_option_function<std::string>(
           "--overlap",
           [opts](const std::string& v) {
               SS_CHECK(v == "on" || v == "off", "--overlap " << v << " is not a choice; choose on (start the "
                                                     << "data-parallel, pipeline and ring traffic early, under compute) or off "
                                                     << "(every call blocking where it is made); the results are the same");
               opts->overlap = v == "on";
           },
           "on: start data-parallel, pipeline and ring-attention traffic early so it hides under compute; off: every "
           "call blocks where it is made (the same bits either way)")
        ->default_str("on");
    cmd->add_option("--prefetch", opts->prefetch,
                    "ZeRO-3 with --overlap on: units whose all-gather starts ahead of use (0: none)")
        ->capture_default_str();
    cmd->add_option("--hpz", opts->hpz,
                    "ZeRO++ hpZ with --zero 3: each rank keeps 1/K of every unit after its forward gather, and the "
                    "backward gathers inside groups of K ranks (K dividing the shard group; usually the ranks per node)");
    cmd->add_flag("--qwz", opts->qwz,
                  "ZeRO++ qwZ with --zero 3: parameter all-gathers move block-quantized int8 weights (and one fp32 "
                  "scale per block), dequantized on arrival; changes results (docs/formulas.md)");
    cmd->add_flag("--qgz", opts->qgz,
                  "ZeRO++ qgZ with --zero 2 or 3: gradients are averaged by quantized all-to-alls, inside the node "
                  "(--hpz K or --gpus-per-node) and then across nodes, instead of a reduce-scatter; changes results");
    cmd->add_option("--quant-block", opts->quant_block, "qwZ / qgZ: elements per quantization block (one fp32 scale each)")
        ->capture_default_str();
    cmd->add_option("--qgz-bits", opts->qgz_bits, "qgZ: bits per gradient element on the wire, 4 (the paper's) or 8")
        ->capture_default_str();
    cmd->add_option("--link", opts->link,
                    "Emulate one link for every group, GBPS[,US] (GB/s and microseconds of latency), on the threads "
                    "backend; the run says so everywhere (src/comm/links.h)");
    cmd->add_option("--link-intra", opts->link_intra, "Emulated link inside a node, GBPS,US (with --link-inter, --gpus-per-node)");
    cmd->add_option("--link-inter", opts->link_inter, "Emulated link between nodes, GBPS,US (with --link-intra, --gpus-per-node)");
    cmd->add_option("--gpus-per-node", opts->gpus_per_node,
                    "Ranks per node: r and s share a node when r / N == s / N. With --link-intra/--link-inter: the "
                    "emulated nodes; alone, on any backend: where the nodes are, for qgZ's and hpZ's node groups "
                    "and trace summary's cross-node counts (emulates nothing)");
    {
        std::string presets;
        for (const ClusterPreset& c : cluster_presets()) presets += (presets.empty() ? "" : ", ") + c.name;
        cmd->add_option("--emulate", opts->emulate,
                        "A real cluster's links, time-scaled by this CPU's matmul rate against that GPU's peak so the "
                        "run has the cluster's compute/communication ratio (--device cpu only): " + presets);
    }
    cmd->add_option("--pp", opts->pp, "Pipeline stages: ranks that each hold a slice of the layers")
        ->capture_default_str();
    cmd->add_option("--pp-split", opts->pp_split, "Blocks per (virtual) stage, e.g. 3,3,2 (default: an even split)")
        ->delimiter(',');
    add_schedule_flag(*cmd, opts->schedule);
    cmd->add_option("--pp-virtual", opts->pp_virtual, "Model chunks per pipeline rank (--schedule interleaved)")
        ->capture_default_str();
    add_recompute_flag(*cmd, opts->recompute);
    cmd->add_option_function<std::string>(
        "--inject-fault", [opts](const std::string& spec) { opts->fault = parse_fault(spec); },
        "rank=R,step=S,kind=throw|hang|exit: make one rank fail on purpose (src/train/fault.h)");
    cmd->add_option("--save-every", opts->save_every, "Save a checkpoint every K steps (sharded; any layout can load it)")
        ->capture_default_str();
    cmd->add_option("--checkpoint-dir", opts->checkpoint_dir, "Where --save-every writes: DIR/step-N/, DIR/latest");
    cmd->add_option("--keep-last", opts->keep_last,
                    "Keep the newest N complete checkpoints in --checkpoint-dir, deleting older ones once latest "
                    "moves on (0: keep every one)")
        ->capture_default_str();
    cmd->add_option("--resume", opts->resume,
                    "Continue from a checkpoint (a --checkpoint-dir, or one of its step-N): any layout");
    // What each number may be (flag_range.h); a value left out keeps the default beside it above.
    limit(*cmd, "--seq", at_least(1), "leave --seq out for the model's maxT");
    limit(*cmd, "--mbs", at_least(1));
    limit(*cmd, "--seed", at_least(0), "a whole number; -1 would wrap to 2^64 - 1");
    limit(*cmd, "--ga", at_least(1));
    limit(*cmd, "--steps", at_least(0), "0 builds the model and takes no step");
    limit(*cmd, "--threads", at_least(1, kMaxBlasThreads));
    limit(*cmd, "--ranks", at_least(1, kMaxThreadRanks), "the threads backend runs every rank in this process");
    limit(*cmd, "--comm-timeout", above(0, 1e6), "seconds; 1e6 is 11 days, more than any call should wait");
    limit(*cmd, "--zero", at_least(0, 3));
    for (const char* axis : {"--tp", "--sp", "--pp", "--pp-virtual"}) limit(*cmd, axis, at_least(1), "1 leaves it unsplit");
    for (const char* axis : {"--dp-shard", "--dp-rep"})
        limit(*cmd, axis, at_least(1), "leave it out to take the rest of the world");
    limit(*cmd, "--pp-split", at_least(1), "blocks per stage");
    limit(*cmd, "--bucket-mb", at_least(0), "0: one all-reduce per tensor");
    limit(*cmd, "--prefetch", at_least(0), "0 gathers each unit when it is needed");
    limit(*cmd, "--hpz", at_least(0), "leave it out for plain ZeRO-3");
    limit(*cmd, "--gpus-per-node", at_least(1), "ranks per node");
    limit(*cmd, "--quant-block", at_least(1), "elements per fp32 scale; DeepSpeed's groups are a few hundred");
    limit(*cmd, "--replica-sync-every", at_least(1), "1: every step");
    limit(*cmd, "--outer-lr", above(0), "DiLoCo's is 0.7");  // --outer-momentum's [0, 1): train/options.cpp
    limit(*cmd, "--save-every", at_least(0), "0: never");
    cmd->callback([opts, model, dtype, cmd]() {
        opts->model = model->resolve();
        opts->dtype = parse_dtype(*dtype);
        refuse_inert_flags(*cmd, *opts);
        train(*opts, &std::cout);
    });
}

}  // namespace ss::app
