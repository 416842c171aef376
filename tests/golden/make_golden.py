#!/usr/bin/python3
"""make_golden.py -- PyTorch reference values for ShardScope's GPT-2.

An independent, minimal GPT-2 written directly in PyTorch (no Hugging Face, no
ShardScope code) computes one forward and backward pass on random parameters and
random tokens, and saves everything a C++ test needs to check the engine:

    every parameter, under its HF GPT-2 name      F32, HF Conv1D layout [in, out]
    "tokens"                                      I32 [B, T+1]; inputs [:, :T], targets [:, 1:]
    "logits"                                      F32 [B, T, V]
    "loss"                                        F32 [1], mean cross-entropy over B*T positions
    "grad.<parameter name>"                       F32, d loss / d parameter
    __metadata__                                  L, C, H, V, T, maxT, B (strings), seed, source

Cases (see CASES below):
    tiny  L=2, C=64, H=4, T=64, maxT=64, V=256, B=2   the demo's shape
    odd   L=2, C=48, H=3, T=17, maxT=20, V=97,  B=3   odd sizes that no kernel can special-case

Regenerate (needs torch; Debian's python has it, the pyenv python3 first on
PATH may not):

    /usr/bin/python3 tests/golden/make_golden.py          # writes tests/golden/*.safetensors

The tests do NOT need torch or Python: they read the committed .safetensors
files. The files are written by the small writer below (struct + json), in the
layout Hugging Face's safetensors writes: 8-byte little-endian header length,
JSON header padded with spaces to a multiple of 8, larger dtypes first, then by
name, no holes.

Conventions (they are the engine's; each is one line below):
  - pre-LN blocks: x = x + attn(ln_1(x)); x = x + mlp(ln_2(x)); then ln_f
  - Conv1D linear layers: y = x @ W + b with W [in, out]
  - c_attn output is [q | k | v], each C wide; head h uses columns h*hs .. h*hs+hs-1
  - causal attention, scores scaled by 1/sqrt(hs)
  - GELU, tanh approximation
  - LayerNorm eps 1e-5 (biased variance)
  - logits = x @ wte^T (the LM head is tied to the token embedding)

Initialisation: weight matrices N(0, 0.02); biases N(0, 0.02); LayerNorm weights
1 + N(0, 0.1) and biases N(0, 0.1), so that no gradient path is trivially zero or
symmetric. Everything is float32. The same step is repeated in float64 from the
same (exactly upcast) values, and the script fails if any float32 gradient
differs from the float64 one by more than 1e-3 of that tensor's largest
gradient: the reference is then known to be limited by float32 rounding only.
"""
import json
import math
import os
import struct
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))

CASES = {
    "tiny": dict(L=2, C=64, H=4, T=64, maxT=64, V=256, B=2, seed=1337),
    "odd": dict(L=2, C=48, H=3, T=17, maxT=20, V=97, B=3, seed=4242),
}


# ---- parameters -------------------------------------------------------------------

def param_shapes(L, C, V, maxT, **_):
    """HF GPT-2 names and shapes, in the order of the model."""
    shapes = [("wte.weight", (V, C)), ("wpe.weight", (maxT, C))]
    for l in range(L):
        h = f"h.{l}."
        shapes += [
            (h + "ln_1.weight", (C,)), (h + "ln_1.bias", (C,)),
            (h + "attn.c_attn.weight", (C, 3 * C)), (h + "attn.c_attn.bias", (3 * C,)),
            (h + "attn.c_proj.weight", (C, C)), (h + "attn.c_proj.bias", (C,)),
            (h + "ln_2.weight", (C,)), (h + "ln_2.bias", (C,)),
            (h + "mlp.c_fc.weight", (C, 4 * C)), (h + "mlp.c_fc.bias", (4 * C,)),
            (h + "mlp.c_proj.weight", (4 * C, C)), (h + "mlp.c_proj.bias", (C,)),
        ]
    shapes += [("ln_f.weight", (C,)), ("ln_f.bias", (C,))]
    return shapes


def init_params(cfg, gen):
    params = {}
    for name, shape in param_shapes(**cfg):
        noise = torch.randn(shape, generator=gen, dtype=torch.float32)
        is_ln = name.startswith("ln_f") or ".ln_" in name
        if is_ln and name.endswith(".weight"):
            params[name] = 1.0 + 0.1 * noise
        elif is_ln:
            params[name] = 0.1 * noise
        else:
            params[name] = 0.02 * noise
    return params


# ---- the model ----------------------------------------------------------------------

def layernorm(x, w, b):
    # biased variance, eps 1e-5, as torch.nn.LayerNorm and llm.c
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5) * w + b


