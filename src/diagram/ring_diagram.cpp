// ring_diagram.cpp — `shardscope diagram ring`: ring attention's passes over sp ranks,
// under the zig-zag split (the default) or the contiguous one (--ring-split contiguous).
//
//   contiguous  rank 0       rank 1       rank 2       rank 3      (each: the queries of T/sp tokens)
//   step 0:     K0V0 causal  K1V1 causal  K2V2 causal  K3V3 causal
//   step 1:     K3V3 skip    K0V0 full    K1V1 full    K2V2 full
//   ...
//   zig-zag     (each rank: the queries of its head chunk h and tail chunk t, T/(2 sp) tokens each)
//   step 0:     own: hh causal, th, tt causal       (every rank, every step: 2 chunk blocks of work)
//   step 1:     rank 0: t x K3's h, t   rank 1..3: h, t x K(r-1)'s h
//   one step:  rank 0 --K0V0--> rank 1 --K1V1--> rank 2 --K2V2--> rank 3
//                 ^------------------- K3V3 ---------------------'
//
// Every cell and arrow is ring_step's (parallel/ring_attention.h): the same function
// RingAttention::ring_forward and ring_backward ask, at every step, whose block they
// hold, whether to compute it and where to pass it. So if the rule changes, so does this.
#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "diagram/diagram.h"
#include "parallel/ring_attention.h"

