// odd_vocab.h — training data for a model whose vocabulary is not a multiple
// of TP (V = 101, 211, ...), so that wte is padded (model/config.h, padded_vocab).
#pragma once

#include <string>
#include <vector>

#include "equivalence.h"
#include "train/corpus.h"
#include "train/data.h"

/// A token file of the built-in corpus with every byte taken mod @p V, so every
/// token is a word of a V-word vocabulary; returns its path (in the build folder).
inline std::string odd_vocab_tokens(int V) {
    std::vector<uint16_t> tokens = ss::builtin_corpus_tokens();
    for (uint16_t& t : tokens) t = uint16_t(t % V);
    const std::string path = test_file("tokens_mod_" + std::to_string(V) + ".bin");
    ss::write_token_file(path, tokens);
    return path;
}