def gelu_tanh(x):
    # GELU, tanh approximation (Hendrycks & Gimpel 2016, eq. in section 2)
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def attention(x, w, b, H):
    B, T, C = x.shape
    hs = C // H
    qkv = x @ w + b                              # [B, T, 3C] = [q | k | v]
    q, k, v = qkv.split(C, dim=2)                # each [B, T, C]; head h = columns h*hs..
    q = q.view(B, T, H, hs).transpose(1, 2)      # [B, H, T, hs]
    k = k.view(B, T, H, hs).transpose(1, 2)
    v = v.view(B, T, H, hs).transpose(1, 2)
    att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)  # [B, H, T, T]
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    att = att.masked_fill(~causal, float("-inf"))
    att = torch.softmax(att, dim=-1)
    y = att @ v                                  # [B, H, T, hs]
    return y.transpose(1, 2).contiguous().view(B, T, C)


def forward(p, tokens, cfg):
    """Returns (logits [B, T, V], loss) for tokens [B, T+1]."""
    L, H, V = cfg["L"], cfg["H"], cfg["V"]
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    T = inputs.shape[1]
    x = p["wte.weight"][inputs] + p["wpe.weight"][:T]
    for l in range(L):
        h = f"h.{l}."
        a = layernorm(x, p[h + "ln_1.weight"], p[h + "ln_1.bias"])
        a = attention(a, p[h + "attn.c_attn.weight"], p[h + "attn.c_attn.bias"], H)
        x = x + a @ p[h + "attn.c_proj.weight"] + p[h + "attn.c_proj.bias"]
        m = layernorm(x, p[h + "ln_2.weight"], p[h + "ln_2.bias"])
        m = gelu_tanh(m @ p[h + "mlp.c_fc.weight"] + p[h + "mlp.c_fc.bias"])
        x = x + m @ p[h + "mlp.c_proj.weight"] + p[h + "mlp.c_proj.bias"]
    x = layernorm(x, p["ln_f.weight"], p["ln_f.bias"])
    logits = x @ p["wte.weight"].T              # tied LM head
    loss = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))  # mean over B*T
    return logits, loss


def step(params, tokens, cfg, dtype):
    p = {k: v.to(dtype).clone().requires_grad_(True) for k, v in params.items()}
    logits, loss = forward(p, tokens, cfg)
    loss.backward()
    return logits.detach(), loss.detach(), {k: v.grad.detach() for k, v in p.items()}


# ---- a small safetensors writer -------------------------------------------------------

DTYPES = {torch.float32: ("F32", 4, "<f4"), torch.int32: ("I32", 4, "<i4")}


def write_safetensors(path, tensors, metadata):
    """tensors: name -> torch tensor (float32 or int32); metadata: str -> str."""
    entries = []
    for name, t in tensors.items():
        st_dtype, size, np_dtype = DTYPES[t.dtype]
        entries.append((name, st_dtype, size, list(t.shape),
                        t.detach().contiguous().numpy().astype(np_dtype).tobytes()))
    entries.sort(key=lambda e: (-e[2], e[0]))   # larger dtypes first, then by name (as HF)
    header, offset = {}, 0
    for name, st_dtype, _, shape, data in entries:
        header[name] = {"dtype": st_dtype, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - (8 + len(text)) % 8) % 8)  # data starts 8-aligned
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for e in entries:
            f.write(e[4])
    os.replace(tmp, path)


# ---- main -------------------------------------------------------------------------------

def make_case(name, cfg):
    gen = torch.Generator().manual_seed(cfg["seed"])
    params = init_params(cfg, gen)
    tokens = torch.randint(0, cfg["V"], (cfg["B"], cfg["T"] + 1), generator=gen, dtype=torch.int64)

    logits, loss, grads = step(params, tokens, cfg, torch.float32)
    logits64, loss64, grads64 = step(params, tokens, cfg, torch.float64)

    # float32 vs float64: the float32 reference must be limited by rounding only.
    print(f"{name}: loss fp32 {loss.item():.7f}  fp64 {loss64.item():.7f}  (ln V = {math.log(cfg['V']):.4f})")
    worst = 0.0
    for k, g in grads.items():
        scale = grads64[k].abs().max().item()
        assert scale > 0, f"{name}: gradient of {k} is all zero; the case does not exercise it"
        rel = (g.double() - grads64[k]).abs().max().item() / scale
        worst = max(worst, rel)
        assert rel < 1e-3, f"{name}: fp32 gradient of {k} differs from fp64 by {rel:.2e} of its max"
    logit_err = (logits.double() - logits64).abs().max().item()
    print(f"{name}: worst fp32-vs-fp64 gradient error {worst:.2e} of the tensor's max; logits {logit_err:.2e}")

    tensors = dict(params)
    tensors["tokens"] = tokens.to(torch.int32)
    tensors["logits"] = logits
    tensors["loss"] = loss.reshape(1)
    for k, g in grads.items():
        tensors["grad." + k] = g
    metadata = {k: str(cfg[k]) for k in ("L", "C", "H", "V", "T", "maxT", "B", "seed")}
    metadata["source"] = "tests/golden/make_golden.py"
    path = os.path.join(HERE, name + ".safetensors")
    write_safetensors(path, tensors, metadata)
    print(f"{name}: wrote {path} ({os.path.getsize(path)} bytes)")


def main():
    torch.set_num_threads(1)  # the same sums in the same order on every run
    for name, cfg in CASES.items():
        make_case(name, cfg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
