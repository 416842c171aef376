"""Checks tools/mpu/deepspeed_mpu.py against `shardscope mesh`: 8 gloo processes
(tp 2 x pp 2 x dp 2) build the mpu, and every rank's answers are compared with
what `shardscope mesh --ranks 8 --pp 2 --tp 2 --rank R` prints.

    /usr/bin/python3 tools/mpu/check_mpu.py build/shardscope

Needs PyTorch (Debian's python3-torch); not part of the test suite, which does
not need it. Prints one line per rank and exits 1 on any difference."""
import os
import re
import subprocess
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from deepspeed_mpu import Mpu  # noqa: E402

TP, PP, WORLD = 2, 2, 8


def members(group):
    mine = torch.tensor([dist.get_rank()])
    out = [torch.zeros(1, dtype=mine.dtype) for _ in range(dist.get_world_size(group))]
    dist.all_gather(out, mine, group=group)
    return "{" + ",".join(str(r) for r in sorted(int(x) for x in out)) + "}"


def answers(m):
    a = {}
    for kind in ("model", "data", "tensor_model", "pipeline_model"):
        a[f"get_{kind}_parallel_rank()"] = str(getattr(m, f"get_{kind}_parallel_rank")())
        a[f"get_{kind}_parallel_world_size()"] = str(getattr(m, f"get_{kind}_parallel_world_size")())
        a[f"get_{kind}_parallel_group()"] = members(getattr(m, f"get_{kind}_parallel_group")())
    return a


def work(rank, binary, queue):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29533")
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    queue.put((rank, answers(Mpu(tp=TP, pp=PP))))
    dist.barrier()


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "build/shardscope"
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=work, args=(r, binary, queue)) for r in range(WORLD)]
    for p in procs:
        p.start()
    got = dict(queue.get() for _ in range(WORLD))
    for p in procs:
        p.join()
    bad = 0
    for rank in range(WORLD):
        out = subprocess.run([binary, "mesh", "--ranks", str(WORLD), "--pp", str(PP), "--tp", str(TP), "--rank",
                              str(rank)], capture_output=True, text=True, check=True).stdout
        want = dict(re.findall(r"^\s+(get_\w+\(\))\s+= (\S+)$", out, re.M))
        diff = [k for k, v in got[rank].items() if want.get(k) != v]
        print(f"rank {rank}: " + ("same as shardscope mesh" if not diff else "DIFFER in " + ", ".join(diff)))
        bad += bool(diff)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
