// test_safetensors.cpp — safetensors round trips, every corruption the reader
// must catch, and the golden files from tests/golden/make_golden.py.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "core/check.h"
#include "model/safetensors.h"

using namespace ss;
namespace fs = std::filesystem;

namespace {

// A fresh folder for this test process, removed when the tests end.
struct TempDir {
    fs::path dir;
    TempDir() {
        dir = fs::temp_directory_path() / ("ss_test_safetensors_" + std::to_string(getpid()));
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

// Writes a file from a raw header string and data bytes; the length field is
// the header's size unless @p claimed_len overrides it.
std::string write_raw(const std::string& name, const std::string& header, size_t data_bytes,
                      int64_t claimed_len = -1) {
    std::string p = tmp().path(name);
    std::ofstream out(p, std::ios::binary);
    uint64_t n = claimed_len >= 0 ? uint64_t(claimed_len) : header.size();
    for (int i = 0; i < 8; ++i) out.put(char((n >> (8 * i)) & 0xff));
    out << header;
    for (size_t i = 0; i < data_bytes; ++i) out.put(char(i));
    return p;
}

// The message of the ss::Error that reading @p path throws ("" if none).
std::string read_error(const std::string& path) {
    try {
        read_safetensors(path);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

std::vector<uint8_t> file_bytes(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("safetensors round trip keeps F32, BF16, I32 and metadata", "[safetensors]") {
    StFile f;
    f.put(st_from_f32("b.weight", {2, 3}, {1.f, -2.5f, 3.25f, 0.f, 1e-8f, -7.f}));
    // bf16 keeps 8 mantissa bits: 1.00390625 = 1 + 2^-8 is not representable and
    // rounds to even (1.0); 1.0078125 = 1 + 2^-7 is exact.
    f.put(st_from_f32("a.half", {4}, {1.00390625f, 1.0078125f, -3.f, 65536.f}, DType::bf16));
    f.put(st_from_i32("tokens", {3, 1}, {7, -1, 50256}));
    f.put(st_from_f32("scalar", {}, {42.f}));
    f.put(st_from_f32("empty", {0, 5}, {}));
    f.metadata["L"] = "2";
    f.metadata["note"] = "hello \"quoted\" world";

    const std::string p = tmp().path("roundtrip.safetensors");
    write_safetensors(p, f);
    REQUIRE_FALSE(fs::exists(p + ".tmp"));  // the temporary was renamed away

    StFile g = read_safetensors(p);
    REQUIRE(g.tensors.size() == 5);
    REQUIRE(g.metadata == f.metadata);
    for (const auto& [name, t] : f.tensors) {
        const StTensor& u = g.get(name);
        CHECK(u.name == name);
        CHECK(u.dtype == t.dtype);
        CHECK(u.shape == t.shape);
        CHECK(u.bytes == t.bytes);
    }
    CHECK(st_to_f32(g.get("b.weight")) == std::vector<float>{1.f, -2.5f, 3.25f, 0.f, 1e-8f, -7.f});
    CHECK(st_to_f32(g.get("a.half")) == std::vector<float>{1.f, 1.0078125f, -3.f, 65536.f});
    CHECK(st_to_i32(g.get("tokens")) == std::vector<int32_t>{7, -1, 50256});
    CHECK(g.get("scalar").shape.empty());
    CHECK(st_to_f32(g.get("scalar")) == std::vector<float>{42.f});
    CHECK(g.meta("L") == "2");

    SECTION("the layout is Hugging Face's: 8-aligned data, 4-byte dtypes first, no holes") {
        std::vector<uint8_t> raw = file_bytes(p);
        uint64_t n = 0;
        for (int i = 7; i >= 0; --i) n = (n << 8) | raw[i];
        CHECK((8 + n) % 8 == 0);
        auto h = nlohmann::json::parse(std::string(raw.begin() + 8, raw.begin() + 8 + n));
        // 4-byte tensors by name, then the 2-byte one.
        std::vector<std::string> order = {"b.weight", "empty", "scalar", "tokens", "a.half"};
        uint64_t at = 0;
        for (const auto& name : order) {
            CHECK(h[name]["data_offsets"][0].get<uint64_t>() == at);
            at = h[name]["data_offsets"][1].get<uint64_t>();
        }
        CHECK(at == raw.size() - 8 - n);
        CHECK(h["__metadata__"]["L"] == "2");
    }
}

TEST_CASE("safetensors conversions check their dtype", "[safetensors]") {
    StTensor i = st_from_i32("ids", {2}, {1, 2});
    REQUIRE_THROWS_WITH(st_to_f32(i), Catch::Contains("'ids' is I32") && Catch::Contains("st_to_i32"));
    StTensor x = st_from_f32("x", {2}, {1.f, 2.f});
    REQUIRE_THROWS_WITH(st_to_i32(x), Catch::Contains("'x' is F32"));
    REQUIRE_THROWS_WITH(st_from_f32("y", {3}, {1.f, 2.f}), Catch::Contains("2 values for shape [3]"));
    StFile f;
    StTensor bad = x;
    bad.bytes.pop_back();
    REQUIRE_THROWS_WITH(f.put(bad), Catch::Contains("'x' has 7 bytes") && Catch::Contains("needs 8"));
    REQUIRE_THROWS_WITH(f.get("nope"), Catch::Contains("no tensor named 'nope'"));
    REQUIRE_THROWS_WITH(f.meta("nope"), Catch::Contains("no metadata key 'nope'"));
}

TEST_CASE("missing folders are made; a folder that cannot be made fails and leaves nothing behind",
          "[safetensors]") {
    StFile f;
    f.put(st_from_f32("x", {1}, {1.f}));
    const std::string made = tmp().path("new/sub/dir/x.safetensors");
    write_safetensors(made, f);
    REQUIRE(read_safetensors(made).has("x"));
    // A "folder" that is really a file cannot be made.
    const std::string file = tmp().path("plainfile");
    std::ofstream(file) << "not a folder";
    const std::string p = file + "/x.safetensors";
    REQUIRE_THROWS_WITH(write_safetensors(p, f), Catch::Contains("cannot create the folder"));
    REQUIRE_FALSE(fs::exists(p));
}

TEST_CASE("an existing file is replaced whole", "[safetensors]") {
    const std::string p = tmp().path("replace.safetensors");
    StFile a, b;
    a.put(st_from_f32("x", {100}, std::vector<float>(100, 1.f)));
    b.put(st_from_f32("y", {1}, {2.f}));
    write_safetensors(p, a);
    write_safetensors(p, b);
    StFile g = read_safetensors(p);
    REQUIRE(g.tensors.size() == 1);
    REQUIRE(g.has("y"));
}

TEST_CASE("reading a corrupt safetensors file names the file, the tensor and the problem",
          "[safetensors]") {
    // A valid header for reference: one F32 [2, 3] tensor, 24 bytes.
    const std::string ok = R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}})";
    REQUIRE(read_error(write_raw("ok.st", ok, 24)).empty());  // the baseline is valid

    struct Case {
        const char* what;
        std::string header;
        size_t data;
        int64_t claimed_len;
        std::vector<std::string> expect;  // substrings of the message
    };
    const std::vector<Case> cases = {
        {"header not JSON", "{\"w\": {nope", 24, -1, {"not valid JSON"}},
        {"header not an object", "[1, 2, 3]", 24, -1, {"not an object"}},
        {"entry not an object", R"({"w": 5})", 24, -1, {"'w'", "not a JSON object"}},
        {"missing dtype", R"({"w":{"shape":[2,3],"data_offsets":[0,24]}})", 24, -1, {"'w'", "no \"dtype\""}},
        {"missing shape", R"({"w":{"dtype":"F32","data_offsets":[0,24]}})", 24, -1, {"'w'", "no \"shape\""}},
        {"missing offsets", R"({"w":{"dtype":"F32","shape":[2,3]}})", 24, -1, {"'w'", "no \"data_offsets\""}},
        {"dtype not a string", R"({"w":{"dtype":7,"shape":[2,3],"data_offsets":[0,24]}})", 24, -1,
         {"'w'", "\"dtype\" is not a string"}},
        {"unknown dtype", R"({"w":{"dtype":"Q8","shape":[2,3],"data_offsets":[0,24]}})", 24, -1,
         {"'w'", "unknown dtype 'Q8'", "F32, BF16 and I32"}},
        {"F16", R"({"w":{"dtype":"F16","shape":[2,3],"data_offsets":[0,12]}})", 12, -1,
         {"'w'", "dtype F16 not supported; convert to F32 or BF16"}},
        {"shape not an array", R"({"w":{"dtype":"F32","shape":6,"data_offsets":[0,24]}})", 24, -1,
         {"'w'", "\"shape\" is not an array"}},
        {"negative dimension", R"({"w":{"dtype":"F32","shape":[-2,3],"data_offsets":[0,24]}})", 24, -1,
         {"'w'", "not a non-negative integer"}},
        {"offsets malformed", R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0]}})", 24, -1,
         {"'w'", "not [begin, end]"}},
        {"offsets reversed", R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[24,0]}})", 24, -1,
         {"'w'", "end before they begin"}},
        {"offsets past the end", R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}})", 20, -1,
         {"'w'", "run past the data section (20 bytes)"}},
        {"offsets not matching shape", R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})", 24, -1,
         {"'w'", "needs 24 bytes", "hold 20"}},
        {"shape product overflows",
         R"({"w":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,24]}})", 24, -1,
         {"'w'", "more than the whole file"}},
        {"metadata not an object", R"({"__metadata__": 3})", 0, -1, {"\"__metadata__\" is not an object"}},
        {"metadata value not a string", R"({"__metadata__": {"L": 2}})", 0, -1, {"metadata 'L'", "not a string"}},
        {"header length past the end", ok, 24, 100000, {"says its header is 100000 bytes", "truncated"}},
    };
    int i = 0;
    for (const Case& c : cases) {
        INFO("case: " << c.what);
        std::string p = write_raw("bad" + std::to_string(i++) + ".st", c.header, c.data, c.claimed_len);
        std::string msg = read_error(p);
        REQUIRE_FALSE(msg.empty());
        CHECK_THAT(msg, Catch::Contains(p));  // every message names the file
        for (const std::string& s : c.expect) CHECK_THAT(msg, Catch::Contains(s));
    }

    SECTION("a file shorter than the length field") {
        std::string p = tmp().path("short.st");
        std::ofstream(p, std::ios::binary) << "abcde";
        CHECK_THAT(read_error(p), Catch::Contains(p) && Catch::Contains("5 bytes, shorter than the 8-byte"));
    }
    SECTION("a missing file") {
        std::string p = tmp().path("does_not_exist.safetensors");
        CHECK_THAT(read_error(p), Catch::Contains("cannot open") && Catch::Contains(p));
    }
}

