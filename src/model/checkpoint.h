// checkpoint.h — a GPT-2's parameters (or gradients) to and from one
// safetensors file with HF GPT-2's tensor names and shapes.
//
// A file saved here loads into Hugging Face's GPT2Model, and HF's gpt2
// model.safetensors loads here: names may carry a "transformer." prefix, and
// the attention-mask buffers HF stores (h.N.attn.bias, h.N.attn.masked_bias)
// are not parameters and are skipped. Anything else that does not match the
// model (an unknown or missing tensor, a wrong shape, an integer dtype) is an
// error naming the tensor, and nothing is changed; so is a nan or inf value.
//
// Files hold HF's shapes: wte is [V,C] on disk even where memory pads it to
// Vp rows (model/config.h, padded_vocab); reading fills the padding with zeros.
#pragma once

#include <string>

#include "model/gpt2.h"
#include "model/safetensors.h"

namespace ss {

/// The full fp32 values of a flat buffer as a safetensors file (tensors named
/// as @p layout names them, each prefixed by @p prefix), stored as @p dt.
StFile flat_to_safetensors(const ParamLayout& layout, const float* flat, DType dt, const std::string& prefix = "");

/// Fills @p flat (all of @p layout.total elements, fp32) from @p f; checks every
/// name, shape and dtype, and that every value is finite, first and throws
/// ss::Error (naming @p path and the tensor) before writing anything if not.
void safetensors_to_flat(const StFile& f, const ParamLayout& layout, float* flat, const std::string& path);

/// All parameters of an HF-layout file as one flat fp32 buffer in @p layout's
/// order (checked as safetensors_to_flat checks).
std::vector<float> read_params(const ParamLayout& layout, const std::string& path);

/// Saves a whole flat fp32 buffer @p flat to @p path as @p dt, with the model's
/// shape in the metadata.
void save_params(const GPT2Config& cfg, const ParamLayout& layout, const float* flat, DType dt,
                 const std::string& path);

/// Loads @p path into @p model's parameters (see the header comment).
void load_model(GPT2& model, const std::string& path);

/// Saves @p model's parameters to @p path, in the model's storage dtype.
void save_model(const GPT2& model, const std::string& path);

}  // namespace ss
