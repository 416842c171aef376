// pipeline_chart.cpp — `shardscope schedule`'s text chart of a pipeline
// schedule: the simulated timeline (pipeline_simulate.cpp) as one row per rank,
// then the phases, the step's length and the bubble (pipeline_schedule.h).
#include "schedule/pipeline_schedule.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace ss {

namespace {

// Exactly, as the schedule's times are (multiples of 1/v): 12333, 203.25; no rounding, no exponent.
std::string fmt_num(double x) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.4f", x);
    std::string s = buf;
    s.erase(s.find_last_not_of('0') + 1);
    if (s.back() == '.') s.pop_back();
    return s;
}

// Chunks are letters while the alphabet lasts (a = chunk 0 ... z = chunk 25);
// with more chunks every label names its chunk by number instead ("c26").
constexpr int kLetterChunks = 26;

}  // namespace

std::string pipe_cell_label(const PipeAction& a, int v) {
    std::string s = (a.op == PipeOp::forward ? "F" : "B") + std::to_string(a.micro);
    if (v > kLetterChunks) s += "c" + std::to_string(a.chunk);
    else if (v > 1) s += char('a' + a.chunk);
    return s;
}

std::string pipe_schedule_chart(const PipeSchedule& s) {
    const PipeStats st = check_pipe_schedule(s);
    const PipeRun t = simulate_pipe_lists(s.ranks, s.spec.v, 1, 2);  // the check above ran it too, so it finishes
    const PipeSpec& sp = s.spec;
    const int p = sp.p, m = sp.m, v = sp.v;
    const bool inter = sp.kind == Schedule::interleaved;

    // grid[r][tick]: what rank r computes in that tick ("" = idle).
    std::vector<std::vector<std::string>> grid(p, std::vector<std::string>(t.makespan));
    size_t width = 1;
    for (int r = 0; r < p; ++r)
        for (size_t i = 0; i < s.ranks[r].size(); ++i) {
            const PipeAction& a = s.ranks[r][i];
            if (a.op != PipeOp::forward && a.op != PipeOp::backward) continue;
            const std::string label = pipe_cell_label(a, v);
            width = std::max(width, label.size());
            for (long k = 0; k < (a.op == PipeOp::forward ? 1 : 2); ++k) grid[r][t.start[r][i] + k] = label;
        }

    std::ostringstream os;
    os << "schedule " << schedule_name(sp.kind) << ": p=" << p << " stages, m=" << m << " micro-batches";
    if (inter) os << ", v=" << v << " model chunks per stage (virtual stage = chunk x p + rank)";
    os << "\n";
    if (inter && v > kLetterChunks)
        os << "one column = a chunk's forward (1/" << v << " of a stage's); F3c27 = forward of micro-batch 3 through "
           << "chunk 27;\nB3c27 = its backward (two columns); . = idle\n";
    else if (inter) {
        // The legend names the chunks there are: "b = chunk 1" at v = 2, "b, c, d, ... = chunks 1, 2, 3, ..." past 4.
        std::string letters, numbers;
        for (int c = 1; c < std::min(v, 4); ++c) {
            letters += std::string(c > 1 ? ", " : "") + char('a' + c);
            numbers += (c > 1 ? ", " : "") + std::to_string(c);
        }
        if (v > 4) letters += ", ...", numbers += ", ...";
        os << "one column = a chunk's forward (1/" << v << " of a stage's); F3a = forward of micro-batch 3 through chunk a,\n"
           << letters << (v > 2 ? " = chunks " : " = chunk ") << numbers << "; B3a = its backward (two columns); . = idle\n";
    }
    else
        os << "one column = one forward (F3 = forward of micro-batch 3); a backward (B3) takes two; . = idle\n";

    // Time runs right, wrapped into blocks so that a line stays under ~120 characters.
    const std::string rank_w = std::to_string(p - 1);
    const size_t prefix = 5 + rank_w.size() + 3;  // "rank " N " | "
    const long fit = std::max<long>(1, long((120 - prefix) / (width + 1)));
    const long blocks = (t.makespan + fit - 1) / fit, per_block = (t.makespan + blocks - 1) / blocks;
    for (long from = 0; from < t.makespan; from += per_block) {
        const long to = std::min(t.makespan, from + per_block);
        if (blocks > 1) os << "(columns " << from << " to " << to - 1 << " of " << t.makespan << ")\n";
        for (int r = 0; r < p; ++r) {
            std::string row = "rank " + std::string(rank_w.size() - std::to_string(r).size(), ' ') + std::to_string(r) + " |";
            for (long k = from; k < to; ++k) {
                const std::string& c = grid[r][k].empty() ? std::string(".") : grid[r][k];
                row += " " + c + std::string(width - c.size(), ' ');
            }
            while (!row.empty() && row.back() == ' ') row.pop_back();
            os << row << "\n";
        }
    }

    // The phases as the schedule's loops run them (section 1): warm-up
    // forwards, steady forward-backward pairs, cool-down backwards.
    os << (inter ? "chunk " : "") << "warm-up/steady/cool-down, rank 0 to " << p - 1 << ":";
    for (int r = 0; r < p; ++r) {
        const int warmup = pipe_warmup(sp, r);
        os << " " << warmup << "/" << m * v - warmup << "/" << warmup;
    }
    os << "\n";
    os << "step: " << fmt_num(st.makespan) << " time units (a stage's forward = 1, its backward = 2, messages free); "
       << "every rank computes " << 3 * m << " and waits " << fmt_num(st.idle[0]) << "\n";

    const std::string formula = inter ? "(p-1)/(v m) = " + std::to_string(p - 1) + "/(" + std::to_string(v) + "x" +
                                            std::to_string(m) + ")"
                                      : "(p-1)/m = " + std::to_string(p - 1) + "/" + std::to_string(m);
    os << "bubble: " << formula << " = " << fmt_num(pipe_bubble_formula(sp))
       << " of the compute time (counted from the lists: " << fmt_num(st.bubble_fraction) << "); at most "
       << st.max_in_flight[0];
    if (inter)
        os << " chunks (" << fmt_num(double(st.max_in_flight[0]) / v) << " micro-batches) in flight on rank 0 (1F1B: "
           << std::min(p, m) << ", GPipe: " << m << ")\n";
    else
        os << " micro-batches in flight on rank 0 ("
           << (sp.kind == Schedule::gpipe ? "1F1B: " + std::to_string(std::min(p, m)) : "GPipe: " + std::to_string(m))
           << ")\n";
    return os.str();
}

}  // namespace ss
