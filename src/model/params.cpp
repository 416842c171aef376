#include "model/params.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "core/rng.h"

namespace ss {

const ParamSpec* ParamLayout::find(const std::string& name) const {
    auto it = index.find(name);
    return it == index.end() ? nullptr : &specs[it->second];
}

const ParamSpec& ParamLayout::get(const std::string& name) const {
    const ParamSpec* s = find(name);
    SS_CHECK(s != nullptr, "the model has no parameter called '" << name << "'");
    return *s;
}

int64_t ParamSpec::global_index(int64_t local) const {
    // Rows are contiguous, and padding rows (wte's, Vp > V) are the whole
    // tensor's last rows: an index past the HF tensor's end is padding.
    if (tp == 1 || split == Split::none) return local < ss::numel(global_shape) ? local : -1;
    if (split == Split::rows) {
        const int64_t g = int64_t(tp_rank) * numel + local;
        return g < ss::numel(global_shape) ? g : -1;
    }
    // Columns: local [in, out/t] (a weight) or [out/t] (a bias).
    const int64_t out_l = shape.back(), out = global_shape.back();
    const int64_t row = local / out_l, col = local % out_l;
    int64_t gcol;
    if (split == Split::cols) {
        gcol = int64_t(tp_rank) * out_l + col;
    } else {  // qkv_cols: three parts (q, k, v) of C columns, each cut in t
        const int64_t part_l = out_l / 3, part = out / 3;
        gcol = (col / part_l) * part + int64_t(tp_rank) * part_l + col % part_l;
    }
    return row * out + gcol;
}

int64_t ParamSpec::unpadded_numel() const {
    if (tp == 1 || split == Split::none) return std::min(numel, ss::numel(global_shape));
    if (split != Split::rows) return numel;  // column cuts are never padded
    const int64_t before = int64_t(tp_rank) * numel;  // elements of the ranks before me
    return std::clamp(ss::numel(global_shape) - before, int64_t(0), numel);
}

ParamLayout make_param_layout(const GPT2Config& cfg, int tp, int tp_rank, const ModelPart& part_in) {
    SS_CHECK(tp >= 1 && 0 <= tp_rank && tp_rank < tp, "bad tensor-parallel rank " << tp_rank << " of " << tp);
    if (tp > 1) {
        SS_CHECK(cfg.H % tp == 0, "TP=" << tp << " does not divide n_head H=" << cfg.H
                                        << ": tensor parallelism gives each rank whole heads; choose TP from the "
                                           "divisors of "
                                        << cfg.H);
    }
    ModelPart part = part_in;
    if (part.count < 0) part.count = cfg.L - part.first;
    SS_CHECK(part.first >= 0 && part.count >= 0 && part.first + part.count <= cfg.L,
             "blocks [" << part.first << ", " << part.first + part.count << ") are not inside the model's L="
                        << cfg.L << " blocks");
    ParamLayout lay;
    lay.part = part;
    const int64_t C = cfg.C;
    // @p shape is the whole tensor in memory; @p hf_shape, where it differs, the file's (wte: V of Vp rows).
    auto add = [&](std::string name, Shape shape, int layer, Init init, bool decay, Split split = Split::none,
                   Shape hf_shape = {}) {
        ParamSpec s;
        s.name = std::move(name);
        s.global_shape = hf_shape.empty() ? shape : hf_shape;
        s.split = tp > 1 ? split : Split::none;
        s.tp = tp;
        s.tp_rank = tp_rank;
        if (s.split == Split::rows) shape[0] /= tp;
        if (s.split == Split::cols || s.split == Split::qkv_cols) shape.back() /= tp;
        s.shape = std::move(shape);
        s.numel = numel(s.shape);
        s.offset = lay.total;
        s.layer = layer;
        s.init = init;
        s.decay = decay;
        lay.total += s.numel;
        lay.index[s.name] = lay.specs.size();
        lay.specs.push_back(std::move(s));
    };
    const int Vp = padded_vocab(cfg.V, tp, cfg.vocab_divisible_by);  // a multiple of tp: whole rows each
    if (part.embedding || part.head) add("wte.weight", {Vp, C}, -1, Init::normal, true, Split::rows, {cfg.V, C});
    if (part.embedding) add("wpe.weight", {cfg.maxT, C}, -1, Init::normal, true);
    lay.block_base = lay.specs.size();
    for (int l = part.first; l < part.first + part.count; ++l) {
        std::string p = "h." + std::to_string(l) + ".";
        // Order matches enum BlockParam.
        add(p + "ln_1.weight", {C}, l, Init::ones, false);
        add(p + "ln_1.bias", {C}, l, Init::zeros, false);
        add(p + "attn.c_attn.weight", {C, 3 * C}, l, Init::normal, true, Split::qkv_cols);
        add(p + "attn.c_attn.bias", {3 * C}, l, Init::zeros, false, Split::qkv_cols);
        add(p + "attn.c_proj.weight", {C, C}, l, Init::normal_resproj, true, Split::rows);
        add(p + "attn.c_proj.bias", {C}, l, Init::zeros, false);
        add(p + "ln_2.weight", {C}, l, Init::ones, false);
        add(p + "ln_2.bias", {C}, l, Init::zeros, false);
        add(p + "mlp.c_fc.weight", {C, 4 * C}, l, Init::normal, true, Split::cols);
        add(p + "mlp.c_fc.bias", {4 * C}, l, Init::zeros, false, Split::cols);
        add(p + "mlp.c_proj.weight", {4 * C, C}, l, Init::normal_resproj, true, Split::rows);
        add(p + "mlp.c_proj.bias", {C}, l, Init::zeros, false);
    }
    if (part.head) {
        add("ln_f.weight", {C}, -1, Init::ones, false);
        add("ln_f.bias", {C}, -1, Init::zeros, false);
    }
    return lay;
}

void slice_for_rank(const ParamLayout& local, const ParamLayout& global, const float* global_flat, float* local_flat) {
    for (const ParamSpec& s : local.specs) {
        const float* g = global_flat + global.get(s.name).offset;
        for (int64_t i = 0; i < s.numel; ++i) {
            const int64_t gi = s.global_index(i);
            local_flat[s.offset + i] = gi < 0 ? 0.0f : g[gi];  // padding is zero, whatever the whole's Vp
        }
    }
}

void place_from_rank(const ParamLayout& local, const ParamLayout& global, const float* local_flat, float* global_flat) {
    for (const ParamSpec& s : local.specs) {
        float* g = global_flat + global.get(s.name).offset;
        for (int64_t i = 0; i < s.numel; ++i) {
            const int64_t gi = s.global_index(i);
            if (gi >= 0) g[gi] = local_flat[s.offset + i];
        }
    }
}

void init_params(const ParamLayout& layout, const GPT2Config& cfg, uint64_t seed, int64_t begin, int64_t end,
                 float* out) {
    SS_CHECK(0 <= begin && begin <= end && end <= layout.total,
             "init range [" << begin << ", " << end << ") is outside the " << layout.total << " parameters");
    const float std_normal = 0.02f;
    const float std_resproj = 0.02f / std::sqrt(2.0f * cfg.L);
    for (const ParamSpec& s : layout.specs) {
        int64_t lo = std::max(begin, s.offset), hi = std::min(end, s.offset + s.numel);
        if (lo >= hi) continue;
        uint64_t stream = hash_name(s.name);
        for (int64_t g = lo; g < hi; ++g) {
            int64_t i = s.global_index(g - s.offset);  // index within the whole HF tensor
            float v = 0.0f;
            if (i < 0) {  // a padding row of wte: zero, never predicted
                out[g - begin] = v;
                continue;
            }
            switch (s.init) {
                case Init::normal: v = std_normal * counter_normal(seed, stream, i); break;
                case Init::normal_resproj: v = std_resproj * counter_normal(seed, stream, i); break;
                case Init::zeros: v = 0.0f; break;
                case Init::ones: v = 1.0f; break;
            }
            out[g - begin] = v;
        }
    }
}

}  // namespace ss
