// fuzz_safetensors.cpp — any bytes as a safetensors file (src/model/safetensors.h),
// then as a model's parameters (src/model/checkpoint.h: what `train --init` does).
//
// The seeds (corpus/safetensors/) are whole valid files of a one-block model
// (L=1, C=4, H=1, V=8, maxT=4) in F32 and BF16, and headers with a tensor or two,
// so mutations reach the per-tensor checks and safetensors_to_flat's name and
// shape checks, not only the header-length check.
#include <cstdint>
#include <vector>

#include "core/check.h"
#include "fuzz_util.h"
#include "model/checkpoint.h"
#include "model/params.h"
#include "model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::string path = ss::fuzz::scratch_path(".safetensors");
    ss::fuzz::write_bytes(path, data, size);
    ss::StFile f;
    try {
        f = ss::read_safetensors(path);
    } catch (const ss::Error&) {
        return 0;
    }
    for (const auto& [name, t] : f.tensors) {
        try {
            if (t.dtype == ss::DType::i32) ss::st_to_i32(t);
            else ss::st_to_f32(t);
        } catch (const ss::Error&) {
        }
    }
    ss::GPT2Config cfg;
    cfg.L = 1, cfg.C = 4, cfg.H = 1, cfg.V = 8, cfg.maxT = 4;
    const ss::ParamLayout layout = ss::make_param_layout(cfg);
    std::vector<float> flat(size_t(layout.total));
    try {
        ss::safetensors_to_flat(f, layout, flat.data(), path);
    } catch (const ss::Error&) {
    }
    return 0;
}