namespace ss::diagram {

namespace {

constexpr int kCellW = 160, kCellH = 40, kGapX = 50, kGapY = 8;
constexpr int kX0 = 80;  // left of the grid: the step labels sit before it

std::string tokens(int first, int count) {
    return "t" + std::to_string(first) + "..t" + std::to_string(first + count - 1);
}

std::string kv_name(int owner) { return "K" + std::to_string(owner) + " V" + std::to_string(owner); }

// The tokens of sp rank r's pieces: "t0..t7" or "t0..t7, t56..t63".
std::string pieces_text(bool zigzag, int r, int sp, int T) {
    std::string out;
    for (const SeqPiece& p : sequence_pieces(zigzag, r, sp, T)) out += (out.empty() ? "" : ", ") + tokens(p.pos, p.len);
    return out;
}

// The products of a zig-zag step: "hh causal, th, tt causal" (my query chunk, then the key chunk).
std::string pairs_text(const RingStep& st) {
    if (st.pairs.empty()) return "skipped (ahead)";
    std::string out;
    for (const RingPair& p : st.pairs) {
        out += out.empty() ? "" : ", ";
        out += std::string(p.q_piece == 0 ? "h" : "t") + (p.k_piece == 0 ? "h" : "t");
        if (p.block == RingBlock::diagonal) out += " causal";
    }
    return out;
}

std::string work_text(double w) {  // 0.5 -> "0.5", 2 -> "2"
    const long halves = std::lround(w * 2);
    return std::to_string(halves / 2) + (halves % 2 ? ".5" : "");
}

const char* block_name(RingBlock b) {
    switch (b) {
        case RingBlock::diagonal: return "causal (diagonal)";
        case RingBlock::full: return "full";
        case RingBlock::skipped: return "skipped (ahead)";
    }
    return "";
}

}  // namespace

Svg draw_ring(const GPT2Config& cfg, int sp, RingSplit split) {
    const int T = cfg.maxT, C = cfg.C;
    std::string divisors;
    for (int d = 2; d <= 8; ++d)
        if (T % d == 0) divisors += (divisors.empty() ? "" : ", ") + std::to_string(d);
    SS_CHECK(sp >= 2 && sp <= 8 && T % sp == 0,
             "--sp " << sp << ": ring attention gives each rank T/sp tokens, and the picture draws 2 to 8 ranks "
                     << "that divide T = " << T << " (model " << cfg.name << "); choose --sp in {" << divisors
                     << "}");
    const bool zz = zigzag_split(SpMode::ring, split, sp);
    SS_CHECK(!zz || T % (2 * sp) == 0, "--sp " << sp << ": --ring-split zigzag cuts T = " << T
                                                << " into 2 x sp chunks; choose --sp with 2 sp dividing T, or "
                                                << "--ring-split contiguous");
    const int Tl = T / sp;

    // Ask the engine's rule for every (rank, step), and check that the blocks really
    // travel: what rank r holds at step k is what its left neighbour held at step k-1.
    std::vector<std::vector<RingStep>> grid;  // [rank][step]
    for (int r = 0; r < sp; ++r) {
        grid.emplace_back();
        for (int k = 0; k < sp; ++k) grid.back().push_back(ring_step(r, k, sp, split));
    }
    for (int r = 0; r < sp; ++r)
        for (int k = 1; k < sp; ++k) {
            const RingStep& now = grid[size_t(r)][size_t(k)];
            SS_CHECK(now.owner == grid[size_t(now.recv_from)][size_t(k - 1)].owner &&
                         grid[size_t(now.recv_from)][size_t(k - 1)].send_to == r,
                     "ring picture: rank " << r << " at step " << k << " holds a block its left neighbour did not "
                                           << "send it (parallel/ring_attention.cpp, ring_step)");
        }

    const int col = kCellW + kGapX, y_grid = 118;
    const int y_count = y_grid + sp * (kCellH + kGapY) + 16;
    const int y_step = y_count + 62;  // the one-step panel's boxes
    const int width = std::max(kX0 + sp * col + 10, 980);
    Svg s(width, y_step + kCellH + 166);
    s.text(10, 24, "Ring attention: the keys and values go round the ring, sp = " + std::to_string(sp) + ", " +
                       (zz ? "zig-zag split" : "contiguous split") + " (model " + cfg.name + ", T = " +
                       std::to_string(T) + ", T/sp = " + std::to_string(Tl) + ")",
           Anchor::start, 15, "#222222", true);
    s.text(10, 44, "each rank keeps the queries of its own tokens; a cell = the block of keys and values it holds "
                   "at that step, coloured by the rank it came from",
           Anchor::start, 12, "#555555");
    if (zz)
        s.text(10, 62, "zig-zag: rank r holds chunks r (h, head) and 2sp-1-r (t, tail) of 2 sp; a cell lists its "
                       "products, my query chunk then their key chunk",
               Anchor::start, 12, "#555555");
    else
        s.text(10, 62, "the causal mask: its own block is causal within (diagonal, triangle); an earlier rank's is "
                       "seen whole (full, square); a later rank's is skipped",
               Anchor::start, 12, "#555555");

    // The grid: a column per rank, a row per step.
    for (int r = 0; r < sp; ++r) {
        const int x = kX0 + r * col;
        s.text(x + kCellW / 2, y_grid - 22, "rank " + std::to_string(r), Anchor::middle, 12, "#222222", true);
        s.text(x + kCellW / 2, y_grid - 8, "Q of " + pieces_text(zz, r, sp, T), Anchor::middle, 10, "#555555");
    }
    for (int k = 0; k < sp; ++k) {
        const int y = y_grid + k * (kCellH + kGapY);
        s.text(10, y + kCellH / 2 + 4, "step " + std::to_string(k), Anchor::start, 12, "#222222", true);
        for (int r = 0; r < sp; ++r) {
            const RingStep& st = grid[size_t(r)][size_t(k)];
            const int x = kX0 + r * col;
            const bool skipped = st.block == RingBlock::skipped;
            const std::string ink = skipped ? "#888888" : "#ffffff";
            s.rect(x, y, kCellW, kCellH, skipped ? "#eeeeee" : svg_colour(st.owner),
                   skipped ? svg_colour(st.owner) : "#ffffff");
            // A glyph of the mask's [queries x keys] block: the lower triangle, or all of it.
            if (!zz && st.block == RingBlock::diagonal)
                s.polyline({{x + 6, y + 12}, {x + 6, y + 28}, {x + 22, y + 28}, {x + 6, y + 12}}, "#ffffff", 1);
            if (!zz && st.block == RingBlock::full)
                s.polyline({{x + 6, y + 12}, {x + 6, y + 28}, {x + 22, y + 28}, {x + 22, y + 12}, {x + 6, y + 12}},
                           "#ffffff", 1);
            s.text(x + kCellW / 2, y + 16,
                   kv_name(st.owner) + (zz ? "" : "  (" + pieces_text(zz, st.owner, sp, T) + ")"), Anchor::middle,
                   11, ink, true);
            s.text(x + kCellW / 2, y + 32, zz ? pairs_text(st) : block_name(st.block), Anchor::middle, 10, ink);
        }
    }
    // The uneven work the causal mask leaves.
    s.text(10, y_count, "computed:", Anchor::start, 11, "#222222", true);
    for (int r = 0; r < sp; ++r) {
        int n = 0;
        double work = 0;  // in (T/sp)^2 blocks, a diagonal one half (ring_step)
        for (int k = 0; k < sp; ++k) {
            n += grid[size_t(r)][size_t(k)].block != RingBlock::skipped;
            work += grid[size_t(r)][size_t(k)].work;
        }
        s.text(kX0 + r * col + kCellW / 2, y_count,
               std::to_string(n) + " of " + std::to_string(sp) + " steps, work " + work_text(work), Anchor::middle, 11,
               "#222222");
    }

    // One step's send and recv, from step 0 to step 1 (every step moves the same way).
    s.text(10, y_step - 26, "one step (0 -> 1): each rank sends the block it holds to send_to and takes the next "
                            "from recv_from; sends first, so no one waits on a send",
           Anchor::start, 12, "#222222", true);
    for (int r = 0; r < sp; ++r) {
        const RingStep& st = grid[size_t(r)][0];
        const int x = kX0 + r * col;
        s.rect(x, y_step, kCellW, kCellH, "#f7f7f7", "#333333");
        s.text(x + kCellW / 2, y_step + 16, "rank " + std::to_string(r), Anchor::middle, 11, "#222222", true);
        s.text(x + kCellW / 2, y_step + 32,
               "holds " + kv_name(st.owner) + ", then " + kv_name(grid[size_t(r)][1].owner), Anchor::middle, 10,
               "#555555");
    }
    const int y_wrap = y_step + kCellH + 22;
    for (int r = 0; r < sp; ++r) {
        const RingStep& st = grid[size_t(r)][0];
        const int from_x = kX0 + r * col, to_x = kX0 + st.send_to * col, ym = y_step + kCellH / 2;
        if (st.send_to == r + 1) {  // the neighbour to the right: straight across the gap
            s.line(from_x + kCellW, ym, to_x - 2, ym, svg_colour(st.owner), 2, false, true);
            s.text(from_x + kCellW + kGapX / 2, ym - 5, kv_name(st.owner), Anchor::middle, 9, "#222222");
        } else {  // the ring closes: down, back along the bottom, up into the first rank
            const int x1 = from_x + kCellW / 2, x2 = to_x + kCellW / 2;
            s.line(x1, y_step + kCellH, x1, y_wrap, svg_colour(st.owner), 2);
            s.line(x1, y_wrap, x2, y_wrap, svg_colour(st.owner), 2);
            s.line(x2, y_wrap, x2, y_step + kCellH + 2, svg_colour(st.owner), 2, false, true);
            s.text((x1 + x2) / 2, y_wrap + 14,
                   "rank " + std::to_string(r) + " sends " + kv_name(st.owner) + " to rank " +
                       std::to_string(st.send_to) + ": the ring closes",
                   Anchor::middle, 10, "#222222");
        }
    }

    const double block_bytes = double(Tl) * 2 * C * 4;  // [T/sp, 2C] floats of k | v, one sequence
    const int yb = y_wrap + 44;
    s.note(10, yb, "forward: " + std::to_string(sp - 1) + " sends per rank per layer, each [T/sp, 2C] = " +
                       std::to_string(Tl) + " x " + std::to_string(2 * C) + " floats = " + svg_bytes(block_bytes) +
                       " per sequence (fp32)");
    s.note(10, yb + 18, "backward: the blocks go round again; the others' part of each block's dK dV is summed on "
                        "the way, from the rank after its owner, and the last send lands home (" +
                            std::to_string(sp - 1) + " hops, as the blocks)");
    s.note(10, yb + 36, "cells and arrows from ring_step (parallel/ring_attention.h), the rule "
                        "RingAttention::ring_forward and ring_backward run at every step");
    s.note(10, yb + 54, "work: in (T/sp) x (T/sp) blocks of scores, a causal (diagonal) one half; the step's "
                        "slowest rank sets its time");
    s.note(10, yb + 72, "drawn by: shardscope diagram ring " + model_flags_of(cfg) + " --sp " + std::to_string(sp) +
                            (zz ? "" : " --ring-split contiguous"));
    return s;
}

}  // namespace ss::diagram
