#include "model/checkpoint.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "core/check.h"
#include "model/finite.h"

namespace ss {

// The seam between memory and files: a whole tensor in memory may hold padding
// rows after its HF rows (wte: Vp >= V, model/config.h padded_vocab); a file
// holds the HF rows only, the first numel(global_shape) elements.
StFile flat_to_safetensors(const ParamLayout& layout, const float* flat, DType dt, const std::string& prefix) {
    StFile f;
    for (const ParamSpec& s : layout.specs) {
        SS_CHECK(s.tp == 1, "flat_to_safetensors writes whole HF tensors; " << s.name << " is a TP " << s.tp
                                                                            << " slice (gather it first)");
        const int64_t n = numel(s.global_shape);  // without the padding rows
        std::vector<float> v(flat + s.offset, flat + s.offset + n);
        f.put(st_from_f32(prefix + s.name, s.global_shape, v, dt));
    }
    return f;
}

// HF's own name for a tensor: without the "transformer." prefix that
// GPT2LMHeadModel checkpoints add.
static std::string hf_base_name(const std::string& name) {
    const std::string pre = "transformer.";
    return name.compare(0, pre.size(), pre) == 0 ? name.substr(pre.size()) : name;
}

// HF stores the causal mask of each attention layer as buffers; they are not
// parameters. lm_head.weight is the tied head, the same values as wte.weight.
static bool is_skipped_buffer(const std::string& base) {
    auto ends_with = [&](const char* suf) {
        size_t n = std::strlen(suf);
        return base.size() >= n && base.compare(base.size() - n, n, suf) == 0;
    };
    return ends_with(".attn.bias") || ends_with(".attn.masked_bias") || base == "lm_head.weight";
}

void safetensors_to_flat(const StFile& f, const ParamLayout& layout, float* flat, const std::string& path) {
    // Check everything before writing a single value.
    std::map<std::string, const StTensor*> by_base;
    for (const auto& [name, t] : f.tensors) {
        std::string base = hf_base_name(name);
        if (is_skipped_buffer(base)) continue;
        const ParamSpec* s = layout.find(base);
        SS_CHECK(s != nullptr, path << ": tensor '" << name
                                    << "' is not a parameter of this model; check that --model/--layers match "
                                       "the checkpoint (this model has "
                                    << layout.specs.size() << " tensors, h.0 .. h."
                                    << (layout.specs.size() - 4) / kBlockParams - 1 << ")");
        SS_CHECK(t.dtype == DType::f32 || t.dtype == DType::bf16,
                 path << ": tensor '" << name << "' is " << dtype_name(t.dtype) << "; parameters must be F32 or BF16");
        SS_CHECK(s->tp == 1, "safetensors_to_flat reads whole HF tensors; " << s->name << " is a TP " << s->tp
                                                                           << " slice (read the whole, then slice)");
        SS_CHECK(t.shape == s->global_shape, path << ": tensor '" << name << "' has shape " << shape_str(t.shape)
                                          << " but the model expects " << shape_str(s->global_shape)
                                          << "; check --dim/--heads/--vocab/--max-seq against the checkpoint");
        by_base[base] = &t;
    }
    for (const ParamSpec& s : layout.specs)
        SS_CHECK(by_base.count(s.name), path << ": tensor '" << s.name << "' is missing from the checkpoint");
    // Values too: a nan or inf weight makes every loss and gradient nan from the first step.
    // (One tensor converted at a time, so the check costs no second copy of the model.)
    for (const ParamSpec& s : layout.specs) {
        const std::vector<float> v = st_to_f32(*by_base[s.name]);
        const int64_t i = first_nonfinite(v.data(), int64_t(v.size()));
        SS_CHECK(i < 0, path << ": tensor '" << s.name << "' holds a non-finite value (element " << i << " is "
                             << v[size_t(i < 0 ? 0 : i)] << "); a model must start from finite weights: use "
                             << "another file, or leave --init out to start from the seed");
    }
    for (const ParamSpec& s : layout.specs) {
        std::vector<float> v = st_to_f32(*by_base[s.name]);
        std::memcpy(flat + s.offset, v.data(), sizeof(float) * v.size());
        std::fill(flat + s.offset + int64_t(v.size()), flat + s.offset + s.numel, 0.0f);  // padding rows: zero
    }
}

void load_model(GPT2& model, const std::string& path) {
    std::vector<float> flat = read_params(model.layout(), path);
    if (model.storage() == DType::bf16) {
        f32_to_bf16(model.params().bf16(), flat.data(), flat.size());
        model.load_compute_params();
    } else {
        std::memcpy(model.w(), flat.data(), sizeof(float) * flat.size());
    }
}

void save_params(const GPT2Config& c, const ParamLayout& layout, const float* flat, DType dt,
                 const std::string& path) {
    StFile f = flat_to_safetensors(layout, flat, dt);
    f.metadata = {{"format", "pt"},         {"shardscope.model", c.name},     {"n_layer", std::to_string(c.L)},
                  {"n_embd", std::to_string(c.C)}, {"n_head", std::to_string(c.H)}, {"vocab_size", std::to_string(c.V)},
                  {"n_positions", std::to_string(c.maxT)}};
    write_safetensors(path, f);
}

std::vector<float> read_params(const ParamLayout& layout, const std::string& path) {
    StFile f = read_safetensors(path);
    std::vector<float> flat(size_t(layout.total));
    safetensors_to_flat(f, layout, flat.data(), path);
    return flat;
}

void save_model(const GPT2& model, const std::string& path) {
    save_params(model.config(), model.layout(), model.w(), model.storage(), path);
}

}  // namespace ss
