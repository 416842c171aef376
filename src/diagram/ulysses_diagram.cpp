// ulysses_diagram.cpp — `shardscope diagram ulysses`: the all-to-all before attention.
//
//   before (each rank: T/sp tokens, all H heads)      after (each rank: all T tokens, H/sp heads)
//   rank 0: t0..t3 x h0 h1 | h2 h3  ---+------------>  rank 0: t0..t7 x h0 h1
//   rank 1: t4..t7 x h0 h1 | h2 h3  ---+------------>  rank 1: t0..t7 x h2 h3
//
// The cells are not computed from a formula: the sp ranks run the engine's own
// UlyssesComm::seq_to_heads (parallel/sequence_parallel.h) over the threads
// backend on tagged activations (value = token x C + channel), and the picture
// reads where each tag landed. So if the all-to-all changes, so does this.
#include <algorithm>

#include "comm/threads/threads_backend.h"
#include "core/check.h"
#include "diagram/diagram.h"
#include "parallel/sequence_parallel.h"

namespace ss::diagram {

namespace {

constexpr int kCellW = 30, kCellH = 18, kGapX = 50;

}  // namespace

Svg draw_ulysses(const GPT2Config& cfg, int sp, int tokens) {
    const int H = cfg.H, C = cfg.C, hs = cfg.hs();
    SS_CHECK(sp >= 2 && sp <= 8 && H % sp == 0,
             "--sp " << sp << ": Ulysses needs sp to divide the heads H = " << H << " (model " << cfg.name
                     << "); choose a divisor of H from 2 up, e.g. --sp 2");
    SS_CHECK(tokens >= sp && tokens <= 32 && tokens % sp == 0,
             "--tokens " << tokens << ": choose a multiple of --sp " << sp << " up to 32, e.g. --tokens 8");
    const int Tl = tokens / sp, Hs = H / sp;

    // Run the real all-to-all: rank r holds tokens [r Tl, (r+1) Tl), every channel.
    std::vector<std::vector<float>> after(static_cast<size_t>(sp));
    run_threads(sp, [&](Comm& comm) {
        Group g{"sp", {}};
        for (int r = 0; r < sp; ++r) g.ranks.push_back(r);
        Ledger ledger;  // the all-to-all's buffers are booked here and forgotten with it
        UlyssesComm ulysses(comm, g, ledger);
        const int r = comm.rank();
        std::vector<float> src(size_t(Tl) * C), dst(size_t(tokens) * C / sp);
        for (int t = 0; t < Tl; ++t)
            for (int c = 0; c < C; ++c) src[size_t(t) * C + c] = float((r * Tl + t) * C + c);
        ulysses.seq_to_heads(src.data(), dst.data(), 1, Tl, C, 1, 0, false);
        after[size_t(r)] = std::move(dst);
    });

    const int box_before = H * kCellW, box_after = Hs * kCellW;
    const int row_w = std::max(sp * (box_before + kGapX), sp * (box_after + kGapX));
    const int y_before = 96, y_after = y_before + Tl * kCellH + 130;
    Svg s(std::max(row_w + 60, 1000), y_after + tokens * kCellH + 90);
    s.text(10, 24, "Ulysses sequence parallelism: the all-to-all before attention, sp = " + std::to_string(sp) +
                       " (model " + cfg.name + ", H = " + std::to_string(H) + " heads, T = " +
                       std::to_string(tokens) + " tokens drawn)",
           Anchor::start, 15, "#222222", true);
    s.text(10, 44, "a cell = one token's channels of one head; its colour = the rank that held the token before",
           Anchor::start, 12, "#555555");
    s.text(10, y_before - 30, "before: [T/sp = " + std::to_string(Tl) + " tokens, all H = " + std::to_string(H) +
                                  " heads] on each rank",
           Anchor::start, 12, "#222222", true);
    s.text(10, y_after - 30, "after seq_to_heads: [all T = " + std::to_string(tokens) + " tokens, H/sp = " +
                                 std::to_string(Hs) + " heads] on each rank: attention over the whole sequence",
           Anchor::start, 12, "#222222", true);
    const int x_before0 = 50, x_after0 = 50;
    for (int r = 0; r < sp; ++r) {
        // Before: what rank r holds (its own tokens, every head).
        const int xb = x_before0 + r * (box_before + kGapX);
        s.text(xb, y_before - 12, "rank " + std::to_string(r), Anchor::start, 12, "#222222", true);
        for (int h = 0; h < H; ++h) s.text(xb + h * kCellW + kCellW / 2, y_before - 1, "h" + std::to_string(h),
                                             Anchor::middle, 9, "#555555");
        for (int t = 0; t < Tl; ++t)
            for (int h = 0; h < H; ++h) {
                s.rect(xb + h * kCellW, y_before + 2 + t * kCellH, kCellW, kCellH, svg_colour(r), "#ffffff");
                s.text(xb + h * kCellW + kCellW / 2, y_before + 2 + t * kCellH + 13, "t" + std::to_string(r * Tl + t),
                       Anchor::middle, 9, "#ffffff");
            }
        for (int j = 1; j < sp; ++j)  // where the heads split: group j goes to rank j
            s.line(xb + j * Hs * kCellW, y_before - 2, xb + j * Hs * kCellW, y_before + 4 + Tl * kCellH, "#222222", 2);
        // After: read back where each tag landed.
        const int xa = x_after0 + r * (box_after + kGapX);
        s.text(xa, y_after - 12, "rank " + std::to_string(r), Anchor::start, 12, "#222222", true);
        const std::vector<float>& d = after[size_t(r)];
        const int W = C / sp;
        for (int hh = 0; hh < Hs; ++hh) {
            const int tag0 = int(d[size_t(hh) * hs]);
            s.text(xa + hh * kCellW + kCellW / 2, y_after - 1, "h" + std::to_string((tag0 % C) / hs), Anchor::middle,
                   9, "#555555");
        }
        for (int t = 0; t < tokens; ++t)
            for (int hh = 0; hh < Hs; ++hh) {
                const int tag = int(d[size_t(t) * W + size_t(hh) * hs]);
                const int token = tag / C, head = (tag % C) / hs;
                SS_CHECK(head == r * Hs + hh, "ulysses picture: rank " << r << " got head " << head << " in column "
                                                                       << hh << " (parallel/sequence_parallel.cpp)");
                s.rect(xa + hh * kCellW, y_after + 2 + t * kCellH, kCellW, kCellH, svg_colour(token / Tl), "#ffffff");
                s.text(xa + hh * kCellW + kCellW / 2, y_after + 2 + t * kCellH + 13, "t" + std::to_string(token),
                       Anchor::middle, 9, "#ffffff");
            }
        // Rank r's head group j travels to rank j, landing at token rows [r Tl, (r+1) Tl).
        for (int j = 0; j < sp; ++j) {
            const int x1 = xb + j * Hs * kCellW + Hs * kCellW / 2, y1 = y_before + 6 + Tl * kCellH;
            const int x2 = x_after0 + j * (box_after + kGapX) + box_after / 2;
            s.line(x1, y1, x2, y_after - 48, svg_colour(r), 1, false, true);
        }
    }
    const int yb = y_after + tokens * kCellH + 20;
    s.note(10, yb, "one all_to_all of B T C / sp elements per rank (3x for q|k|v); after attention heads_to_seq "
                   "moves the output back: [T, H/sp heads] -> [T/sp, H]");
    s.note(10, yb + 18, "cells read from the output of UlyssesComm::seq_to_heads (parallel/sequence_parallel.cpp), "
                        "run on " + std::to_string(sp) + " threads");
    s.note(10, yb + 36, "drawn by: shardscope diagram ulysses " + model_flags_of(cfg) + " --sp " + std::to_string(sp) +
                            " --tokens " + std::to_string(tokens));
    return s;
}

}  // namespace ss::diagram
