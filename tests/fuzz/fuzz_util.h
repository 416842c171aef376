// fuzz_util.h — what the fuzz targets share: a scratch file for the readers
// that take a path, and the rule every target checks.
//
// The rule: whatever the bytes, a reader either returns or throws ss::Error.
// Each target catches ss::Error and nothing else, so any other exception
// (std::bad_alloc, std::length_error, a JSON library error), a crash, undefined
// behaviour (UBSan), a leak (LeakSanitizer), an allocation over -malloc_limit_mb
// or an input slower than -timeout is a finding. Found inputs go to
// tests/fuzz/corpus/<name>/ as regressions (docs/reliability.md, "Fuzzed inputs").
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <unistd.h>

namespace ss::fuzz {

/// A file of this process's own in the temp directory (fuzzers run side by side).
inline std::string scratch_path(const char* suffix) {
    return (std::filesystem::temp_directory_path() /
            ("shardscope-fuzz-" + std::to_string(::getpid()) + suffix)).string();
}

/// Writes @p size bytes at @p data to @p path, replacing it.
inline void write_bytes(const std::string& path, const uint8_t* data, size_t size) {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) std::abort();  // the fuzzer's own machinery failed, not the code under test
    if (size && std::fwrite(data, 1, size, f) != size) std::abort();
    std::fclose(f);
}

}  // namespace ss::fuzz
