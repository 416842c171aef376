// checksum.h — FNV-1a, 64 bits: a fingerprint of a file's bytes.
//
// Checkpoints list each shard's FNV-1a 64 in their manifest and every reader
// (--resume, `checkpoint consolidate`, `checkpoint show`) recomputes it, so a
// shard with one flipped byte, at the right size, is refused with its name
// instead of quietly loading a wrong weight.
//
// The hash (Fowler, Noll, Vo; "The FNV Non-Cryptographic Hash Algorithm",
// draft-eastlake-fnv, sec. 2; http://www.isthe.com/chongo/tech/comp/fnv/):
//
//     h = 14695981039346656037                 (the 64-bit offset basis)
//     for each byte b:  h = (h XOR b) * 1099511628211   (mod 2^64; the 64-bit FNV prime)
//
// Why one changed byte always changes h: for a fixed byte b, h -> (h XOR b) * p
// is a bijection of the 64-bit integers (XOR is, and p is odd, so invertible
// mod 2^64). Two inputs that differ in one byte reach different states after
// it, and the identical bytes that follow keep them different. It guards
// against accidents (disks, copies, truncation-and-padding), not against an
// attacker: anyone can make a file with a chosen FNV hash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ss {

/// The FNV-1a 64 offset basis: the hash of no bytes.
constexpr uint64_t kFnv1a64Basis = 14695981039346656037ull;

/// Continues the FNV-1a 64 hash @p h over @p n bytes at @p data.
uint64_t fnv1a64(const void* data, size_t n, uint64_t h = kFnv1a64Basis);

/// FNV-1a 64 of the whole file at @p path. Throws ss::Error naming it if it cannot be read.
uint64_t fnv1a64_file(const std::string& path);

/// @p h as 16 lower-case hex digits, as manifests store it ("cbf29ce484222325").
std::string hex64(uint64_t h);

}  // namespace ss
