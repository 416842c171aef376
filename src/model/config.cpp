#include "model/config.h"

#include "core/check.h"

namespace ss {

namespace {
struct Preset {
    const char* name;
    int L, C, H, V, maxT;
};
// tiny and small are for learning on a laptop CPU (byte-level vocabulary).
// The others are OpenAI's GPT-2 sizes (Radford et al. 2019, table 2), with the
// 50257-token BPE vocabulary and a 1024-token context.
constexpr Preset kPresets[] = {
    {"tiny", 2, 64, 4, 256, 64},
    {"small", 4, 128, 4, 256, 128},
    {"gpt2", 12, 768, 12, 50257, 1024},
    {"gpt2-medium", 24, 1024, 16, 50257, 1024},
    {"gpt2-large", 36, 1280, 20, 50257, 1024},
    {"gpt2-xl", 48, 1600, 25, 50257, 1024},
};
}  // namespace

std::vector<std::string> model_preset_names() {
    std::vector<std::string> names;
    for (const Preset& p : kPresets) names.push_back(p.name);
    return names;
}

GPT2Config model_preset(const std::string& name) {
    for (const Preset& p : kPresets)
        if (name == p.name) return GPT2Config{p.name, p.L, p.C, p.H, p.V, p.maxT};
    std::string known;
    for (const std::string& n : model_preset_names()) known += (known.empty() ? "" : ", ") + n;
    SS_FAIL("unknown model '" << name << "'; choose one of: " << known
                              << " (or override its shape with --layers --dim --heads --vocab --max-seq)");
}

void validate(const GPT2Config& cfg) {
    SS_CHECK(cfg.L >= 1, "the model needs at least one layer (--layers " << cfg.L << ")");
    SS_CHECK(cfg.C >= 1 && cfg.H >= 1 && cfg.V >= 1 && cfg.maxT >= 1,
             "model sizes must be positive: C=" << cfg.C << " H=" << cfg.H << " V=" << cfg.V << " maxT=" << cfg.maxT);
    SS_CHECK(cfg.vocab_divisible_by >= 1, "--vocab-divisible-by " << cfg.vocab_divisible_by
                                           << " must be at least 1 (1 pads the vocabulary least, 128 is Megatron-LM's default)");
    if (cfg.C % cfg.H != 0) {
        std::string ok;
        for (int h = 1; h <= cfg.C; ++h)
            if (cfg.C % h == 0 && h <= 64) ok += (ok.empty() ? "" : ", ") + std::to_string(h);
        SS_FAIL("C=" << cfg.C << " is not divisible by H=" << cfg.H << "; choose --heads from {" << ok
                     << "} or a --dim that is a multiple of " << cfg.H);
    }
}

int padded_vocab(int V, int tp, int divisible_by) {
    SS_CHECK(divisible_by >= 1, "--vocab-divisible-by " << divisible_by
                                << " must be at least 1 (1 pads the vocabulary least, 128 is Megatron-LM's default)");
    SS_CHECK(V >= 1 && tp >= 1, "padded_vocab needs V >= 1 and TP >= 1, not V=" << V << " TP=" << tp);
    const int64_t multiple = int64_t(divisible_by) * tp;
    const int64_t Vp = (V + multiple - 1) / multiple * multiple;
    SS_CHECK(Vp <= (int64_t(1) << 30), "V=" << V << " padded to a multiple of " << divisible_by << " x TP " << tp
                                            << " is " << Vp << " rows; choose a smaller --vocab-divisible-by");
    return int(Vp);
}

int64_t num_params(const GPT2Config& c) {
    const int64_t C = c.C;
    return int64_t(c.V) * C + int64_t(c.maxT) * C + int64_t(c.L) * (12 * C * C + 13 * C) + 2 * C;
}

}  // namespace ss
