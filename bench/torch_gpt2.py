#!/usr/bin/python3
"""The same GPT-2 as ShardScope's, in plain eager PyTorch, for `shardscope bench`.

`shardscope bench` runs this with Debian's python3 (python3-torch, CPU) on the
same machine, in the same run, and reports the ratio of tokens/s. The model
matches ShardScope's exactly: HF GPT-2 names and Conv1D layout ([in, out]),
pre-LayerNorm blocks, GELU (tanh), causal attention, tied LM head, AdamW.

    /usr/bin/python3 bench/torch_gpt2.py --layers 4 --dim 128 --heads 4 --vocab 256 \
        --seq 128 --mbs 8 --steps 20 --warmup 3 --threads 1

prints one JSON line: {"tokens_per_s": ..., "step_ms": [...], "torch": "..."}.
"""
import argparse
import json
import math
import statistics
import time

import torch
import torch.nn.functional as F


class Block(torch.nn.Module):
    def __init__(self, C, H):
        super().__init__()
        self.H = H
        p = lambda *shape: torch.nn.Parameter(torch.randn(*shape) * 0.02)
        z = lambda n: torch.nn.Parameter(torch.zeros(n))
        o = lambda n: torch.nn.Parameter(torch.ones(n))
        self.ln_1_w, self.ln_1_b = o(C), z(C)
        self.c_attn_w, self.c_attn_b = p(C, 3 * C), z(3 * C)
        self.c_proj_w, self.c_proj_b = p(C, C), z(C)
        self.ln_2_w, self.ln_2_b = o(C), z(C)
        self.c_fc_w, self.c_fc_b = p(C, 4 * C), z(4 * C)
        self.mlp_proj_w, self.mlp_proj_b = p(4 * C, C), z(C)

    def forward(self, x):
        B, T, C = x.shape
        hs = C // self.H
        h = F.layer_norm(x, (C,), self.ln_1_w, self.ln_1_b, 1e-5)
        qkv = h @ self.c_attn_w + self.c_attn_b
        q, k, v = qkv.split(C, dim=2)
        q, k, v = (t.view(B, T, self.H, hs).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + y @ self.c_proj_w + self.c_proj_b
        h = F.layer_norm(x, (C,), self.ln_2_w, self.ln_2_b, 1e-5)
        h = F.gelu(h @ self.c_fc_w + self.c_fc_b, approximate="tanh")
        return x + h @ self.mlp_proj_w + self.mlp_proj_b


class GPT2(torch.nn.Module):
    def __init__(self, L, C, H, V, maxT):
        super().__init__()
        self.wte = torch.nn.Parameter(torch.randn(V, C) * 0.02)
        self.wpe = torch.nn.Parameter(torch.randn(maxT, C) * 0.02)
        self.blocks = torch.nn.ModuleList(Block(C, H) for _ in range(L))
        self.ln_f_w = torch.nn.Parameter(torch.ones(C))
        self.ln_f_b = torch.nn.Parameter(torch.zeros(C))

    def forward(self, idx, targets):
        B, T = idx.shape
        x = self.wte[idx] + self.wpe[:T]
        for b in self.blocks:
            x = b(x)
        x = F.layer_norm(x, (x.shape[-1],), self.ln_f_w, self.ln_f_b, 1e-5)
        logits = x @ self.wte.t()
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.reshape(-1))


def main():
    ap = argparse.ArgumentParser()
    for name, default in [("layers", 4), ("dim", 128), ("heads", 4), ("vocab", 256), ("seq", 128),
                          ("mbs", 8), ("steps", 20), ("warmup", 3), ("threads", 1)]:
        ap.add_argument("--" + name, type=int, default=default)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = GPT2(a.layers, a.dim, a.heads, a.vocab, a.seq)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    data = torch.randint(0, a.vocab, (a.mbs, a.seq + 1))
    x, y = data[:, :-1], data[:, 1:]
    times = []
    for step in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = model(x, y)
        loss.backward()
        opt.step()
        dt = time.perf_counter() - t0
        if step >= a.warmup:
            times.append(dt * 1000.0)
    med = statistics.median(times)
    print(json.dumps({"tokens_per_s": a.mbs * a.seq / (med / 1000.0), "step_ms": times,
                      "median_ms": med, "torch": torch.__version__,
                      "blas": torch.__config__.show().count("OpenBLAS") > 0 and "OpenBLAS" or "other"}))


if __name__ == "__main__":
    main()