// ---- golden files -------------------------------------------------------------------

namespace {

// The parameter names of an L-layer GPT-2 with their shapes, HF layout.
std::vector<std::pair<std::string, Shape>> gpt2_params(int64_t L, int64_t C, int64_t V, int64_t maxT) {
    std::vector<std::pair<std::string, Shape>> p = {{"wte.weight", {V, C}}, {"wpe.weight", {maxT, C}}};
    for (int64_t l = 0; l < L; ++l) {
        std::string h = "h." + std::to_string(l) + ".";
        p.push_back({h + "ln_1.weight", {C}});
        p.push_back({h + "ln_1.bias", {C}});
        p.push_back({h + "attn.c_attn.weight", {C, 3 * C}});
        p.push_back({h + "attn.c_attn.bias", {3 * C}});
        p.push_back({h + "attn.c_proj.weight", {C, C}});
        p.push_back({h + "attn.c_proj.bias", {C}});
        p.push_back({h + "ln_2.weight", {C}});
        p.push_back({h + "ln_2.bias", {C}});
        p.push_back({h + "mlp.c_fc.weight", {C, 4 * C}});
        p.push_back({h + "mlp.c_fc.bias", {4 * C}});
        p.push_back({h + "mlp.c_proj.weight", {4 * C, C}});
        p.push_back({h + "mlp.c_proj.bias", {C}});
    }
    p.push_back({"ln_f.weight", {C}});
    p.push_back({"ln_f.bias", {C}});
    return p;
}

}  // namespace

