#!/usr/bin/env python3
"""make_seeds.py — writes the seed inputs of tests/fuzz/corpus/ (run from the repository root).

Small valid inputs of every format, and a few near misses, so the fuzzers start
past the first checks. Inputs that once crashed a target are added beside these
by hand (named crash-*), and are never rewritten by this script.
"""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def put(name, fname, data):
    d = os.path.join(HERE, "corpus", name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, fname), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


# ---- safetensors: a one-block model (L=1, C=4, H=1, V=8, maxT=4), as fuzz_safetensors.cpp loads it
def bf16(x):
    return struct.pack("<f", x)[2:]


def safetensors(tensors, dtype="F32", metadata=None):
    header, data = {}, b""
    for name, shape in tensors:
        n = 1
        for d in shape:
            n *= d
        vals = [0.01 * (i % 7) for i in range(n)]
        raw = b"".join(bf16(v) for v in vals) if dtype == "BF16" else struct.pack(f"<{n}f", *vals)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


C, V, T = 4, 8, 4
model = [("wte.weight", [V, C]), ("wpe.weight", [T, C]),
         ("h.0.ln_1.weight", [C]), ("h.0.ln_1.bias", [C]),
         ("h.0.attn.c_attn.weight", [C, 3 * C]), ("h.0.attn.c_attn.bias", [3 * C]),
         ("h.0.attn.c_proj.weight", [C, C]), ("h.0.attn.c_proj.bias", [C]),
         ("h.0.ln_2.weight", [C]), ("h.0.ln_2.bias", [C]),
         ("h.0.mlp.c_fc.weight", [C, 4 * C]), ("h.0.mlp.c_fc.bias", [4 * C]),
         ("h.0.mlp.c_proj.weight", [4 * C, C]), ("h.0.mlp.c_proj.bias", [C]),
         ("ln_f.weight", [C]), ("ln_f.bias", [C])]
put("safetensors", "model-f32.safetensors", safetensors(model, metadata={"format": "pt", "model": "custom"}))
put("safetensors", "model-bf16.safetensors", safetensors(model, "BF16"))
put("safetensors", "one-tensor.safetensors", safetensors([("wte.weight", [2, 3])]))
put("safetensors", "empty-tensor.safetensors", safetensors([("x", [0, 5])]))
i32_header = b'{"steps":{"dtype":"I32","shape":[3],"data_offsets":[0,12]}}'
put("safetensors", "i32.safetensors", struct.pack("<Q", len(i32_header)) + i32_header + struct.pack("<3i", 1, 2, 3))
put("safetensors", "header-only.safetensors", struct.pack("<Q", 2) + b"{}")

# ---- llm.c token files: 256 x int32 header (magic, version, count), then uint16 tokens
def token_file(tokens, magic=20240520, version=1, count=None):
    header = [magic, version, len(tokens) if count is None else count] + [0] * 253
    return struct.pack("<256i", *header) + struct.pack(f"<{len(tokens)}H", *tokens)


put("token_file", "twenty.bin", token_file([(7 * i) % 50 for i in range(20)]))
put("token_file", "wraps.bin", token_file(list(range(40))))
put("token_file", "too-few.bin", token_file([1, 2, 3]))
put("token_file", "big-token.bin", token_file([50256, 50257, 65535] + [0] * 12))
put("token_file", "version-2.bin", token_file([1, 2], version=2))
put("token_file", "count-wrong.bin", token_file([1, 2, 3, 4], count=5))

# ---- traces: what `shardscope train --trace` writes, two ranks, trimmed to a few events;
# without a format_version (as written before it existed) unless one is given
def trace(events, other, version=None):
    lines = [json.dumps(e, separators=(",", ":")) for e in events]
    tail = "" if version is None else ',\n"format":"shardscope-trace","format_version":' + str(version)
    return ('{"displayTimeUnit":"ms","traceEvents":[\n' + ",\n".join(lines) + "\n],\n\"otherData\":"
            + json.dumps(other, separators=(",", ":")) + tail + "}\n")


def coll(rank, name, ts, payload, phase, step, nbytes=4096, group=(0, 1), axis="dp"):
    return {"args": {"axis": axis, "bytes": nbytes, "count": nbytes // 4, "dtype": "fp32", "group": list(group),
                     "layer": 0, "microbatch": 0, "payload": payload, "phase": phase, "step": step},
            "cat": "comm", "dur": 12.5, "name": name, "ph": "X", "pid": rank, "tid": 1, "ts": ts}


events = []
for r in (0, 1):
    events += [
        {"name": "process_name", "ph": "M", "pid": r, "args": {"name": f"rank {r}"}},
        {"name": "thread_name", "ph": "M", "pid": r, "tid": 0, "args": {"name": "compute"}},
        {"args": {"acts": 0, "comm": 0, "grads": 1024, "optim": 2048, "params": 1024, "workspace": 0},
         "cat": "memory", "name": "memory", "ph": "C", "pid": r, "tid": 0, "ts": 1.0},
        {"args": {"layer": 0}, "cat": "compute", "dur": 50.0, "name": "forward", "ph": "X", "pid": r, "tid": 0,
         "ts": 2.0},
        coll(r, "all_gather", 60.0, "param", "fwd", 1),
        coll(r, "reduce_scatter", 120.0, "grad", "bwd", 1),
        coll(r, "all_reduce", 200.0, "scalar", "step", 1, nbytes=4),
    ]
