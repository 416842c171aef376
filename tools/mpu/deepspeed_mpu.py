import torch.distributed as dist


class Mpu:
    """The mpu DeepSpeed reads (deepspeed.initialize(..., mpu=Mpu(tp, pp))), for a
    world of pp x dp x tp ranks, tp fastest and pp slowest (ShardScope's order)."""

    def __init__(self, tp, pp):
        world, rank = dist.get_world_size(), dist.get_rank()
        dp = world // (tp * pp)
        self.tp, self.pp, self.dp = tp, pp, dp
        self.p, self.d, self.t = rank // (dp * tp), rank // tp % dp, rank % tp

        def at(p, d, t):
            return (p * dp + d) * tp + t

        def group(lists):  # every rank creates every group, in the same order
            mine = None
            for ranks in lists:
                g = dist.new_group(ranks)
                if rank in ranks:
                    mine = g
            return mine

        P, D, T = range(pp), range(dp), range(tp)
        self.tp_group = group([[at(p, d, t) for t in T] for p in P for d in D])
        self.dp_group = group([[at(p, d, t) for d in D] for p in P for t in T])
        self.pp_group = group([[at(p, d, t) for p in P] for d in D for t in T])
        self.mp_group = group([[at(p, d, t) for p in P for t in T] for d in D])

    def get_tensor_model_parallel_rank(self): return self.t
    def get_tensor_model_parallel_world_size(self): return self.tp
    def get_tensor_model_parallel_group(self): return self.tp_group
    def get_pipeline_model_parallel_rank(self): return self.p
    def get_pipeline_model_parallel_world_size(self): return self.pp
    def get_pipeline_model_parallel_group(self): return self.pp_group
    def get_data_parallel_rank(self): return self.d
    def get_data_parallel_world_size(self): return self.dp
    def get_data_parallel_group(self): return self.dp_group
    def get_model_parallel_rank(self): return self.p * self.tp + self.t   # tp x pp, Megatron's
    def get_model_parallel_world_size(self): return self.tp * self.pp
    def get_model_parallel_group(self): return self.mp_group
