// safetensors.h — read and write Hugging Face's safetensors files.
//
// The format (https://huggingface.co/docs/safetensors, "Format" section):
//
//   [ 8 bytes: N, little-endian uint64 ]
//   [ N bytes: JSON header                                                ]
//   [ data: every tensor's bytes, row-major, little-endian                ]
//
// The header maps each tensor name to
//   {"dtype": "F32" | "BF16" | "I32", "shape": [d0, d1, ...], "data_offsets": [begin, end]}
// with offsets counted from the start of the data section, plus an optional
// "__metadata__": {"key": "value", ...} of strings.
//
// It is how GPT-2's real weights are published (model.safetensors), how the
// golden files in tests/golden/ carry PyTorch's loss and gradients, and how
// ShardScope saves checkpoints. Only the three dtypes ShardScope computes in are
// read; F16 and the rest fail with a message that says how to convert.
//
// Reading validates everything before trusting a byte and names the file and
// the tensor in every error. Writing goes to `path + ".tmp"` and renames, so a
// crash never leaves a half-written file under the real name.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/tensor.h"

namespace ss {

/// One tensor of a safetensors file: its dtype, shape and raw little-endian bytes.
struct StTensor {
    std::string name;            ///< key in the header, e.g. "h.0.attn.c_attn.weight"
    DType dtype = DType::f32;    ///< F32, BF16 or I32
    Shape shape;                 ///< outermost dimension first
    std::vector<uint8_t> bytes;  ///< numel(shape) * dtype_size(dtype) bytes
};

/// A whole safetensors file in memory: tensors by name, and the string metadata.
struct StFile {
    std::map<std::string, StTensor> tensors;       ///< by name
    std::map<std::string, std::string> metadata;   ///< the header's "__metadata__" strings

    /// True when a tensor called @p name is present.
    bool has(const std::string& name) const { return tensors.count(name) != 0; }
    /// The tensor called @p name (throws ss::Error listing what is there if absent).
    const StTensor& get(const std::string& name) const;
    /// Adds or replaces a tensor under its own name (checks the byte count).
    void put(StTensor t);
    /// The metadata value for @p key (throws ss::Error if absent).
    const std::string& meta(const std::string& key) const;
};

/// Name of @p dt inside a safetensors header: "F32", "BF16", "I32".
const char* st_dtype_name(DType dt);

/// Reads and validates @p path. Throws ss::Error naming the file, the tensor and
/// the problem (short file, bad header length, bad JSON, missing or malformed
/// fields, unsupported dtype, offsets outside the data or not matching the shape).
StFile read_safetensors(const std::string& path);

/// Writes @p f to @p path (via `path + ".tmp"` and a rename). Tensors are laid
/// out as Hugging Face's writer does: larger dtypes first, then by name, with no
/// holes, so every tensor starts at a multiple of its element size; the header is
/// padded with spaces so the data section starts at a multiple of 8 bytes.
void write_safetensors(const std::string& path, const StFile& f);

/// A tensor from fp32 values, stored as F32 or (rounded to nearest even) BF16.
StTensor st_from_f32(const std::string& name, const Shape& shape, const std::vector<float>& v,
                     DType dt = DType::f32);
/// A tensor from int32 values, stored as I32.
StTensor st_from_i32(const std::string& name, const Shape& shape, const std::vector<int32_t>& v);

/// The values of an F32 or BF16 tensor as fp32 (throws ss::Error for I32).
std::vector<float> st_to_f32(const StTensor& t);
/// The values of an I32 tensor (throws ss::Error for the float dtypes).
std::vector<int32_t> st_to_i32(const StTensor& t);

}  // namespace ss
