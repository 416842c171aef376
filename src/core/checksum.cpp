// checksum.cpp — FNV-1a 64 over bytes and files (the formula and why it works: checksum.h).
#include "core/checksum.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

#include "core/check.h"

namespace ss {

uint64_t fnv1a64(const void* data, size_t n, uint64_t h) {
    constexpr uint64_t kPrime = 1099511628211ull;  // 2^40 + 2^8 + 0xb3
    const unsigned char* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) {
        h ^= p[i];
        h *= kPrime;
    }
    return h;
}

uint64_t fnv1a64_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    SS_CHECK(f, "cannot open " << path << " to check its checksum: " << std::strerror(errno));
    std::vector<char> buf(size_t(1) << 20);
    uint64_t h = kFnv1a64Basis;
    while (f) {
        f.read(buf.data(), std::streamsize(buf.size()));
        h = fnv1a64(buf.data(), size_t(f.gcount()), h);
    }
    SS_CHECK(f.eof(), "reading " << path << " failed before its end");
    return h;
}

std::string hex64(uint64_t h) {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
}

}  // namespace ss
