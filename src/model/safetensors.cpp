#include "model/safetensors.h"

#include "core/atomic_file.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/check.h"

namespace ss {

using nlohmann::json;

// ---- StFile ---------------------------------------------------------------------

const StTensor& StFile::get(const std::string& name) const {
    auto it = tensors.find(name);
    if (it == tensors.end()) {
        std::ostringstream have;
        int shown = 0;
        for (const auto& kv : tensors) {
            if (shown++ == 8) { have << ", ..."; break; }
            have << (shown > 1 ? ", " : "") << kv.first;
        }
        SS_FAIL("safetensors: no tensor named '" << name << "' (the file has " << tensors.size()
                << ": " << have.str() << "); check the name, or that the file is the one you meant");
    }
    return it->second;
}

void StFile::put(StTensor t) {
    SS_CHECK(!t.name.empty() && t.name != "__metadata__",
             "safetensors: a tensor needs a name other than '' and '__metadata__'");
    size_t want = size_t(numel(t.shape)) * dtype_size(t.dtype);
    SS_CHECK(t.bytes.size() == want, "safetensors: tensor '" << t.name << "' has " << t.bytes.size()
             << " bytes but shape " << shape_str(t.shape) << " of " << st_dtype_name(t.dtype)
             << " needs " << want);
    std::string key = t.name;
    tensors[key] = std::move(t);
}

const std::string& StFile::meta(const std::string& key) const {
    auto it = metadata.find(key);
    SS_CHECK(it != metadata.end(), "safetensors: no metadata key '" << key
             << "' (the file has " << metadata.size() << " keys); was it written by a different tool?");
    return it->second;
}

const char* st_dtype_name(DType dt) {
    switch (dt) {
        case DType::f32: return "F32";
        case DType::bf16: return "BF16";
        case DType::i32: return "I32";
        case DType::u8: return "U8";
    }
    return "?";
}

// ---- reading ----------------------------------------------------------------------

namespace {

// The dtype named in a header, or an error that says what to do about it.
DType parse_st_dtype(const std::string& s, const std::string& where) {
    if (s == "F32") return DType::f32;
    if (s == "BF16") return DType::bf16;
    if (s == "I32") return DType::i32;
    if (s == "F16")
        SS_FAIL(where << ": dtype F16 not supported; convert to F32 or BF16 "
                         "(e.g. in PyTorch: {k: v.float() for k, v in state_dict.items()})");
    SS_FAIL(where << ": unknown dtype '" << s << "'; ShardScope reads F32, BF16 and I32, "
                     "convert the tensor to one of them");
}

// One header entry, checked field by field against the size of the data section.
StTensor parse_entry(const std::string& name, const json& e, uint64_t data_size,
                     const std::string& file, uint64_t* begin_out) {
    std::string where = "safetensors file '" + file + "', tensor '" + name + "'";
    SS_CHECK(e.is_object(), where << ": header entry is not a JSON object; the file is corrupt");
    SS_CHECK(e.contains("dtype"), where << ": header entry has no \"dtype\"; the file is corrupt");
    SS_CHECK(e.contains("shape"), where << ": header entry has no \"shape\"; the file is corrupt");
    SS_CHECK(e.contains("data_offsets"),
             where << ": header entry has no \"data_offsets\"; the file is corrupt");
    SS_CHECK(e["dtype"].is_string(), where << ": \"dtype\" is not a string; the file is corrupt");

    StTensor t;
    t.name = name;
    t.dtype = parse_st_dtype(e["dtype"].get<std::string>(), where);

    const json& shape = e["shape"];
    SS_CHECK(shape.is_array(), where << ": \"shape\" is not an array; the file is corrupt");
    // Product of the dimensions, stopped before it can overflow: anything
    // larger than the data section is out of range anyway.
    uint64_t n = 1;
    bool too_big = false;
    for (const json& d : shape) {
        SS_CHECK(d.is_number_unsigned() || (d.is_number_integer() && d.get<int64_t>() >= 0),
                 where << ": \"shape\" " << shape.dump() << " holds " << d.dump()
                       << ", not a non-negative integer; the file is corrupt");
        uint64_t v = d.get<uint64_t>();
        t.shape.push_back(int64_t(v));
        if (v != 0 && n > data_size / v) too_big = true;
        else n *= v;
    }
    for (int64_t d : t.shape) if (d == 0) too_big = false, n = 0;  // a zero dimension wins
    const json& off = e["data_offsets"];
    SS_CHECK(off.is_array() && off.size() == 2 && off[0].is_number_unsigned() &&
                 off[1].is_number_unsigned(),
             where << ": \"data_offsets\" is " << off.dump()
                   << ", not [begin, end] as two non-negative integers; the file is corrupt");
    uint64_t begin = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
    SS_CHECK(begin <= end, where << ": data_offsets [" << begin << ", " << end
                                 << "] end before they begin; the file is corrupt");
    SS_CHECK(end <= data_size, where << ": data_offsets [" << begin << ", " << end
             << "] run past the data section (" << data_size << " bytes); the file is truncated or corrupt");
    uint64_t want = too_big ? UINT64_MAX : n * dtype_size(t.dtype);
    SS_CHECK(!too_big && end - begin == want,
             where << ": shape " << shape_str(t.shape) << " of " << st_dtype_name(t.dtype) << " needs "
                   << (too_big ? std::string("more than the whole file") : std::to_string(want) + " bytes")
                   << " but data_offsets [" << begin << ", " << end << "] hold " << end - begin
                   << "; the file is corrupt");
    *begin_out = begin;
    return t;
}

}  // namespace

StFile read_safetensors(const std::string& path) {
    // A directory opens as a stream of 0 bytes on Linux: say what it is before its "header" is read.
    SS_CHECK(!std::filesystem::is_directory(path), "safetensors file '" << path << "' is a directory; give a "
                                                       << ".safetensors file (a checkpoint directory of --save-every "
                                                          "is read by --resume, or made one file by `shardscope "
                                                          "checkpoint consolidate`)");
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    SS_CHECK(in, "cannot open safetensors file '" << path << "': " << std::strerror(errno)
                 << "; check the path");
    const uint64_t file_size = uint64_t(in.tellg());
    in.seekg(0);
    SS_CHECK(file_size >= 8, "safetensors file '" << path << "' is " << file_size
             << " bytes, shorter than the 8-byte header length every safetensors file starts with; "
                "it is truncated or not a safetensors file");

    uint8_t len_bytes[8];
    in.read(reinterpret_cast<char*>(len_bytes), 8);
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | len_bytes[i];  // little-endian
    SS_CHECK(header_len <= file_size - 8,
             "safetensors file '" << path << "' says its header is " << header_len << " bytes but only "
             << file_size - 8 << " follow the length field; it is truncated or not a safetensors file");

    std::string text(header_len, '\0');
    in.read(text.data(), std::streamsize(header_len));
    SS_CHECK(in, "safetensors file '" << path << "': could not read the " << header_len << "-byte header");
    json header;
    try {
        header = json::parse(text);
    } catch (const json::exception& e) {  // parse_error, and out_of_range for a number too large (1e999)
        SS_FAIL("safetensors file '" << path << "': the header is not valid JSON (" << e.what()
                << "); the file is corrupt or not a safetensors file");
    }
    SS_CHECK(header.is_object(), "safetensors file '" << path
             << "': the header is JSON but not an object of tensors; the file is corrupt");

    const uint64_t data_start = 8 + header_len;
    const uint64_t data_size = file_size - data_start;
    StFile f;
    for (const auto& [name, e] : header.items()) {
        if (name == "__metadata__") {
            SS_CHECK(e.is_object(), "safetensors file '" << path
                     << "': \"__metadata__\" is not an object of strings; the file is corrupt");
            for (const auto& [k, v] : e.items()) {
                SS_CHECK(v.is_string(), "safetensors file '" << path << "': metadata '" << k << "' is "
                         << v.dump() << ", not a string (the format allows only strings); the file is corrupt");
                f.metadata[k] = v.get<std::string>();
            }
            continue;
        }
        uint64_t begin = 0;
        StTensor t = parse_entry(name, e, data_size, path, &begin);
        t.bytes.resize(size_t(numel(t.shape)) * dtype_size(t.dtype));
        in.seekg(std::streamoff(data_start + begin));
        in.read(reinterpret_cast<char*>(t.bytes.data()), std::streamsize(t.bytes.size()));
        SS_CHECK(in, "safetensors file '" << path << "', tensor '" << name << "': read failed");
        f.tensors[name] = std::move(t);
    }
    return f;
}

// ---- writing ----------------------------------------------------------------------

void write_safetensors(const std::string& path, const StFile& f) {
    // Hugging Face's order: larger elements first, then by name. With no holes
    // between tensors (the format forbids them) this keeps every tensor aligned
    // to its element size, given the 8-aligned start of the data section.
    // Keys come from the map; a tensor's own name may be left empty.
    std::vector<std::pair<std::string, const StTensor*>> order;
    for (const auto& [key, t] : f.tensors) {
        SS_CHECK(t.name.empty() || t.name == key, "write_safetensors('" << path << "'): tensor stored under '"
                 << key << "' is named '" << t.name << "'; add tensors with StFile::put");
        SS_CHECK(!key.empty() && key != "__metadata__", "write_safetensors('" << path
                 << "'): a tensor needs a name other than '' and '__metadata__'");
        size_t want = size_t(numel(t.shape)) * dtype_size(t.dtype);
        SS_CHECK(t.bytes.size() == want, "write_safetensors('" << path << "'): tensor '" << key << "' has "
                 << t.bytes.size() << " bytes but shape " << shape_str(t.shape) << " of "
                 << st_dtype_name(t.dtype) << " needs " << want);
        order.emplace_back(key, &t);
    }
    std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
        return dtype_size(a.second->dtype) > dtype_size(b.second->dtype);  // the map sorted the names
    });

    json header = json::object();
    uint64_t offset = 0;
    for (const auto& [key, t] : order) {
        header[key] = {{"dtype", st_dtype_name(t->dtype)},
                       {"shape", t->shape},
                       {"data_offsets", {offset, offset + t->bytes.size()}}};
        offset += t->bytes.size();
    }
    if (!f.metadata.empty()) header["__metadata__"] = f.metadata;
    std::string text = header.dump();
    while ((8 + text.size()) % 8 != 0) text.push_back(' ');  // data starts 8-aligned, as HF pads

    write_file_atomically(path, [&](std::ostream& out) {
        uint8_t len_bytes[8];
        uint64_t n = text.size();
        for (int i = 0; i < 8; ++i) len_bytes[i] = uint8_t(n >> (8 * i));  // little-endian
        out.write(reinterpret_cast<const char*>(len_bytes), 8);
        out.write(text.data(), std::streamsize(text.size()));
        for (const auto& [key, t] : order)
            out.write(reinterpret_cast<const char*>(t->bytes.data()), std::streamsize(t->bytes.size()));
    });
}

