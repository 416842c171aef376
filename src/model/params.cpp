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
    if (tp == 1 || split == Split::none) return local;
    if (split == Split::rows) return int64_t(tp_rank) * numel + local;  // rows are contiguous
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

ParamLayout make_param_layout(const GPT2Config& cfg, int tp, int tp_rank, const ModelPart& part_in) {
    SS_CHECK(tp >= 1 && 0 <= tp_rank && tp_rank < tp, "bad tensor-parallel rank " << tp_rank << " of " << tp);
    if (tp > 1) {
        SS_CHECK(cfg.H % tp == 0, "TP=" << tp << " does not divide n_head H=" << cfg.H
                                        << ": tensor parallelism gives each rank whole heads; choose TP from the "
                                           "divisors of "
                                        << cfg.H);
        SS_CHECK(cfg.V % tp == 0, "TP=" << tp << " does not divide the vocabulary V=" << cfg.V
                                        << ": the vocabulary-parallel embedding gives each rank V/TP rows; choose a "
                                           "TP that divides V (or a --vocab padded to a multiple of TP)");
    }
    ModelPart part = part_in;
    if (part.count < 0) part.count = cfg.L - part.first;
    SS_CHECK(part.first >= 0 && part.count >= 0 && part.first + part.count <= cfg.L,
             "blocks [" << part.first << ", " << part.first + part.count << ") are not inside the model's L="
                        << cfg.L << " blocks");
    ParamLayout lay;
    lay.part = part;
    const int64_t C = cfg.C;
    auto add = [&](std::string name, Shape shape, int layer, Init init, bool decay, Split split = Split::none) {
        ParamSpec s;
        s.name = std::move(name);
        s.global_shape = shape;
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
    if (part.embedding || part.head) add("wte.weight", {cfg.V, C}, -1, Init::normal, true, Split::rows);
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
        for (int64_t i = 0; i < s.numel; ++i) local_flat[s.offset + i] = g[s.global_index(i)];
    }
}

void place_from_rank(const ParamLayout& local, const ParamLayout& global, const float* local_flat, float* global_flat) {
    for (const ParamSpec& s : local.specs) {
        float* g = global_flat + global.get(s.name).offset;
        for (int64_t i = 0; i < s.numel; ++i) g[s.global_index(i)] = local_flat[s.offset + i];
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
