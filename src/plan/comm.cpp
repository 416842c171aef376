#include "plan/comm.h"

#include <algorithm>
#include <cmath>

#include "comm/links.h"

#include "comm/trace/trace.h"
#include "plan/memory.h"
#include "plan/zeropp.h"

namespace ss {

int collective_hops(const std::string& op, int n, bool ring) {
    if (n <= 1) return 0;
    if (ring) {
        if (op == "all_reduce") return 2 * (n - 1);
        if (op == "send" || op == "recv") return 1;
        return n - 1;  // all_gather, reduce_scatter, broadcast, all_to_all
    }
    const int log2n = int(std::ceil(std::log2(double(n))));
    if (op == "all_reduce") return 2 * log2n;
    if (op == "all_to_all") return n - 1;
    if (op == "send" || op == "recv") return 1;
    return log2n;  // all_gather, reduce_scatter, broadcast
}

double collective_seconds(const std::string& op, int64_t bytes, int64_t calls, int n, const Link& link) {
    if (calls == 0 || n <= 1) return 0;
    return double(calls) * collective_hops(op, n, link.ring) * link.alpha + double(bytes) * busbw_factor(op, n) / link.busbw;
}

bool axis_in_node(int stride, int n, int gpus_per_node) {
    const long long span = 1LL * stride * n;
    return n <= 1 || (span <= gpus_per_node && gpus_per_node % span == 0);
}

Link group_link(const Hardware& hw, const std::string& op, int stride, int n, int gpus_per_node) {
    if (axis_in_node(stride, n, gpus_per_node)) return hw.intra;
    // Ranks of a group sit stride apart on the grid: gpus_per_node / stride of them in a node.
    const int per_node = stride >= gpus_per_node ? 1 : std::min(n, gpus_per_node / std::max(1, stride));
    Link link = hw.inter;
    link.busbw = across_nodes(op, per_node, hw.intra.busbw, hw.inter.busbw);
    return link;
}

namespace {

// Collects the calls of one rank, dropping those on one-rank groups (they move nothing).
struct Calls {
    const PlanInput& in;
    int gpus_per_node;
    std::vector<CommCall> out;