// ---- conversions ------------------------------------------------------------------

StTensor st_from_f32(const std::string& name, const Shape& shape, const std::vector<float>& v, DType dt) {
    SS_CHECK(dt == DType::f32 || dt == DType::bf16,
             "st_from_f32('" << name << "'): dtype must be fp32 or bf16, not " << dtype_name(dt));
    SS_CHECK(int64_t(v.size()) == numel(shape), "st_from_f32('" << name << "'): " << v.size()
             << " values for shape " << shape_str(shape) << " (" << numel(shape) << " elements)");
    StTensor t;
    t.name = name;
    t.dtype = dt;
    t.shape = shape;
    t.bytes.resize(v.size() * dtype_size(dt));
    // An empty tensor (shape {0, 5}) has no bytes, and data() may then be null:
    // memcpy with a null pointer is undefined even for 0 bytes (UBSan says so).
    if (t.bytes.empty()) return t;
    if (dt == DType::f32) {
        std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
    } else {
        for (size_t i = 0; i < v.size(); ++i) {
            uint16_t h = f32_to_bf16(v[i]);
            std::memcpy(t.bytes.data() + 2 * i, &h, 2);
        }
    }
    return t;
}

StTensor st_from_i32(const std::string& name, const Shape& shape, const std::vector<int32_t>& v) {
    SS_CHECK(int64_t(v.size()) == numel(shape), "st_from_i32('" << name << "'): " << v.size()
             << " values for shape " << shape_str(shape) << " (" << numel(shape) << " elements)");
    StTensor t;
    t.name = name;
    t.dtype = DType::i32;
    t.shape = shape;
    t.bytes.resize(v.size() * 4);
    if (!t.bytes.empty()) std::memcpy(t.bytes.data(), v.data(), t.bytes.size());  // see st_from_f32
    return t;
}

