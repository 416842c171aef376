#!/usr/bin/python3
"""PyTorch DDP on 2 CPU processes (gloo), the twin of `shardscope bench dp`'s DDP rows.

The model is torch_gpt2.py's GPT2 (imported, not copied). Each of the WORLD
processes is started by torch.multiprocessing, joins a gloo process group
through a TCP store on 127.0.0.1 (a free port picked here), runs with one
intra-op thread, and trains on its own MBS x T batch: weak scaling, as
`shardscope bench dp` does (GBS = MBS x WORLD).

    /usr/bin/python3 bench/torch_ddp.py --layers 4 --dim 128 --heads 4 --vocab 256 \
        --seq 128 --mbs 8 --steps 20 --warmup 3 --world 2

prints one JSON line (from rank 0):
    {"tokens_per_s": ..., "median_ms": ..., "step_ms": [...], "world": 2, "backend": "gloo", "torch": "..."}
where tokens/s counts every process's tokens: WORLD x MBS x T / median step.
"""
import argparse
import json
import os
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_gpt2 import GPT2  # noqa: E402  (the single-process twin's model)


def free_port():
    """A port nobody listens on now (the OS picks it; the small race is fine on one machine)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(rank, a, port):
    torch.set_num_threads(a.threads)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=a.world)
    torch.manual_seed(0)  # same initial weights on every rank (DDP also broadcasts rank 0's)
    model = DDP(GPT2(a.layers, a.dim, a.heads, a.vocab, a.seq))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    g = torch.Generator().manual_seed(1000 + rank)  # each rank its own batch
    data = torch.randint(0, a.vocab, (a.mbs, a.seq + 1), generator=g)
    x, y = data[:, :-1], data[:, 1:]
    times = []
    for step in range(a.warmup + a.steps):
        dist.barrier()  # every rank starts the step together, as shardscope's ranks do
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = model(x, y)
        loss.backward()  # DDP all-reduces the gradient buckets here
        opt.step()
        loss = loss.detach()
        dist.all_reduce(loss)  # the step's mean loss, like shardscope's (and a step end all ranks share)
        dt = time.perf_counter() - t0
        if step >= a.warmup:
            times.append(dt * 1000.0)
    if rank == 0:
        med = statistics.median(times)
        print(json.dumps({"tokens_per_s": a.world * a.mbs * a.seq / (med / 1000.0), "median_ms": med,
                          "step_ms": times, "world": a.world, "backend": "gloo", "torch": torch.__version__}),
              flush=True)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    for name, default in [("layers", 4), ("dim", 128), ("heads", 4), ("vocab", 256), ("seq", 128),
                          ("mbs", 8), ("steps", 20), ("warmup", 3), ("threads", 1), ("world", 2)]:
        ap.add_argument("--" + name, type=int, default=default)
    a = ap.parse_args()
    mp.spawn(worker, args=(a, free_port()), nprocs=a.world, join=True)


if __name__ == "__main__":
    main()
