// fuzz_hardware.cpp — any bytes as the calibration file `shardscope plan --hw
// cpu-local` reads (out/calibration.json, written by `bench --calibrate`):
// cpu_local_from_json (src/plan/hardware.h).
#include <cstdint>
#include <string>

#include "core/check.h"
#include "plan/hardware.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        ss::cpu_local_from_json(text, "calibration.json");
    } catch (const ss::Error&) {
    }
    return 0;
}