std::vector<float> st_to_f32(const StTensor& t) {
    size_t n = size_t(numel(t.shape));
    SS_CHECK(t.bytes.size() == n * dtype_size(t.dtype),
             "safetensors tensor '" << t.name << "': byte count does not match its shape");
    std::vector<float> out(n);
    if (t.dtype == DType::f32) {
        if (n) std::memcpy(out.data(), t.bytes.data(), n * 4);  // no null pointers, as in st_from_f32
    } else if (t.dtype == DType::bf16) {
        for (size_t i = 0; i < n; ++i) {
            uint16_t h;
            std::memcpy(&h, t.bytes.data() + 2 * i, 2);
            out[i] = bf16_to_f32(h);
        }
    } else {
        SS_FAIL("safetensors tensor '" << t.name << "' is " << st_dtype_name(t.dtype)
                << ", not F32 or BF16; read it with st_to_i32");
    }
    return out;
}

std::vector<int32_t> st_to_i32(const StTensor& t) {
    SS_CHECK(t.dtype == DType::i32, "safetensors tensor '" << t.name << "' is " << st_dtype_name(t.dtype)
             << ", not I32; read it with st_to_f32");
    size_t n = size_t(numel(t.shape));
    SS_CHECK(t.bytes.size() == n * 4, "safetensors tensor '" << t.name << "': byte count does not match its shape");
    std::vector<int32_t> out(n);
    if (n) std::memcpy(out.data(), t.bytes.data(), n * 4);  // no null pointers, as in st_from_f32
    return out;
}

}  // namespace ss
