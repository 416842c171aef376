// test_data.cpp — llm.c token files, the DataLoader (windows, wrap-around,
// sharding over data-parallel ranks) and the built-in corpus.
#include <catch2/catch.hpp>
#include <filesystem>
#include <functional>
#include <fstream>
#include <numeric>
#include <unistd.h>

#include "core/check.h"
#include "train/corpus.h"
#include "train/data.h"

using namespace ss;
namespace fs = std::filesystem;

namespace {

struct TempDir {
    fs::path dir;
    TempDir() {
        dir = fs::temp_directory_path() / ("ss_test_data_" + std::to_string(getpid()));
        fs::remove_all(dir);
        fs::create_directories(dir);
    }
    ~TempDir() { fs::remove_all(dir); }
    std::string path(const std::string& name) const { return (dir / name).string(); }
};

TempDir& tmp() {
    static TempDir t;
    return t;
}

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

// 0, 1, 2, ..., n-1: a token's value is its position, so a window shows where it came from.
std::vector<uint16_t> iota_tokens(size_t n) {
    std::vector<uint16_t> t(n);
    std::iota(t.begin(), t.end(), uint16_t(0));
    return t;
}

std::vector<int32_t> range(int32_t begin, int32_t end) {
    std::vector<int32_t> v;
    for (int32_t i = begin; i < end; ++i) v.push_back(i);
    return v;
}

}  // namespace

TEST_CASE("token files round trip in llm.c's format", "[data]") {
    std::vector<uint16_t> tokens = {0, 1, 65535, 50256, 42, 7};
    const std::string p = tmp().path("tokens.bin");
    write_token_file(p, tokens);
    REQUIRE_FALSE(fs::exists(p + ".tmp"));
    REQUIRE(read_token_file(p) == tokens);

    // The bytes are exactly llm.c's: 256 int32 header, then uint16 tokens.
    REQUIRE(fs::file_size(p) == 1024 + 2 * tokens.size());
    std::ifstream in(p, std::ios::binary);
    int32_t header[256];
    in.read(reinterpret_cast<char*>(header), sizeof(header));
    CHECK(header[0] == 20240520);
    CHECK(header[1] == 1);
    CHECK(header[2] == 6);
    CHECK(header[3] == 0);
    uint16_t third;
    in.seekg(1024 + 2 * 2);
    in.read(reinterpret_cast<char*>(&third), 2);
    CHECK(third == 65535);

    write_token_file(p, {});  // an empty file is valid
    CHECK(read_token_file(p).empty());
}

TEST_CASE("bad token files give errors that say what to do", "[data]") {
    SECTION("missing") {
        std::string p = tmp().path("missing.bin");
        std::string msg = error_of([&] { read_token_file(p); });
        CHECK_THAT(msg, Catch::Contains(p) && Catch::Contains("cannot open") &&
                            Catch::Contains("write_token_file") && Catch::Contains("built-in corpus"));
    }
    SECTION("truncated tokens") {
        std::string p = tmp().path("trunc.bin");
        write_token_file(p, iota_tokens(100));
        fs::resize_file(p, 1024 + 150);
        std::string msg = error_of([&] { read_token_file(p); });
        CHECK_THAT(msg, Catch::Contains(p) && Catch::Contains("should be 1224 bytes") &&
                            Catch::Contains("is 1174 bytes") && Catch::Contains("truncated"));
    }
    SECTION("truncated header") {
        std::string p = tmp().path("trunc_header.bin");
        write_token_file(p, iota_tokens(10));
        fs::resize_file(p, 100);
        CHECK_THAT(error_of([&] { read_token_file(p); }),
                   Catch::Contains(p) && Catch::Contains("100 bytes, shorter than the 1024-byte header"));
    }
    SECTION("bad magic") {
        std::string p = tmp().path("magic.bin");
        write_token_file(p, iota_tokens(10));
        std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
        int32_t bad = 12345;
        f.write(reinterpret_cast<const char*>(&bad), 4);
        f.close();
        CHECK_THAT(error_of([&] { read_token_file(p); }),
                   Catch::Contains(p) && Catch::Contains("magic 12345, not 20240520"));
    }
    SECTION("bad version") {
        std::string p = tmp().path("version.bin");
        write_token_file(p, iota_tokens(10));
        std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
        int32_t v2 = 2;
        f.seekp(4);
        f.write(reinterpret_cast<const char*>(&v2), 4);
        f.close();
        CHECK_THAT(error_of([&] { read_token_file(p); }),
                   Catch::Contains(p) && Catch::Contains("version 2") && Catch::Contains("uint32"));
    }
}

TEST_CASE("check_tokens names the first token outside the vocabulary", "[data]") {
    check_tokens({0, 5, 255}, 256);
    std::string msg = error_of([] { check_tokens({0, 5, 300, 400}, 256, "data.bin"); });
    CHECK_THAT(msg, Catch::Contains("data.bin") && Catch::Contains("token 300 at position 2") &&
                        Catch::Contains("V=256"));
}

