// sequence_split.cpp — the contiguous and zig-zag token splits (sequence_split.h).
#include "model/sequence_split.h"

#include "core/check.h"

namespace ss {

bool zigzag_split(SpMode mode, RingSplit split, int sp) {
    return mode == SpMode::ring && split == RingSplit::zigzag && sp > 1;
}

std::vector<SeqPiece> sequence_pieces(bool zigzag, int sp_rank, int sp, int T) {
    const int Tl = T / sp;
    if (!zigzag) return {SeqPiece{0, sp_rank * Tl, Tl}};
    const int Tc = Tl / 2;  // 2 sp chunks: mine are sp_rank (the head) and 2 sp - 1 - sp_rank (the tail)
    return {SeqPiece{0, sp_rank * Tc, Tc}, SeqPiece{Tc, (2 * sp - 1 - sp_rank) * Tc, Tc}};
}

void check_sequence_split(SpMode mode, RingSplit split, int sp, int T) {
    if (sp <= 1) return;
    SS_CHECK(T % sp == 0, "SP=" << sp << " does not divide the sequence length T=" << T
                                << "; choose SP from the divisors of " << T);
    SS_CHECK(!zigzag_split(mode, split, sp) || T % (2 * sp) == 0,
             "--ring-split zigzag cuts the sequence into 2 x SP = " << 2 * sp << " chunks, which does not divide T="
                                                                  << T << "; choose T a multiple of " << 2 * sp
                                                                  << ", another SP, or --ring-split contiguous");
}

}  // namespace ss
