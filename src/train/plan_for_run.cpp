#include "train/plan_for_run.h"

#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>

#include "core/check.h"
#include "core/device.h"
#include "plan/plan.h"

namespace ss {

Hardware emulated_hardware(Hardware hw, const EmulatedLinks& links, int world) {
    if (!links.on) return hw;
    auto link = [&](const EmulatedLink& e) {
        Link l;
        l.busbw = e.gbps * 1e9 / links.time_scale;
        l.alpha = e.us * 1e-6 * links.time_scale;
        l.ring = true;
        return l;
    };
    hw.intra = link(links.intra);
    hw.inter = link(links.inter);
    hw.gpus_per_node = links.gpus_per_node > 0 ? links.gpus_per_node : world;
    hw.label += " with " + links.describe();
    return hw;
}

PlanInput plan_input_for(const TrainOptions& o, const std::string& calibration, const EmulatedLinks& links) {
    PlanInput in;
    in.model = o.model;
    in.T = o.T;
    in.gpus = o.ranks;
    in.hw = emulated_hardware(hardware_preset("cpu-local", calibration), links, o.ranks);
    in.layout.tp = o.tp;
    in.layout.sequence_parallel = o.sequence_parallel;
    in.layout.sp = o.sp;
    in.layout.sp_mode = o.sp_mode;
    in.layout.ring_split = o.ring_split;
    in.layout.dp_shard = o.dp_shard;
    in.layout.dp_rep = o.dp_rep;
    in.layout.zero = o.zero;
    in.layout.hpz = o.hpz;
    in.layout.qwz = o.qwz;
    in.layout.qgz = o.qgz;
    // qgZ's node exactly as the engine picks it (--hpz, else --gpus-per-node, else the shard group).
    if (o.qgz) in.layout.qgz_node = qgz_node_size(o, fill_dp(o.ranks, MeshShape{o.pp, o.dp_rep, o.dp_shard, o.sp, o.tp}));
    in.quant_block = o.quant_block;
    in.qgz_bits = o.qgz_bits;
    in.layout.pp = o.pp;
    in.layout.schedule = o.schedule;
    in.layout.pp_virtual = o.pp_virtual;
    in.layout.pp_split = o.pp_split;
    in.layout.recompute = o.recompute;
    in.layout.replica_sync_every = o.replica_sync_every;
    in.layout.replica_outer = o.replica_outer;
    in.mbs = o.mbs;
    in.ga = o.ga;
    in.dtype = o.dtype;
    in.act_model = ActModel::engine;
    in.bucket_mb = o.bucket_mb;  // 0: naive DDP, one all_reduce per tensor
    in.overlap = overlap_runs(o);  // as the run goes: nccl runs started calls at once (options.h)
    in.prefetch = o.prefetch;
    return in;
}

std::string memory_warning(const TrainOptions& opts, int ranks_here, double ram_bytes) {
    if (device_or_default(opts.device) == Device::cuda) return "";
    double need = 0;
    try {
        need = double(plan(plan_input_for(opts, kNoCalibration)).memory.total) * ranks_here;
    } catch (const Error&) {
        return "";  // a layout the planner does not model: no prediction to compare
    }
    if (need <= ram_bytes) return "";
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "warning: the planner predicts %.2f GB at the peak for the %d rank(s) of this process, more than "
                  "the %.2f GB of RAM this machine has free: the kernel will likely kill the run without a message. Fewer "
                  "ranks a process (--backend mpi), ZeRO-3 over more ranks, --dtype bf16 or a smaller model need "
                  "less; "
                  "`shardscope plan --hw cpu-local` with the same flags shows the parts (a prediction)\n",
                  need / 1e9, ranks_here, ram_bytes / 1e9);
    return buf;
}

double available_ram_bytes() {
    std::ifstream meminfo("/proc/meminfo");
    std::string key;
    double kib = 0;
    while (meminfo >> key >> kib) {
        if (key == "MemAvailable:") return kib * 1024.0;
        meminfo.ignore(1 << 10, '\n');  // the unit, "kB"
    }
    return double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));  // no /proc: all of it
}

}  // namespace ss
