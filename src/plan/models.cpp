#include "plan/models.h"

#include <sstream>

#include "core/check.h"

namespace ss {

namespace {

struct Shape {
    const char* name;
    int L, C, H;
};

// Brown et al. 2020, table 2.1: n_layers, d_model, n_heads. The table's XL has 24 heads of
// d_head 128, which does not make its d_model 2048; we keep d_model and d_head: 16 heads.
const Shape kGpt3[] = {
    {"gpt3-125m", 12, 768, 12},  {"gpt3-350m", 24, 1024, 16}, {"gpt3-760m", 24, 1536, 16},
    {"gpt3-1.3b", 24, 2048, 16}, {"gpt3-2.7b", 32, 2560, 32}, {"gpt3-6.7b", 32, 4096, 32},
    {"gpt3-13b", 40, 5120, 40},  {"gpt3-175b", 96, 12288, 96},
};

}  // namespace

std::vector<std::string> gpt3_model_names() {
    std::vector<std::string> v;
    for (const Shape& s : kGpt3) v.push_back(s.name);
    return v;
}

bool is_gpt3_model(const std::string& name) {
    for (const Shape& s : kGpt3)
        if (name == s.name) return true;
    return false;
}

GPT2Config gpt3_model(const std::string& name) {
    for (const Shape& s : kGpt3)
        if (name == s.name) {
            GPT2Config c;
            c.name = s.name;
            c.L = s.L;
            c.C = s.C;
            c.H = s.H;
            c.V = 50257;
            c.maxT = 2048;
            return c;
        }
    std::ostringstream names;
    for (const Shape& s : kGpt3) names << (names.tellp() ? ", " : "") << s.name;
    SS_FAIL("--model " << name << " is not a GPT-3 shape; choose one of " << names.str());
}

}  // namespace ss
