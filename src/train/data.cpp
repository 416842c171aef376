#include "train/data.h"

#include "core/atomic_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/check.h"

namespace ss {

// Both halves of the file are little-endian, as on every machine ShardScope
// targets (x86-64, aarch64), so int32/uint16 arrays are written as they are.

void write_token_file(const std::string& path, const std::vector<uint16_t>& tokens) {
    SS_CHECK(tokens.size() <= size_t(INT32_MAX), "write_token_file('" << path << "'): " << tokens.size()
             << " tokens do not fit the int32 count in llm.c's header; split them over several files");
    int32_t header[kTokenFileHeaderInts] = {};
    header[0] = kTokenFileMagic;
    header[1] = kTokenFileVersion;
    header[2] = int32_t(tokens.size());

    write_file_atomically(path, [&](std::ostream& out) {
        out.write(reinterpret_cast<const char*>(header), sizeof(header));
        out.write(reinterpret_cast<const char*>(tokens.data()), std::streamsize(tokens.size() * 2));
    });
}

std::vector<uint16_t> read_token_file(const std::string& path) {
    // A directory opens as a stream of 0 bytes on Linux: say what it is before its "header" is read.
    SS_CHECK(!std::filesystem::is_directory(path), "token file '" << path << "' is a directory; give one llm.c "
                                                       << ".bin token file in it (e.g. tiny_shakespeare_train.bin)");
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    SS_CHECK(in, "cannot open token file '" << path << "': " << std::strerror(errno)
                 << ". Make one with ss::write_token_file or llm.c's dev/data scripts "
                    "(e.g. python dev/data/tinyshakespeare.py writes tiny_shakespeare_train.bin), "
                    "or train on the built-in corpus instead");
    const uint64_t size = uint64_t(in.tellg());
    in.seekg(0);
    const uint64_t header_bytes = sizeof(int32_t) * kTokenFileHeaderInts;
    SS_CHECK(size >= header_bytes, "token file '" << path << "' is " << size << " bytes, shorter than the "
             << header_bytes << "-byte header of llm.c's format; it is truncated or not a token file");

    int32_t header[kTokenFileHeaderInts];
    in.read(reinterpret_cast<char*>(header), sizeof(header));
    SS_CHECK(header[0] == kTokenFileMagic, "token file '" << path << "' starts with magic " << header[0]
             << ", not " << kTokenFileMagic << "; it is not an llm.c token file (write one with "
                "ss::write_token_file or llm.c's dev/data scripts)");
    SS_CHECK(header[1] == kTokenFileVersion, "token file '" << path << "' is version " << header[1]
             << "; only version " << kTokenFileVersion << " (uint16 GPT-2 tokens) is supported"
             << (header[1] == 2 ? " (version 2 holds uint32 LLaMA-3 tokens)" : ""));
    SS_CHECK(header[2] >= 0, "token file '" << path << "' says it holds " << header[2]
             << " tokens; the header is corrupt");
    const uint64_t ntok = uint64_t(header[2]);
    const uint64_t want = header_bytes + 2 * ntok;
    SS_CHECK(size == want, "token file '" << path << "' should be " << want << " bytes (1024-byte header + "
             << ntok << " tokens x 2 bytes) but is " << size << " bytes; "
             << (size < want ? "it is truncated, write it again" : "it has trailing bytes, the header count is wrong"));

    std::vector<uint16_t> tokens(ntok);
    in.read(reinterpret_cast<char*>(tokens.data()), std::streamsize(ntok * 2));
    SS_CHECK(in, "token file '" << path << "': reading " << ntok << " tokens failed");
    return tokens;
}

void check_tokens(const std::vector<uint16_t>& tokens, int V, const std::string& source) {
    for (size_t i = 0; i < tokens.size(); ++i) {
        SS_CHECK(int(tokens[i]) < V, source << ": token " << tokens[i] << " at position " << i
                 << " is outside the model's vocabulary of V=" << V
                 << "; use a model with V > the largest token id, or the tokenizer the data was made with");
    }
}

// ---- DataLoader -------------------------------------------------------------------

DataLoader::DataLoader(std::vector<uint16_t> tokens, int B, int T, int process_rank, int num_processes)
    : tokens_(std::move(tokens)), B_(B), T_(T), process_rank_(process_rank), num_processes_(num_processes) {
    SS_CHECK(B > 0 && T > 0, "DataLoader: B=" << B << " and T=" << T << " must both be positive");
    SS_CHECK(num_processes > 0 && process_rank >= 0 && process_rank < num_processes,
             "DataLoader: process_rank=" << process_rank << " must be in [0, num_processes=" << num_processes << ")");
    const int64_t need = int64_t(num_processes) * B * T + 1;
    SS_CHECK(int64_t(tokens_.size()) >= need,
             "DataLoader: " << tokens_.size() << " tokens are too few for one batch of " << num_processes
             << " rank(s) x B=" << B << " x T=" << T << ", which needs " << need
             << " (B*T*ranks + 1 for the last target); use more data or a smaller B, T or rank count");
    inputs_.resize(size_t(B) * T);
    targets_.resize(size_t(B) * T);
}

void DataLoader::reset() { base_ = 0; }

void DataLoader::next_batch() {
    const int64_t S = int64_t(B_) * T_;
    const int64_t group = int64_t(num_processes_) * S;
    // Wrap when the whole group's span (n windows plus the last target) no
    // longer fits: every rank decides the same, so they stay in step.
    if (base_ + group + 1 > int64_t(tokens_.size())) base_ = 0;
    const uint16_t* window = tokens_.data() + base_ + process_rank_ * S;
    for (int64_t i = 0; i < S; ++i) {
        inputs_[i] = window[i];
        targets_[i] = window[i + 1];
    }
    base_ += group;
}

int64_t DataLoader::batches_per_epoch() const {
    return (int64_t(tokens_.size()) - 1) / (int64_t(num_processes_) * B_ * T_);
}

}  // namespace ss