TEST_CASE("the golden files read and hold a whole GPT-2 step", "[safetensors][golden]") {
    for (const char* name : {"tiny", "odd"}) {
        INFO("golden case " << name);
        const std::string p = std::string(SS_SOURCE_DIR) + "/tests/golden/" + name + ".safetensors";
        StFile g = read_safetensors(p);
        const int64_t L = std::stoll(g.meta("L")), C = std::stoll(g.meta("C")), H = std::stoll(g.meta("H"));
        const int64_t V = std::stoll(g.meta("V")), T = std::stoll(g.meta("T")), maxT = std::stoll(g.meta("maxT"));
        const int64_t B = std::stoll(g.meta("B"));
        CHECK(C % H == 0);
        CHECK(T <= maxT);
        auto params = gpt2_params(L, C, V, maxT);
        // Every parameter and its gradient, plus tokens, loss and logits.
        CHECK(g.tensors.size() == 2 * params.size() + 3);
        for (const auto& [pname, shape] : params) {
            INFO("tensor " << pname);
            CHECK(g.get(pname).dtype == DType::f32);
            CHECK(g.get(pname).shape == shape);
            CHECK(g.get("grad." + pname).shape == shape);
            // Every gradient path is exercised: no all-zero gradient.
            std::vector<float> gr = st_to_f32(g.get("grad." + pname));
            float mx = 0;
            for (float v : gr) mx = std::max(mx, std::fabs(v));
            CHECK(mx > 0);
        }
        CHECK(g.get("tokens").dtype == DType::i32);
        CHECK(g.get("tokens").shape == Shape{B, T + 1});
        CHECK(g.get("loss").shape == Shape{1});
        CHECK(g.get("logits").shape == Shape{B, T, V});

        // The file agrees with itself: the loss is the mean cross-entropy of the
        // logits against the targets (tokens shifted by one). Computed here in
        // double; the tolerance covers the fp32 rounding of PyTorch's own value.
        std::vector<int32_t> tok = st_to_i32(g.get("tokens"));
        std::vector<float> logits = st_to_f32(g.get("logits"));
        double sum = 0;
        for (int64_t b = 0; b < B; ++b) {
            for (int64_t t = 0; t < T; ++t) {
                const float* row = logits.data() + (b * T + t) * V;
                int32_t target = tok[b * (T + 1) + t + 1];
                REQUIRE(target >= 0);
                REQUIRE(target < V);
                double mx = row[0];
                for (int64_t v = 1; v < V; ++v) mx = std::max(mx, double(row[v]));
                double z = 0;
                for (int64_t v = 0; v < V; ++v) z += std::exp(double(row[v]) - mx);
                sum += std::log(z) + mx - row[target];
            }
        }
        const double loss = st_to_f32(g.get("loss"))[0];
        CHECK(std::fabs(sum / double(B * T) - loss) < 1e-5);
        CHECK(loss > 0.5 * std::log(double(V)));  // a random model is near ln V
        CHECK(loss < 1.5 * std::log(double(V)));
    }
}
