// rng.h — counter-based random numbers: a value is a pure function of
// (seed, stream, index), with no state carried between calls.
//
// This is what lets every shard initialise its own slice of a parameter
// exactly as the single-rank model would (DESIGN.md, "Parameters and their
// shards"): element i of parameter P is f(seed, hash(P), i), whichever rank
// computes it, and ZeRO-3 never has to build the whole model on one rank.
//
// The mixing function is SplitMix64 (Steele, Lea & Flood 2014), applied to
// the counter; two 32-bit halves feed a Box-Muller transform for normals.
#pragma once

#include <cstdint>
#include <string_view>

namespace ss {

/// 64-bit FNV-1a hash of a name (used as the stream id of a parameter).
uint64_t hash_name(std::string_view name);

/// A well-mixed 64-bit value for (seed, stream, index).
uint64_t counter_hash(uint64_t seed, uint64_t stream, uint64_t index);

/// A standard normal sample for (seed, stream, index).
float counter_normal(uint64_t seed, uint64_t stream, uint64_t index);

/// A uniform sample in [0, 1) for (seed, stream, index).
float counter_uniform(uint64_t seed, uint64_t stream, uint64_t index);

}  // namespace ss
