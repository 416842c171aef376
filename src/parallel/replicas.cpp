// replicas.cpp — the replicas' gradient all-reduce and local SGD's parameter
// average. The picture is in replicas.h.
#include "parallel/replicas.h"

#include "core/check.h"
#include "kernels/dispatch.h"

namespace ss {

Replicas::Replicas(RankState& state, int sync_every) : s_(state), sync_every_(sync_every) {
    // A precondition, not an option check: train/options.cpp refuses a bad --replica-sync-every.
    SS_CHECK(sync_every >= 1, "Replicas: sync_every " << sync_every << " is not a number of steps (1 or more)");
}

void Replicas::all_reduce_grads(Tensor& grad_shard, int step) const {
    if (!sync_grads()) return;
    s_.comm.all_reduce(grad_shard.data(), size_t(grad_shard.numel()), s_.storage, s_.rep, ReduceOp::avg,
                       Label{Payload::grad, -1, Phase::step, -1, step});
}

void Replicas::after_step() {
    if (syncs_now()) average();
}

void Replicas::average() {
    // Local SGD: the replicas stepped on their own batches since the last sync;
    // average what they hold so that they agree again: the fp32 master copy
    // the optimizer updates (bf16 runs) or the fp32 parameters themselves.
    // Adam's moments stay local.
    const int step = s_.steps_done;
    if (s_.storage == DType::f32) {
        s_.comm.all_reduce(s_.params.f32(), size_t(s_.params.numel()), s_.rep, ReduceOp::avg,
                           Label{Payload::param, -1, Phase::step, -1, step});
        return;
    }
    Tensor& master = s_.optim->master();
    s_.comm.all_reduce(master.f32(), size_t(master.numel()), s_.rep, ReduceOp::avg,
                       Label{Payload::optim, -1, Phase::step, -1, step});
    if (s_.holds.optim && !s_.holds.params) {  // ZeRO-1, -2: my chunks of whole params
        Tensor pshard(s_.ledger, Mem::comm, {s_.shard.plan.shard_size}, DType::bf16);
        kern::f32_to_bf16(pshard.bf16(), master.f32(), size_t(master.numel()));
        s_.gather_params(pshard, step);
    } else {  // DDP, ZeRO-3: the master covers exactly what params holds
        kern::f32_to_bf16(s_.params.bf16(), master.f32(), size_t(master.numel()));
        s_.refresh_compute_copy();
    }
}

}  // namespace ss
