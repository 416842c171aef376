// corpus.h — a small built-in English text, so the demo trains without a download.
//
// The text explains the ideas ShardScope teaches (data parallelism, ZeRO,
// tensor, sequence and pipeline parallelism, the global batch size) in plain
// paragraphs, followed by generated sentences that work the GBS arithmetic for
// many layouts. Tokens are its bytes (a byte-level "tokenizer"): ids 0..255,
// so a model trained on it needs V >= 256. About 30 KB: enough for the loss to
// fall visibly in a few hundred steps of a tiny GPT-2, small enough to embed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ss {

/// Vocabulary size of the built-in corpus (byte-level tokens).
constexpr int kBuiltinCorpusVocab = 256;

/// The built-in text (the same on every call).
const std::string& builtin_corpus_text();

/// The built-in text as tokens: one token per byte, values 0..255.
std::vector<uint16_t> builtin_corpus_tokens();

}  // namespace ss
