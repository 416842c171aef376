// sequence_split.h — which tokens of each sequence an sp rank holds.
//
// Contiguous (Ulysses, whose all-to-all needs each rank's tokens in one run;
// ring attention with --ring-split contiguous): with Tl = T / SP, sp rank i
// holds positions [i Tl, (i+1) Tl).
//
// Zig-zag (ring attention's default; the load balancing of Megatron-LM's
// context parallelism and torchtitan's head-tail load balancer): the sequence
// is cut into 2 SP chunks of Tc = T / (2 SP) and sp rank i holds chunk i and
// chunk 2SP-1-i, one from each end. Under the causal mask a query's work grows
// with its position; pairing an early chunk with a late one gives every rank
// the same work at every step of the ring (parallel/ring_attention.h has the
// table).
//
//     T = 16, SP = 2, Tc = 4    positions  0..3   4..7   8..11  12..15
//         contiguous                       rank 0 rank 0 rank 1 rank 1
//         zig-zag                          rank 0 rank 1 rank 1 rank 0
//
// A rank's Tl rows hold its pieces in order: under zig-zag, local rows
// [0, Tc) are chunk i and [Tc, 2 Tc) chunk 2SP-1-i. The token split
// (train/train.cpp), the position embedding (model/layers.cpp) and ring
// attention's causal mask all read positions from here. The loss is a mean
// over tokens, so the split changes it only by summation order.
#pragma once

#include <vector>

#include "mesh/layout_names.h"

namespace ss {

/// Local rows [row, row + len) of a sequence on an sp rank hold the tokens at positions [pos, pos + len).
struct SeqPiece {
    int row;  ///< first local row
    int pos;  ///< its position in the whole sequence
    int len;  ///< rows in the piece
};

/// True when the tokens are split zig-zag: ring attention over more than one rank with split zigzag.
bool zigzag_split(SpMode mode, RingSplit split, int sp);

/// The pieces of a sequence of @p T tokens that sp rank @p sp_rank of @p sp holds: one
/// (contiguous) or two of T / (2 sp) tokens (zig-zag), in local-row order.
std::vector<SeqPiece> sequence_pieces(bool zigzag, int sp_rank, int sp, int T);

/// Checks that a sequence of @p T tokens splits over @p sp ranks as the layout asks: SP divides
/// T, and under zig-zag 2 SP does. Train and plan both call it; throws ss::Error saying what to change.
void check_sequence_split(SpMode mode, RingSplit split, int sp, int T);

}  // namespace ss
