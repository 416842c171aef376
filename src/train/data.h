// data.h — token files and the DataLoader that cuts them into batches.
//
// Token file: llm.c's format (dev/data/data_common.py, write_datafile), so the
// files its scripts make (tinyshakespeare, fineweb, ...) load as they are:
//
//   [ 256 x int32 header: magic 20240520, version 1, number of tokens, 0 ... ]
//   [ number-of-tokens x uint16 token ids                                     ]
//
// DataLoader: llm.c's scheme. Each batch is one window of B*T+1 consecutive
// tokens; inputs are its first B*T tokens and targets the last B*T (each target
// is the token after its input), both read as B rows of T.
//
// Data parallelism: rank r of n reads the r-th window of every group of n
// consecutive windows. With S = B*T:
//
//   tokens:   |  w0  |  w1  |  w2  |  w3  |  w4  |  w5  | ...     (n = 3)
//   step 0:    rank0  rank1  rank2
//   step 1:                         rank0  rank1  rank2
//
//   rank r's window at step s starts at  base(s) + r*S,
//   base(0) = 0, base(s+1) = base(s) + n*S, and base goes back to 0 whenever
//   base + n*S + 1 > number of tokens (all ranks wrap together).
//
// So the n ranks together read exactly the tokens one rank with batch n*B
// reads, in the same order: rank r's rows are rows r*B .. r*B+B-1 of that
// rank's [n*B, T] batch, step after step, wrap-arounds included.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ss {

/// llm.c token-file magic number (header[0]).
constexpr int32_t kTokenFileMagic = 20240520;
/// llm.c token-file version for uint16 tokens (header[1]).
constexpr int32_t kTokenFileVersion = 1;
/// Header size in int32 values (1024 bytes).
constexpr int kTokenFileHeaderInts = 256;

/// Writes @p tokens to @p path in llm.c's format (via `path + ".tmp"` and a rename).
void write_token_file(const std::string& path, const std::vector<uint16_t>& tokens);

/// Reads an llm.c token file. Throws ss::Error naming the path for a missing
/// file, a bad magic number or version, or a size that does not match the header.
std::vector<uint16_t> read_token_file(const std::string& path);

/// Throws ss::Error if any token is >= @p V (naming the first such token, its
/// position and @p source, e.g. the file it came from).
void check_tokens(const std::vector<uint16_t>& tokens, int V, const std::string& source = "tokens");

/// Serves [B, T] batches of inputs and targets from a token sequence, sharded
/// over data-parallel ranks as described at the top of this file.
class DataLoader {
public:
    /// Throws ss::Error if @p tokens has fewer than num_processes*B*T + 1 tokens
    /// or if the rank/size/B/T values are out of range.
    DataLoader(std::vector<uint16_t> tokens, int B, int T, int process_rank = 0, int num_processes = 1);

    /// Loads the next batch into inputs() and targets().
    void next_batch();
    /// Back to the first batch.
    void reset();

    /// The current batch's inputs, B*T token ids, row-major [B, T].
    const std::vector<int32_t>& inputs() const { return inputs_; }
    /// The current batch's targets, B*T token ids, row-major [B, T].
    const std::vector<int32_t>& targets() const { return targets_; }

    /// Sequences per batch (rows).
    int B() const { return B_; }
    /// Tokens per sequence (columns).
    int T() const { return T_; }
    /// This rank's index r among the data-parallel ranks.
    int process_rank() const { return process_rank_; }
    /// Number n of data-parallel ranks sharing the tokens.
    int num_processes() const { return num_processes_; }
    /// Length of the whole token sequence.
    int64_t num_tokens() const { return int64_t(tokens_.size()); }
    /// Where this rank's next window starts (before any wrap-around).
    int64_t position() const { return base_ + int64_t(process_rank_) * B_ * T_; }
    /// Steps before the loader wraps back to the first batch: floor((N - 1) / (n*B*T)).
    int64_t batches_per_epoch() const;

private:
    std::vector<uint16_t> tokens_;
    int B_, T_, process_rank_, num_processes_;
    int64_t base_ = 0;  // start of the current group of n windows
    std::vector<int32_t> inputs_, targets_;
};

}  // namespace ss
