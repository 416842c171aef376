// fuzz_token_file.cpp — any bytes as an llm.c token file (src/train/data.h),
// then what `train --data` does with it: check the tokens against the
// vocabulary and cut batches with a DataLoader, two ranks, through a wrap-around.
#include <cstdint>
#include <vector>

#include "core/check.h"
#include "fuzz_util.h"
#include "train/data.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::string path = ss::fuzz::scratch_path(".bin");
    ss::fuzz::write_bytes(path, data, size);
    try {
        std::vector<uint16_t> tokens = ss::read_token_file(path);
        ss::check_tokens(tokens, 50257, path);  // GPT-2's vocabulary
        // B=2, T=3 over 2 ranks: the loader needs 13 tokens; 5 batches wrap any file shorter than 61.
        ss::DataLoader loader(std::move(tokens), 2, 3, 1, 2);
        for (int step = 0; step < 5; ++step) loader.next_batch();
    } catch (const ss::Error&) {
    }
    return 0;
}
