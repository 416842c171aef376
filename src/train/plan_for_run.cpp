#include "train/plan_for_run.h"

namespace ss {

PlanInput plan_input_for(const TrainOptions& o, const std::string& calibration) {
    PlanInput in;
    in.model = o.model;
    in.T = o.T;
    in.gpus = o.ranks;
    in.hw = hardware_preset("cpu-local", calibration);
    in.layout.tp = o.tp;
    in.layout.sequence_parallel = o.sequence_parallel;
    in.layout.sp = o.sp;
    in.layout.sp_mode = o.sp_mode;
    in.layout.dp_shard = o.dp_shard;
    in.layout.dp_rep = o.dp_rep;
    in.layout.zero = o.zero;
    in.layout.pp = o.pp;
    in.layout.schedule = o.schedule;
    in.layout.pp_virtual = o.pp_virtual;
    in.layout.recompute = o.recompute;
    in.mbs = o.mbs;
    in.ga = o.ga;
    in.dtype = o.dtype;
    in.act_model = ActModel::engine;
    if (o.bucket_mb > 0) in.bucket_mb = o.bucket_mb;
    return in;
}

}  // namespace ss
