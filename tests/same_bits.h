// same_bits.h — the check of an optimisation that must not change a bit: two
// runs of train() that differ only in how they move or keep data (overlap on
// and off, hpZ and plain ZeRO-3) give the same losses, the same step-1
// gradients (--dump-grads) and the same final parameters (--save), byte for byte.
#pragma once

#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <string>

#include "train/train.h"

namespace ss::test {

/// The whole of the file at @p path ("" if it cannot be read).
inline std::string file_bytes(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

/// Runs @p a and @p b (their save and dump_grads set to files named after
/// @p prefix in the build folder) and requires the same losses, gradients and
/// parameters, byte for byte; @p what names the pair in a failure. Returns b's report.
inline TrainReport require_same_bits(TrainOptions a, TrainOptions b, const std::string& prefix,
                                     const std::string& what) {
    TrainOptions* runs[2] = {&a, &b};
    std::string params[2], grads[2];
    TrainReport r[2];
    for (int i = 0; i < 2; ++i) {
        runs[i]->save = std::string(SS_BINARY_DIR) + "/" + prefix + "_params_" + char('0' + i) + ".safetensors";
        runs[i]->dump_grads = std::string(SS_BINARY_DIR) + "/" + prefix + "_grads_" + char('0' + i) + ".safetensors";
        r[i] = train(*runs[i], nullptr);
        params[i] = file_bytes(runs[i]->save);
        grads[i] = file_bytes(runs[i]->dump_grads);
    }
    INFO(what);
    REQUIRE(r[0].steps.size() == r[1].steps.size());
    for (size_t i = 0; i < r[0].steps.size(); ++i) REQUIRE(r[0].steps[i].loss == r[1].steps[i].loss);
    REQUIRE(!grads[0].empty());
    REQUIRE(grads[0] == grads[1]);
    REQUIRE(!params[0].empty());
    REQUIRE(params[0] == params[1]);
    return r[1];
}

}  // namespace ss::test
