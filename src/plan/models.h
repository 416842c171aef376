// models.h — the shapes the planner knows besides GPT-2's presets: the GPT-3
// family (Brown et al. 2020, arXiv:2005.14165, table 2.1), the models the
// scaling papers the planner quotes were measured on. Same architecture as
// GPT-2 (model/config.h), T = 2048, the GPT-2 vocabulary.
#pragma once

#include <string>
#include <vector>

#include "model/config.h"

namespace ss {

/// Names of the GPT-3 shapes: gpt3-125m, gpt3-350m, gpt3-760m, gpt3-1.3b, gpt3-2.7b, gpt3-6.7b, gpt3-13b, gpt3-175b.
std::vector<std::string> gpt3_model_names();

/// True when @p name is one of gpt3_model_names().
bool is_gpt3_model(const std::string& name);

/// The GPT-3 shape called @p name (L, C = d_model, H, V = 50257, maxT = 2048);
/// throws ss::Error listing the names otherwise. GPT-3 13B's d_model is 5120
/// (the table's 5140 is not a multiple of its 40 heads; 40 x 128 = 5120), and GPT-3 XL (1.3B)
/// has 16 heads of 128 (the table's 24 x 128 is not its d_model 2048).
GPT2Config gpt3_model(const std::string& name);

}  // namespace ss
