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

ParamLayout make_param_layout(const GPT2Config& cfg) {
    ParamLayout lay;
    const int64_t C = cfg.C;
    auto add = [&](std::string name, Shape shape, int layer, Init init, bool decay) {
        ParamSpec s;
        s.name = std::move(name);
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
    add("wte.weight", {cfg.V, C}, -1, Init::normal, true);
    add("wpe.weight", {cfg.maxT, C}, -1, Init::normal, true);
    for (int l = 0; l < cfg.L; ++l) {
        std::string p = "h." + std::to_string(l) + ".";
        // Order matches enum BlockParam.
        add(p + "ln_1.weight", {C}, l, Init::ones, false);
        add(p + "ln_1.bias", {C}, l, Init::zeros, false);
        add(p + "attn.c_attn.weight", {C, 3 * C}, l, Init::normal, true);
        add(p + "attn.c_attn.bias", {3 * C}, l, Init::zeros, false);
        add(p + "attn.c_proj.weight", {C, C}, l, Init::normal_resproj, true);
        add(p + "attn.c_proj.bias", {C}, l, Init::zeros, false);
        add(p + "ln_2.weight", {C}, l, Init::ones, false);
        add(p + "ln_2.bias", {C}, l, Init::zeros, false);
        add(p + "mlp.c_fc.weight", {C, 4 * C}, l, Init::normal, true);
        add(p + "mlp.c_fc.bias", {4 * C}, l, Init::zeros, false);
        add(p + "mlp.c_proj.weight", {4 * C, C}, l, Init::normal_resproj, true);
        add(p + "mlp.c_proj.bias", {C}, l, Init::zeros, false);
    }
    add("ln_f.weight", {C}, -1, Init::ones, false);
    add("ln_f.bias", {C}, -1, Init::zeros, false);
    return lay;
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
            int64_t i = g - s.offset;  // index within the parameter
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