    // @p calls calls on an axis of @p n ranks spaced @p stride apart, @p bytes in all.
    // @p axis_n: the ranks of the whole axis when the call is point-to-point inside it
    // (a ring or a pipeline is as fast as its slowest hop). @p once: once per step.
    void add(const char* axis, int stride, int n, const char* op, Payload payload, Phase phase, int64_t calls,
             int64_t bytes, Overlap overlap, const char* what, int axis_n = 0, bool once = false, int every = 1) {
        if (n <= 1 || calls <= 0) return;
        CommCall c;
        c.axis = axis;
        c.op = op;
        c.payload = payload;
        c.phase = phase;
        c.group = n;
        c.each_microbatch = !once;
        c.every = every;
        c.intra_node = axis_in_node(stride, axis_n > 0 ? axis_n : n, gpus_per_node);
        c.calls = calls;
        c.bytes = bytes;
        c.overlap = in.overlap ? overlap : Overlap::none;
        c.seconds = collective_seconds(c.op, c.bytes, c.calls, n,
                                       c.intra_node ? in.hw.intra : group_link(in.hw, c.op, stride, n, gpus_per_node));
        c.what = what;
        out.push_back(std::move(c));
    }
};

}  // namespace

std::vector<CommCall> plan_comm(const PlanInput& in, const MeshShape& mesh, const GbsPlan& gbs, int stage) {
    const PlanLayout& l = in.layout;
    const GPT2Config& m = in.model;
    const bool engine = in.act_model == ActModel::engine;
    const int t = mesh.tp, c = mesh.sp, p = mesh.pp, dp = mesh.dp(), ga = gbs.ga;
    const bool seqpar = l.sequence_parallel && t > 1;
    const bool full = l.recompute == Recompute::full;
    const int64_t es = int64_t(dtype_size(in.dtype));          // a parameter element
    const int64_t ge = in.grad_bytes();                         // a gradient element (PlanInput::grad_reduce_fp32)
    const int64_t ae = engine ? 4 : es;                         // an activation element (the engine computes in fp32)
    const int64_t N = int64_t(in.mbs) * in.seq() / c;           // tokens of one micro-batch on this rank
    const int64_t h = m.C, layers = stage_layers(in, p)[size_t(stage)];
    const bool first = stage == 0, last = stage == p - 1;
    Calls k{in, in.gpus_per_node > 0 ? in.gpus_per_node : in.hw.gpus_per_node, {}};
    const Payload act = Payload::act, act_grad = Payload::act_grad;
    const Overlap none = Overlap::none;

    // ---- tensor parallelism: on the critical path of every layer ----
    if (t > 1) {
        const int64_t x = N * h * ae;  // one activation [b, s, h] of this rank's tokens
        const int64_t n2 = 2 * layers * ga;  // two per layer and micro-batch
        const int64_t redo = full ? n2 : 0;  // full recompute runs each forward again in backward
        if (seqpar) {
            // Korthikanti et al. 2022, sec. 4.2.2: g becomes reduce_scatter, f all_gather; the
            // bytes of the two equal those of the all_reduce they replace.
            const int64_t emb = first ? ga : 0, head = last ? ga : 0;
            k.add("tp", 1, t, "all_gather", act, Phase::fwd, n2 + head, (n2 + head) * x, none, "SP: gather the tokens before each TP region");
            k.add("tp", 1, t, "reduce_scatter", act, Phase::fwd, n2 + emb, (n2 + emb) * x, none, "SP: scatter the tokens after each TP region");
            k.add("tp", 1, t, "all_gather", act, Phase::bwd, redo, redo * x, none, "full recompute: the forward again");
            k.add("tp", 1, t, "reduce_scatter", act, Phase::bwd, redo, redo * x, none, "full recompute: the forward again");
            k.add("tp", 1, t, "all_gather", act_grad, Phase::bwd, n2 + emb, (n2 + emb) * x, none, "SP: backward of each reduce_scatter");
            k.add("tp", 1, t, "reduce_scatter", act_grad, Phase::bwd, n2 + head, (n2 + head) * x, none, "SP: backward of each all_gather");
        } else {
            const int64_t fwd = n2 + (first ? ga : 0), bwd = n2 + (last ? ga : 0);
            k.add("tp", 1, t, "all_reduce", act, Phase::fwd, fwd, fwd * x, none, "g: attention and MLP outputs, the vocab-parallel embedding");
            k.add("tp", 1, t, "all_reduce", act, Phase::bwd, redo, redo * x, none, "full recompute: the forward again");
            k.add("tp", 1, t, "all_reduce", act_grad, Phase::bwd, bwd, bwd * x, none, "f: input gradients of c_attn, c_fc and the head");
        }
        if (seqpar) {
            // Each TP rank saw 1/t of the tokens, so the gradients of what it holds whole
            // (LayerNorms, row-parallel biases; the engine's wpe too, added after the
            // scatter) are partial: all-reduced over tp in fp32, per tensor, once per step
            // (the engine: per micro-batch under ZeRO-2/3, with each unit's gradients).
            const int64_t tensors = 6 * layers + (last ? 2 : 0) + (first && engine ? 1 : 0);
            const int64_t elems = 6 * h * layers + (last ? 2 * h : 0) + (first && engine ? int64_t(m.maxT) * h : 0);
            const int64_t rounds = engine && l.zero >= 2 ? ga : 1;
            k.add("tp", 1, t, "all_reduce", Payload::grad, Phase::bwd, rounds * tensors, rounds * elems * 4, none,
                  "SP: sum the LayerNorm and bias gradients of my 1/t of the tokens", 0, rounds == 1);
        }
        if (last && engine) {
            // The engine's vocabulary-parallel loss: the max by an all_gather, two sums (kernels/cpu/vocab_parallel.h).
            k.add("tp", 1, t, "all_gather", act, Phase::fwd, ga, ga * N * t * 4, none, "loss: max logit of each token");
            k.add("tp", 1, t, "all_reduce", act, Phase::fwd, 2 * ga, 2 * ga * N * 4, none, "loss: sum of exp, target logit");
        } else if (last) {
            k.add("tp", 1, t, "all_reduce", act, Phase::fwd, 3 * ga, 3 * ga * N * 4, none, "loss: max, sum of exp, target logit (fp32)");
        }
    }

    // ---- sequence parallelism (the sp axis) ----
    if (c > 1) {
        const int64_t hl = h / t;  // channels of this rank's heads
        const int64_t per_layer = layers * ga;
        if (l.sp_mode == SpMode::ulysses) {
            // q, k, v and the output: 4 N h/t elements per layer each way, in 4 calls
            // (DeepSpeed) or 2 (the engine sends q|k|v as one).
            const int64_t x = 4 * N * hl * ae, calls = (engine ? 2 : 4) * per_layer;
            const int64_t redo = full ? per_layer : 0;
            k.add("sp", t, c, "all_to_all", act, Phase::fwd, calls, per_layer * x, none, "Ulysses: q, k, v to whole sequences; output back");
            k.add("sp", t, c, "all_to_all", act, Phase::bwd, redo ? calls : 0, redo * x, none, "full recompute: the forward again");
            k.add("sp", t, c, "all_to_all", act_grad, Phase::bwd, calls, per_layer * x, none, "Ulysses backward");
        } else {
            // Forward: c - 1 hops of my K, V block. Backward: the blocks go round again, and the
            // other ranks' part of each block's gradient is summed on the way from the rank after
            // its owner, the last one's send landing home: c - 1 hops too (ring_attention.cpp).
            const int64_t kv = 2 * N * hl * ae, hops = per_layer * (c - 1);
            const int64_t again = hops * (full ? 2 : 1);  // (full recompute runs the forward ring again)
            const Overlap att = Overlap::attention;
            k.add("sp", t, 2, "send", act, Phase::fwd, hops, hops * kv, att, "ring: my K, V block to the next rank", c);
            k.add("sp", t, 2, "recv", act, Phase::fwd, hops, hops * kv, att, "ring: a K, V block from the previous rank", c);
            k.add("sp", t, 2, "send", act, Phase::bwd, again, again * kv, att, "ring backward: K, V blocks again", c);
            k.add("sp", t, 2, "recv", act, Phase::bwd, again, again * kv, att, "ring backward: K, V blocks again", c);
            k.add("sp", t, 2, "send", act_grad, Phase::bwd, hops, hops * kv, att, "ring backward: dK, dV blocks", c);
            k.add("sp", t, 2, "recv", act_grad, Phase::bwd, hops, hops * kv, att, "ring backward: dK, dV blocks", c);
        }
    }

    // ---- pipeline: activations forward, their gradients backward ----
    if (p > 1) {
        const int v = l.schedule == Schedule::interleaved ? l.pp_virtual : 1;
        const int64_t x = N * h * ae / (seqpar ? t : 1);  // with SP a stage passes its 1/t of the tokens
        const int stride = dp * c * t;
        const Overlap posted = Overlap::pipeline;  // PipelineRank::set_overlap: receives posted ahead, sends in flight
        // Every model chunk sends to the next stage, except the very last chunk.
        const int64_t sends = int64_t(last ? v - 1 : v) * ga, recvs = int64_t(first ? v - 1 : v) * ga;
        k.add("pp", stride, 2, "send", act, Phase::fwd, sends, sends * x, posted, "activations to the next stage", p);
        k.add("pp", stride, 2, "recv", act, Phase::fwd, recvs, recvs * x, posted, "activations from the previous stage", p);
        k.add("pp", stride, 2, "send", act_grad, Phase::bwd, recvs, recvs * x, posted, "their gradients back", p);
        k.add("pp", stride, 2, "recv", act_grad, Phase::bwd, sends, sends * x, posted, "gradients from the next stage", p);
        // The tied wte lives on both ends (Megatron's embedding group). ZeRO 1-3 sum the
        // fp32 accumulator (stages 2, 3: the rank's shard of it); DDP the synced gradients.
        const int64_t wte = int64_t(padded_vocab(m.V, t, m.vocab_divisible_by)) / t * h, shards = int64_t(mesh.dp_shard) * c;
        const int64_t tied = l.zero >= 2 ? (wte + shards - 1) / shards * 4 : l.zero == 1 ? wte * 4 : wte * ge;
        if (first || last)
            k.add("pp", stride, 2, "all_reduce", Payload::grad, Phase::step, 1, tied, none,
                  "tied embedding: first and last stage sum their wte gradients", p, true);
    }

    // ---- data parallelism and ZeRO (parallel/zero.h) ----
    const ModelSlice slice = stage_slice(in, t, p, stage);
    const int n = mesh.dp_shard * c;  // ZeRO shards over dp_shard x sp (sp ranks hold the same parameters)
    const int64_t S = slice.shard(n), P = slice.elems, units = int64_t(slice.units.size());
    const int64_t shard_bytes = int64_t(n) * S * es;  // a unit-by-unit gather or scatter of the whole slice (padded)
    const int64_t grad_shard_bytes = int64_t(n) * S * ge;  // the same for gradients
    const char* shard_axis = c > 1 ? "dp_shard+sp" : "dp_shard";
    const char* dp_axis = c > 1 ? "dp+sp" : "dp";
    const int64_t bucket = std::max<int64_t>(1, int64_t(in.bucket_mb * 1048576.0));
    // Local SGD (parallel/replicas.h): the replicas step apart, reduce no gradients, and sync every H steps.
    const int H = l.replica_sync_every;
    const bool apart = mesh.dp_rep > 1 && H > 1;
    const Payload grad = Payload::grad, param = Payload::param;
    // ZeRO++ qgZ (zeropp.h): each unit's gradients as quantized all-to-alls, inside my
    // node of K, then across the M nodes; blocking in the engine, so nothing hides them.
    auto qgz = [&](Phase phase) {
        const int K = l.qgz_node > 0 ? l.qgz_node : n, M = n / K;
        int64_t node = 0, cross = 0;
        for (int64_t u : slice.units) {
            const QgzHops h = qgz_hops(u, n, K, in.qgz_bits, in.quant_block);
            node += h.node_bytes;
            cross += h.cross_bytes;
        }
        if (K == n) {
            k.add(shard_axis, t, n, "all_to_all", grad, phase, ga * units, ga * node, Overlap::none,
                  "qgZ: each unit's gradients, quantized, to their owners");
        } else {
            k.add("qgz_node", t, K, "all_to_all", grad, phase, ga * units, ga * node, Overlap::none,
                  "qgZ 1: each unit's gradients, quantized, summed inside my node");
            k.add("qgz_cross", t * K, M, "all_to_all", grad, phase, ga * units, ga * cross, Overlap::none,
                  "qgZ 2: the node's sums, quantized again, across the nodes");
        }
    };
    switch (l.zero) {
        case 0: {  // all_reduce counts its buffer: Psi e in all, whatever the buckets
            // No buckets (the engine's naive DDP): one call per tensor, 12 in a block,
            // wte and wpe, ln_f's two (and the last stage's copy of wte).
            const int64_t tensors = 12 * layers + (first ? 2 : 0) + (last ? (p > 1 ? 3 : 2) : 0);
            const int64_t calls = in.bucket_mb > 0 ? (P * ge + bucket - 1) / bucket : tensors;
            // With the replicas apart DDP averages inside the shard group only (Replicas::ddp_group).
            k.add(apart ? shard_axis : dp_axis, t, apart ? n : dp * c, "all_reduce", grad, Phase::bwd, calls, P * ge,
                  Overlap::bwd,
                  in.bucket_mb > 0 ? "DDP: average the gradients, bucket by bucket"
                                   : "DDP: average the gradients, tensor by tensor", 0, true);
        }
            break;
        case 1:  // the engine reduce-scatters in the step; DeepSpeed and Megatron in backward buckets
            k.add(shard_axis, t, n, "reduce_scatter", grad, engine ? Phase::step : Phase::bwd, units, grad_shard_bytes,
                  Overlap::bwd, "ZeRO-1: each unit's gradients to their owners", 0, true);
            break;
        case 2:
            if (l.qgz)
                qgz(Phase::bwd);
            else
                k.add(shard_axis, t, n, "reduce_scatter", grad, Phase::bwd, ga * units, ga * grad_shard_bytes, Overlap::bwd,
                      "ZeRO-2: each unit's gradients as soon as they are ready");
            break;
        case 3: {
            // qwZ: every gather from the primary partition moves int8 blocks (zeropp.h).
            int64_t q8 = 0;
            for (int64_t u : slice.units) q8 += qwz_gather_bytes(u, n, in.quant_block);
            const int64_t gather_bytes = l.qwz ? q8 : shard_bytes;
            k.add(shard_axis, t, n, "all_gather", param, Phase::fwd, ga * units, ga * gather_bytes, Overlap::fwd,
                  l.qwz ? "qwZ: gather each unit before its forward, int8 blocks" : "ZeRO-3: gather each unit before its forward");
            // A first stage without the head gathers no embedding for backward: the
            // embedding's backward needs no parameters (model/gpt2.cpp, part_backward).
            const bool no_emb = first && !last;
            const int64_t emb_units = no_emb ? 2 : 0;  // wte and wpe are units of their own on a stage
            auto emb = [&](auto bytes_of) { return no_emb ? bytes_of(slice.units[0]) + bytes_of(slice.units[1]) : 0; };
            const int64_t emb_bytes = emb([&](int64_t u) { return int64_t(n) * es * ((u + n - 1) / n); });
            if (l.hpz > 0)  // ZeRO++ hpZ: from the secondary partition, inside a group of K (often a node), full precision
                k.add("hpz", t, l.hpz, "all_gather", param, Phase::bwd, ga * (units - emb_units),
                      ga * (shard_bytes - emb_bytes), Overlap::bwd, "hpZ: gather it again for its backward, inside K");
            else if (l.qwz)
                k.add(shard_axis, t, n, "all_gather", param, Phase::bwd, ga * (units - emb_units),
                      ga * (q8 - emb([&](int64_t u) { return qwz_gather_bytes(u, n, in.quant_block); })), Overlap::bwd,
                      "qwZ: gather it again for its backward, int8 blocks");
            else
                k.add(shard_axis, t, n, "all_gather", param, Phase::bwd, ga * (units - emb_units),
                      ga * (shard_bytes - emb_bytes), Overlap::bwd, "ZeRO-3: gather it again for its backward");
            if (l.qgz)
                qgz(Phase::bwd);
            else
                k.add(shard_axis, t, n, "reduce_scatter", grad, Phase::bwd, ga * units, ga * grad_shard_bytes, Overlap::bwd,
                      "ZeRO-3: each unit's gradients to their owners");
        }
            break;
    }
    if (l.zero >= 1 && mesh.dp_rep > 1 && !apart)
        // Each unit's chunk of my gradient shard, right after its last reduce-scatter, under the
        // last backward, as FSDP's HYBRID_SHARD runs it and the engine with overlap on
        // (ReplicaGrads, parallel/replicas.h); ZeRO-1's, in the engine's step without it.
        k.add("dp_rep", mesh.dp_shard * c * t, mesh.dp_rep, "all_reduce", grad,
              l.zero == 1 && engine ? Phase::step : Phase::bwd, units, S * ge, Overlap::bwd,
              "replicas: average my gradient shard, unit by unit", 0, true);
    if (apart) {
        // Every H steps, after the step: the replicas average what the optimizer updates, in fp32
        // (bf16 runs: the master copy, payload optim; fp32 runs: the parameters), all of it under
        // DDP, my shard under ZeRO; DiLoCo's outer step then runs locally on the mean. ZeRO-1/2
        // gather the averaged shard back into whole parameters. Blocking: nothing hides it.
        const int64_t E = l.zero >= 1 ? S : P;
        k.add("dp_rep", mesh.dp_shard * c * t, mesh.dp_rep, "all_reduce",
              in.dtype == DType::bf16 ? Payload::optim : param, Phase::step, 1, 4 * E, none,
              l.replica_outer == ReplicaOuter::nesterov ? "DiLoCo: average the replicas, then the outer step"
                                                        : "local SGD: average the replicas",
              0, true, H);
        if (l.zero == 1 || l.zero == 2)
            k.add(shard_axis, t, n, "all_gather", param, Phase::step, units, shard_bytes, none,
                  "local SGD: the averaged shards back to everyone", 0, true, H);
    }
    if (l.zero == 1 || l.zero == 2)  // Megatron's --overlap-param-gather: under the next step's forward
        k.add(shard_axis, t, n, "all_gather", param, Phase::step, units, shard_bytes, Overlap::fwd,
              "ZeRO-1/2: the updated parameters back to everyone", 0, true);
    // The step's loss: the last stage has it; with pp > 1 every stage takes it
    // from there (a sum over the pp group) so that rank 0 can print it.
    if (p > 1)
        k.add("pp", dp * c * t, p, "all_reduce", Payload::scalar, Phase::step, 1, 4, none,
              "the step's loss, from the last stage", 0, true);
    k.add(dp_axis, t, dp * c, "all_reduce", Payload::scalar, Phase::step, 1, 4, none, "the step's mean loss", 0,
          true);
    return k.out;
}

}  // namespace ss