TEST_CASE("DataLoader serves consecutive B*T+1 windows and wraps", "[data]") {
    const int B = 2, T = 3;  // S = B*T = 6 tokens per batch
    // 20 tokens: windows start at 0, 6, 12 (12 + 7 = 19 <= 20); 18 + 7 > 20 wraps.
    DataLoader dl(iota_tokens(20), B, T);
    CHECK(dl.batches_per_epoch() == 3);
    const int starts[] = {0, 6, 12, 0, 6, 12, 0};
    for (int s : starts) {
        INFO("window starting at " << s);
        dl.next_batch();
        CHECK(dl.inputs() == range(s, s + 6));
        CHECK(dl.targets() == range(s + 1, s + 7));
    }
    dl.reset();
    dl.next_batch();
    CHECK(dl.inputs() == range(0, 6));

    // Exactly B*T+1 tokens: one batch, served again and again.
    DataLoader one(iota_tokens(7), B, T);
    for (int i = 0; i < 3; ++i) {
        one.next_batch();
        CHECK(one.inputs() == range(0, 6));
        CHECK(one.targets() == range(1, 7));
    }
}

TEST_CASE("DataLoader needs B*T*ranks + 1 tokens and says so", "[data]") {
    CHECK_THAT(error_of([] { DataLoader(iota_tokens(6), 2, 3); }),
               Catch::Contains("6 tokens") && Catch::Contains("needs 7"));
    CHECK_THAT(error_of([] { DataLoader(iota_tokens(20), 2, 3, 0, 4); }),
               Catch::Contains("4 rank(s)") && Catch::Contains("needs 25"));
    CHECK_THAT(error_of([] { DataLoader(iota_tokens(100), 2, 3, 4, 4); }),
               Catch::Contains("process_rank=4"));
    CHECK_THAT(error_of([] { DataLoader(iota_tokens(100), 0, 3); }), Catch::Contains("B=0"));
}

TEST_CASE("n sharded loaders read exactly what one loader with batch n*B reads", "[data]") {
    const int B = 2, T = 5;
    for (int n : {1, 2, 3, 4}) {
        for (size_t N : {size_t(n * B * T + 1), size_t(101), size_t(257), size_t(1000)}) {
            if (N < size_t(n * B * T + 1)) continue;
            INFO("n=" << n << " ranks, N=" << N << " tokens");
            std::vector<uint16_t> tokens(N);
            for (size_t i = 0; i < N; ++i) tokens[i] = uint16_t((i * 7919) % 50257);  // not monotonic
            DataLoader whole(tokens, n * B, T);
            std::vector<DataLoader> ranks;
            for (int r = 0; r < n; ++r) ranks.emplace_back(tokens, B, T, r, n);
            CHECK(ranks[0].batches_per_epoch() == whole.batches_per_epoch());
            // Several epochs, so the wrap-around is compared too.
            const int64_t steps = 3 * whole.batches_per_epoch() + 2;
            for (int64_t step = 0; step < steps; ++step) {
                whole.next_batch();
                for (int r = 0; r < n; ++r) {
                    ranks[r].next_batch();
                    // rank r's [B, T] batch is rows r*B .. r*B+B-1 of the [n*B, T] batch
                    auto first = whole.inputs().begin() + r * B * T;
                    auto tfirst = whole.targets().begin() + r * B * T;
                    REQUIRE(ranks[r].inputs() == std::vector<int32_t>(first, first + B * T));
                    REQUIRE(ranks[r].targets() == std::vector<int32_t>(tfirst, tfirst + B * T));
                }
            }
        }
    }
}

TEST_CASE("rank r reads the r-th window of each group (llm.c's positions)", "[data]") {
    const int B = 1, T = 4, n = 3;  // S = 4, a group is 12 tokens
    std::vector<DataLoader> ranks;
    for (int r = 0; r < n; ++r) ranks.emplace_back(iota_tokens(30), B, T, r, n);
    // Groups start at 0 and 12; 24 + 13 > 30 wraps back to 0.
    const int bases[] = {0, 12, 0};
    for (int base : bases) {
        for (int r = 0; r < n; ++r) {
            CHECK(ranks[r].position() % 12 == r * 4);
            ranks[r].next_batch();
            CHECK(ranks[r].inputs() == range(base + r * 4, base + r * 4 + 4));
        }
    }
}

TEST_CASE("the built-in corpus is English text of bytes", "[data][corpus]") {
    std::vector<uint16_t> tokens = builtin_corpus_tokens();
    CHECK(tokens.size() > 20000);
    CHECK(tokens.size() < 60000);
    check_tokens(tokens, kBuiltinCorpusVocab);
    for (uint16_t t : tokens) REQUIRE(t < 256);
    CHECK(builtin_corpus_tokens() == tokens);  // deterministic
    const std::string& text = builtin_corpus_text();
    CHECK(text.find("all-reduce") != std::string::npos);
    CHECK(text.find("global batch") != std::string::npos);
    // Mostly lower-case letters and spaces, as English is.
    size_t letters = 0;
    for (char c : text) letters += (c >= 'a' && c <= 'z') || c == ' ';
    CHECK(letters > tokens.size() * 3 / 4);
    // A loader with a typical demo batch fits.
    DataLoader dl(tokens, 8, 64, 3, 8);
    dl.next_batch();
    CHECK(dl.inputs().size() == 8 * 64);
}
