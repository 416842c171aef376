#include "plan/memory.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>

#include "core/check.h"
#include "parallel/pipeline.h"
#include "plan/zeropp.h"
#include "schedule/pipeline_schedule.h"

namespace ss {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

int64_t ModelSlice::shard(int n) const {
    int64_t s = 0;
    for (int64_t u : units) s += ceil_div(u, n);
    return s;
}

int64_t ModelSlice::largest_unit() const {
    int64_t m = 0;
    for (int64_t u : units) m = std::max(m, u);
    return m;
}

ModelSlice model_slice(const GPT2Config& cfg, int tp, int pp, int stage) {
    return model_slice(cfg, tp, pp, stage, cfg.L / pp, stage * (cfg.L / pp));
}

std::vector<int> stage_layers(const PlanInput& in, int pp) {
    const PlanLayout& l = in.layout;
    if (l.schedule == Schedule::interleaved || pp <= 1) return std::vector<int>(size_t(std::max(pp, 1)), in.model.L / std::max(pp, 1));
    return pipeline_split(in.model.L, pp, l.pp_split);
}

ModelSlice stage_slice(const PlanInput& in, int tp, int pp, int stage) {
    const std::vector<int> split = stage_layers(in, pp);
    int first = 0;
    for (int r = 0; r < stage; ++r) first += split[size_t(r)];
    return model_slice(in.model, tp, pp, stage, split[size_t(stage)], first);
}

std::vector<int> stages_to_plan(const PlanInput& in, int pp) {
    const std::vector<int> split = stage_layers(in, pp);
    if (std::all_of(split.begin(), split.end(), [&](int n) { return n == split.front(); }))
        return pp > 1 ? std::vector<int>{0, pp - 1} : std::vector<int>{0};
    std::vector<int> all(static_cast<size_t>(pp));
    for (int r = 0; r < pp; ++r) all[size_t(r)] = r;
    return all;
}

ModelSlice model_slice(const GPT2Config& cfg, int tp, int pp, int stage, int layers, int first_layer) {
    const int64_t C = cfg.C, t = tp;
    ModelSlice s;
    s.stage = stage;
    s.layers = layers;
    s.first_layer = first_layer;
    s.has_embedding = stage == 0;
    s.has_head = stage == pp - 1;
    // Vocabulary-parallel rows of the padded vocabulary (model/config.h, padded_vocab): Vp/t each.
    const int64_t wte = int64_t(padded_vocab(cfg.V, tp, cfg.vocab_divisible_by)) / t * C;
    // Per block (model/params.h, Split): LayerNorms and row-parallel biases
    // whole (6C), everything else cut t ways: (12 C^2 + 7 C) / t.
    const int64_t block = (12 * C * C + 7 * C) / t + 6 * C;
    // One rank's whole model: unit 0 = wte + wpe. A pipeline stage: wte a unit of its
    // own, so the first and the last stage shard it alike (model/gpt2.h, Unit).
    if (s.has_embedding && pp == 1) s.units.push_back(wte + int64_t(cfg.maxT) * C);
    if (s.has_embedding && pp > 1) {
        s.units.push_back(wte);
        s.units.push_back(int64_t(cfg.maxT) * C);
    }
    for (int l = 0; l < s.layers; ++l) s.units.push_back(block);
    if (s.has_head) {
        s.units.push_back(2 * C);                // ln_f
        if (pp > 1) s.units.push_back(wte);      // the tied head's own copy of wte (Megatron)
    }
    for (int64_t u : s.units) s.elems += u;
    return s;
}

ModelStates model_states(const ModelSlice& slice, int zero, int n, DType dtype, bool grads_fp32) {
    const int64_t es = int64_t(dtype_size(dtype)), ge = grad_element_bytes(dtype, grads_fp32);
    const int64_t K = dtype == DType::bf16 ? 12 : 8;  // fp32 master + m + v; or m + v (params are the master)
    const int64_t P = slice.elems, S = slice.shard(zero >= 1 ? n : 1);
    ModelStates m;
    m.params = es * (zero >= 3 ? S : P);
    m.grads = ge * (zero >= 2 ? S : P);
    m.optim = K * (zero >= 1 ? S : P);
    return m;
}

double zero_paper_bytes(double psi, int stage, int n, double K) {
    switch (stage) {
        case 0: return (2 + 2 + K) * psi;
        case 1: return 2 * psi + 2 * psi + K * psi / n;
        case 2: return 2 * psi + (2 + K) * psi / n;
        case 3: return (2 + 2 + K) * psi / n;
    }
    SS_FAIL("--zero " << stage << " does not exist; choose 0 (DDP), 1, 2 or 3");
}

double korthikanti_layer_bytes(double s, double b, double h, double a, int t, bool sequence_parallel,
                               Recompute recompute) {
    const double sbh = s * b * h;
    if (recompute == Recompute::full) return 2 * sbh / (sequence_parallel ? t : 1);  // the layer's input only
    // 10 sbh stay whole under TP without SP: the two LayerNorm inputs (4), the
    // inputs of c_attn and mlp.c_fc (4) and the two dropout masks (2). The
    // other 24 are cut t ways; SP cuts the 10 as well.
    const double linear = sbh * (sequence_parallel ? 34.0 / t : 10.0 + 24.0 / t);
    // Softmax output (2), its dropout mask (1) and dropout output (2) per score: 5 a s^2 b / t.
    const double quadratic = recompute == Recompute::selective ? 0.0 : 5.0 * a * s * s * b / t;
    return linear + quadratic;
}

namespace {

// The engine (model/gpt2.h BlockActs), fp32, per token of a rank:
//   ln1, x_mid, ln2, x_out: 4C (whole on every TP rank), 4 LayerNorm statistics,
//   qkv 3C/t, atty C/t, fch 4C/t, fch_gelu 4C/t: 12C/t,  att: (H/t) x T.
// Under Megatron-SP x_mid, x_out and the statistics are on T/t tokens, but the
// engine keeps the GATHERED ln1 and ln2 outputs (2C) instead of gathering them
// again in backward (parallel/tensor_parallel.h), which Megatron does.
// Ring attention (parallel/ring_attention.h) never stores the scores: it keeps the
// log-sum-exp of each query and head (a/t per token) and recomputes blocks in backward;
// so does selective recompute on one SP rank (blockwise attention, model/attention.h).
double engine_layer_bytes(double s, double b, double h, double a, int t, bool sequence_parallel,
                          Recompute recompute, bool blockwise) {
    const double whole = sequence_parallel ? 2 * h + (2 * h + 4) / t : 4 * h + 4;
    if (recompute == Recompute::full) return 4 * s * b * h / (sequence_parallel ? t : 1);
    const double quad = blockwise ? a / t : recompute == Recompute::selective ? 0.0 : a * s / t;
    return 4 * s * b * (whole + 12 * h / t + quad);
}

// Micro-batches (or, interleaved, model chunks) stage i keeps before its first backward.
double chunks_in_flight(const PlanLayout& l, int ga, int stage) {
    const int p = l.pp, v = l.pp_virtual;
    switch (l.schedule) {
        case Schedule::gpipe: return ga;  // all forwards first
        case Schedule::one_f_one_b: return std::min(p - stage, ga);
        case Schedule::interleaved:  // Megatron's warm-up: 2(p - i - 1) + (v - 1) p chunks, plus the one in flight
            return std::min(2 * (p - stage - 1) + (v - 1) * p + 1, ga * v);
    }
    return 1;
}

}  // namespace

bool ring_attention(const PlanInput& in, const MeshShape& mesh) {
    return mesh.sp > 1 && in.layout.sp_mode == SpMode::ring;
}

bool flash_recomputes_scores(const PlanInput& in, const MeshShape& mesh) {
    return in.flash_attention && !ring_attention(in, mesh);
}

ActivationBytes activation_bytes(const PlanInput& in, const MeshShape& mesh, int ga, int stage) {
    const PlanLayout& l = in.layout;
    const int t = mesh.tp, c = mesh.sp, p = mesh.pp;
    const double s = in.seq(), b = in.mbs, h = in.model.C, a = in.model.H;
    const double Vl = padded_vocab(in.model.V, t, in.model.vocab_divisible_by) / t;  // logits per rank: Vp/t
    const bool seqpar = l.sequence_parallel && t > 1;
    const bool engine = in.act_model == ActModel::engine;
    ActivationBytes r;
    // Ring attention is blockwise (online softmax): the scores are never stored, as with
    // selective recompute, only an fp32 log-sum-exp per query and head. The engine's
    // selective recompute on one SP rank is blockwise too (model/attention.h, FlashAttention).
    // FlashAttention (PlanInput::flash_attention) keeps the same: no scores, a log-sum-exp.
    const bool ring = ring_attention(in, mesh);
    const bool blockwise = ring || (engine && c == 1 && l.recompute == Recompute::selective);
    const bool no_scores = ring || (!engine && in.flash_attention);
    const Recompute paper_r = no_scores && l.recompute == Recompute::none ? Recompute::selective : l.recompute;
    const double lse = no_scores && l.recompute != Recompute::full ? 4 * s * b * a / t : 0;
    r.per_layer = (engine ? engine_layer_bytes(s, b, h, a, t, seqpar, l.recompute, blockwise)
                          : korthikanti_layer_bytes(s, b, h, a, t, seqpar, paper_r) + lse) /
                  c;
    const double chunks = chunks_in_flight(l, ga, stage);
    const int v = l.schedule == Schedule::interleaved ? l.pp_virtual : 1;
    r.layer_sets = chunks * stage_layers(in, p)[size_t(stage)] / v;
    const double mbs_in_flight = l.schedule == Schedule::gpipe ? ga : std::min(p - stage, ga);
    // The engine saves each chunk's input with the chunk's activations: interleaved, one
    // per chunk-micro-batch in flight (its first block's input), not one per micro-batch.
    const double inputs_in_flight = l.schedule == Schedule::interleaved ? chunks : mbs_in_flight;
    const double tok = s * b / c;  // tokens of one micro-batch on this rank
    const double hs = seqpar ? t : 1;
    // paper: the embedding's dropout mask (1 byte); engine: x before the stage's first
    // block (fp32; a later pipeline stage keeps the input it received).
    if (engine)
        r.embedding = inputs_in_flight * 4 * tok * h / hs;
    else if (stage == 0)
        r.embedding = mbs_in_flight * tok * h / hs;
    if (stage == p - 1) {
        const double head_mbs = l.schedule == Schedule::gpipe ? ga : 1;
        // paper (sec. 4.3): ln_f and projection inputs 4sbh/t, fp32 logits 4sbv/t;
        // engine: lnf (C) + 2 statistics + probs (Vp/t) + losses (1), fp32.
        r.head = head_mbs * (engine ? 4 * tok * (h + 2 / hs + Vl + 1) : 4 * tok * h / hs + 4 * tok * Vl);
    }
    r.total = r.per_layer * r.layer_sets + r.embedding + r.head;
    // What the engine's recompute makes again lives one layer at a time: selective,
    // one layer's scores (in its forward, and again in its backward); full, one layer's
    // whole activations, rebuilt for its backward.
    // (Selective: on the last stage the head's own activations come after the blocks'
    // forwards, so the peak holds the larger of the two.)
    if (engine && l.recompute == Recompute::selective && !blockwise) {
        const double scores = 4 * b * (a / t / c) * s * s;
        const double head_one = stage == p - 1 ? r.head / (l.schedule == Schedule::gpipe ? ga : 1) : 0;
        r.total += std::max(0.0, scores - head_one);
    }
    if (engine && l.recompute == Recompute::full)
        r.total += engine_layer_bytes(s, b, h, a, t, seqpar, Recompute::none, blockwise) / c;
    char buf[160];
    if (engine && l.recompute == Recompute::full)
        std::snprintf(buf, sizeof buf, "4 sbh%s%s (engine, fp32, full recompute)", seqpar ? "/t" : "", c > 1 ? " / sp" : "");
    else if (engine)
        std::snprintf(buf, sizeof buf, "4 sb(%s + 12h/t%s)%s (engine, fp32)", seqpar ? "2h + (2h+4)/t" : "4h+4",
                      blockwise ? " + a/t" : l.recompute == Recompute::none ? " + as/t" : "", c > 1 ? " / sp" : "");
    else if (l.recompute == Recompute::full)
        std::snprintf(buf, sizeof buf, "2sbh%s%s (full recompute)", seqpar ? "/t" : "", c > 1 ? " / sp" : "");
    else
        std::snprintf(buf, sizeof buf, "sbh(%s%s)%s", seqpar ? "34/t" : (t > 1 ? "10 + 24/t" : "34"),
                      no_scores ? " + 4a/(ht) lse" : paper_r == Recompute::selective ? "" : " + 5as/(ht)",
                      c > 1 ? " / sp" : "");
    r.formula = buf;
    return r;
}

int64_t model_parallel_comm_bytes(const PlanInput& in, const MeshShape& mesh) {
    const int t = mesh.tp, c = mesh.sp;
    const int64_t b = in.mbs, tok = b * in.seq() / c, h = in.model.C;  // tok: a micro-batch's tokens on this rank
    const int64_t ab = in.act_model == ActModel::engine ? 4 : 2;       // bytes of an activation
    const bool ring = ring_attention(in, mesh);
    const int64_t held = ring ? 4 * tok * 2 * h / t * ab : 0;  // kv, next, dkv, dnext (parallel/ring_attention.h)
    int64_t passing = 0;                                         // the largest buffer of one call
    if (c > 1 && !ring) passing = std::max(passing, 2 * tok * 3 * h / t * ab);  // Ulysses: qkv's send and receive
    if (t > 1 && in.layout.sequence_parallel) passing = std::max(passing, tok * h * ab);  // the gathered sequence
    if (t > 1) passing = std::max(passing, tok * t * 4);  // each rank's row maxima of the logits, gathered
    return held + passing;
}

int64_t pipeline_comm_bytes_each(const PlanInput& in, const MeshShape& mesh) {
    // A micro-batch's residual stream on this rank, fp32 in the engine (T / sp tokens, and
    // / tp under Megatron-SP), as PipelineRank sends it.
    const bool seqpar = in.layout.sequence_parallel && mesh.tp > 1;
    const int64_t tokens = int64_t(in.seq()) / mesh.sp / (seqpar ? mesh.tp : 1);
    return int64_t(in.mbs) * tokens * in.model.C * 4;
}

int64_t pipeline_comm_bytes(const PlanInput& in, const MeshShape& mesh, int ga, int stage) {
    if (mesh.pp <= 1) return 0;
    const PlanLayout& l = in.layout;
    const PipeSpec spec{l.schedule, mesh.pp, ga, l.schedule == Schedule::interleaved ? l.pp_virtual : 1};
    // A search asks for the same few schedules thousands of times, and making one is O(p m v):
    // each peak is counted once per thread (`plan --search` of gpt2-xl at 512 GPUs: 3.7 s uncached, 0.74 s; 0.53 s without the term).
    thread_local std::map<std::tuple<int, int, int, int, int, bool>, int> peaks;
    const auto key = std::make_tuple(int(spec.kind), spec.p, spec.m, spec.v, stage, in.overlap);
    auto it = peaks.find(key);
    if (it == peaks.end())
        it = peaks.emplace(key, pipe_comm_buffers_peak(make_pipe_schedule(spec), stage, in.overlap)).first;
    return it->second * pipeline_comm_bytes_each(in, mesh);
}

MemoryPlan plan_memory(const PlanInput& in, const MeshShape& mesh, int ga) {
    const int n = mesh.dp_shard * mesh.sp;  // ZeRO shards over dp_shard x sp (the sp ranks hold the same params)
    const int64_t es = int64_t(dtype_size(in.dtype));
    MemoryPlan best;
    // Stage 0 holds the embedding and the most micro-batches; the last stage the
    // head. Middle stages hold no more than stage 0.
    for (int stage : stages_to_plan(in, mesh.pp)) {
        MemoryPlan m;
        m.stage = stage;
        m.slice = stage_slice(in, mesh.tp, mesh.pp, stage);
        m.shard_n = n;
        m.states = model_states(m.slice, in.layout.zero, n, in.dtype, in.grad_reduce_fp32);
        m.acts = activation_bytes(in, mesh, ga, stage);
        if (in.layout.zero >= 3) {
            // The unit in use, the K prefetched (--prefetch, with overlap on: parallel/zero3.cpp),
            // and a whole unit's gradient before its reduce-scatter.
            const int ahead = in.overlap ? in.prefetch : 0;
            m.comm = (2 + ahead) * m.slice.largest_unit() * es;
        } else if (int64_t(mesh.dp_rep) * mesh.dp_shard * mesh.sp > 1) {
            // Two gradient buckets: one filling, one in flight (none without a group to reduce over).
            m.comm = std::min<int64_t>(int64_t(2 * in.bucket_mb * 1048576.0), m.slice.elems * es);
        }
        // ZeRO++'s wires (parallel/zeropp.cpp), for the largest unit: qwZ's gather in flight
        // holds my int8 chunk and everyone's, (N + 1) q(c, 8); qgZ one hop's send and receive
        // at a time. (Their fp32 staging is workspace, which the planner does not count.)
        const int64_t largest = m.slice.largest_unit();
        if (in.layout.qwz)
            m.comm += qwz_gather_bytes(largest, n, in.quant_block) + qwz_gather_bytes(largest, n, in.quant_block) / n;
        if (in.layout.qgz) {
            const QgzHops h = qgz_hops(largest, n, in.layout.qgz_node > 0 ? in.layout.qgz_node : n, in.qgz_bits,
                                       in.quant_block);
            m.comm += 2 * std::max(h.node_bytes, h.cross_bytes);
        }
        m.comm += model_parallel_comm_bytes(in, mesh);
        m.comm += pipeline_comm_bytes(in, mesh, ga, stage);
        // hpZ keeps 1/K of every unit padded to N chunks: N ceil(u / N) / K elements each.
        if (in.layout.hpz > 0) m.hpz = int64_t(n) * m.slice.shard(n) / in.layout.hpz * es;
        // DiLoCo (parallel/replicas.h): theta and m beside the optimizer, over what it updates.
        if (in.layout.replica_outer == ReplicaOuter::nesterov && mesh.dp_rep > 1 && in.layout.replica_sync_every > 1)
            m.outer = 8 * (in.layout.zero >= 1 ? m.slice.shard(n) : m.slice.elems);
        // 2^62 bytes (4.6 EB) per GPU is no answer, and past it the sum below would wrap.
        SS_CHECK(m.acts.total < 4.6e18, "the activations of one GPU come to " << m.acts.total / 1e18
                                                                             << " EB, past what the planner counts; lower --seq or --mbs");
        m.total = m.states.total() + int64_t(std::llround(m.acts.total)) + m.comm + m.hpz + m.outer;
        m.capacity = in.hw.memory;
        if (stage == 0 || m.total > best.total) best = m;
    }
    return best;
}

}  // namespace ss