other = {"config": {"C": 4, "H": 1, "L": 1, "T": 4, "V": 8, "dtype": "fp32", "ga": 1, "mbs": 1, "model": "custom",
                    "steps": 1},
         "gbs": {"dp": 2, "formula": "GBS = MBS x GA x DP", "ga": 1, "gbs": 2, "mbs": 1, "tokens_per_step": 8,
                 "line": "GBS = MBS x GA x DP = 1 x 1 x 2 = 2"},
         "mesh": {"dp_rep": 1, "dp_shard": 2, "pp": 1, "sp": 1, "tp": 1, "world": 2},
         "ranks": {"backend": "threads", "dp": 2, "dp_rep": 1, "dp_shard": 2, "sp": 1, "tp": 1, "world": 2, "zero": 3},
         "steps": [{"loss": 2.07, "ms": 1.5, "step": 1, "tokens_per_s": 5000.0}]}
for name in ("trace", "viz_load"):
    put(name, "zero3-2ranks.json", trace(events, other))
    put(name, "no-other-data.json", trace(events[:7], {}))
    put(name, "memory-only.json", trace([events[2]], {}))
    put(name, "bad-field.json", trace([dict(events[4], args=dict(events[4]["args"], bytes="abc"))], {}))
    put(name, "not-a-trace.json", '{"traceEvents": 3}')
    # The format's version, as written now (kTraceFormatVersion, src/comm/trace/trace.h), and a newer one, refused.
    put(name, "versioned.json", trace(events[:7], {}, version=1))
    put(name, "newer-version.json", trace(events[:7], {}, version=2))
    # Asynchronous calls (issued_us, exposed_us; one exposed past its dur, which readers clamp)
    # on emulated links: the overlap table and the timeline's queued and exposed parts.
    put(name, "async-overlap.json", trace(
        [dict(events[4], args=dict(events[4]["args"], issued_us=20.0, exposed_us=3.5)),
         dict(events[5], args=dict(events[5]["args"], issued_us=130.0, exposed_us=99.0)),
         dict(events[5], ts=125.0, args=dict(events[5]["args"], exposed_us=0.0))],
        {"emulated_links": "emulated links (not measured): 1 GB/s, 6 us on every link"}))

# A pipeline run (--pp 2 --ga 2, 1F1B): forward/backward spans with microbatch and stage, and
# otherData.pipeline, the schedule the viewer's Pipeline panel simulates (viz/model/pipeline.h).
pp_events = []
for r in (0, 1):
    for micro in (0, 1):
        for name, ts in (("forward", 10.0 + 100 * micro + 10 * r), ("backward", 40.0 + 100 * micro + 10 * r)):
            pp_events.append({"args": {"microbatch": micro, "stage": r, "step": 1},
                              "cat": "fwd" if name == "forward" else "bwd", "dur": 20.0, "name": name, "ph": "X",
                              "pid": r, "tid": 0, "ts": ts})
pp_other = {"mesh": {"dp_rep": 1, "dp_shard": 1, "pp": 2, "sp": 1, "tp": 1, "world": 2},
            "pipeline": {"pp": 2, "schedule": "1f1b", "pp_virtual": 1, "split": [1, 1], "micro_batches": 2,
                         "bubble": 0.5, "actions": [
                             [["forward", 0, 0], ["send_act", 0, 0], ["recv_grad", 0, 0], ["backward", 0, 0],
                              ["forward", 1, 0], ["send_act", 1, 0], ["recv_grad", 1, 0], ["backward", 1, 0]],
                             [["recv_act", 0, 0], ["forward", 0, 0], ["backward", 0, 0], ["send_grad", 0, 0],
                              ["recv_act", 1, 0], ["forward", 1, 0], ["backward", 1, 0], ["send_grad", 1, 0]]]}}
put("viz_load", "pp2-pipeline.json", trace(pp_events, pp_other))

# ---- the calibration file (`bench --calibrate` writes it, `plan --hw cpu-local` reads it)
put("hardware", "calibration.json", json.dumps({
    "comm_alpha": 3.15e-06, "comm_busbw": 20297000000.0, "cores": 2, "cores_available": 0.95, "efficiency": 0.73,
    "matmul_flops": 96670439791.0, "memory": 25276514304.0, "memory_bandwidth": 9001631481.0}, indent=2))
put("hardware", "partial.json", '{"matmul_flops": 1e11, "cores": 0}')
put("hardware", "not-a-number.json", '{"memory": "lots"}')

# ---- command lines: one argument per line, as fuzz_cli.cpp splits them
for i, line in enumerate([
        "train\n--model\ntiny\n--steps\n2\n--ranks\n4\n--zero\n3\n--comm-timeout\n2.5",
        "train\n--tp\n2\n--sp\n2\n--sp-mode\nring\n--sequence-parallel\n--dtype\nbf16",
        "plan\n--gpus\n512\n--mbs\n16\n--search",
        "mesh\n--ranks\n8\n--tp\n2",
        "trace\nsummary\nout/t.json\n--rank\n1\n--exact",
        "bench\ncomm\n--help",
        "train\n--steps\nx",
]):
    put("cli", f"line-{i}.txt", line)
