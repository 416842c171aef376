// pipeline_schedule.cpp — GPipe, 1F1B and interleaved 1F1B as lists of
// actions, and the formulas they are held to. The picture and the sources are
// in pipeline_schedule.h; this file follows it:
//   1. the compute order of each schedule (which forward or backward next)
//   2. the lists: each compute wrapped in its receive and its send
//   3. the formulas
// The check and the simulation are in pipeline_check.cpp and pipeline_simulate.cpp,
// the chart in pipeline_chart.cpp.
#include "schedule/pipeline_schedule.h"

#include <algorithm>
#include <cstdint>
#include <set>

#include "core/check.h"

namespace ss {

const char* pipe_op_name(PipeOp op) {
    switch (op) {
        case PipeOp::recv_act: return "recv_act";
        case PipeOp::forward: return "forward";
        case PipeOp::send_act: return "send_act";
        case PipeOp::recv_grad: return "recv_grad";
        case PipeOp::backward: return "backward";
        case PipeOp::send_grad: return "send_grad";
    }
    return "?";
}

namespace {

// Virtual stage of chunk c on pipeline rank r: vs = c * p + r.
int virtual_stage(int p, int rank, int chunk) { return chunk * p + rank; }

// ---- 1. the compute order ---------------------------------------------------------------

struct Compute {
    bool forward;
    int micro, chunk;
};

// GPipe (Huang et al. 2019, fig. 2c): every forward, micro 0..m-1, then every
// backward in reverse, m-1..0, as autograd runs a graph that went forward in
// micro order (the last micro-batch's activations are the freshest). The
// reverse order costs nothing: the last stage can start B(m-1) right after
// F(m-1), and the same is true of B0, so the bubble is the same either way.
std::vector<Compute> gpipe_order(int m) {
    std::vector<Compute> c;
    for (int i = 0; i < m; ++i) c.push_back({true, i, 0});
    for (int i = m - 1; i >= 0; --i) c.push_back({false, i, 0});
    return c;
}

// 1F1B / PipeDream-Flush (Narayanan et al. 2021, sec. 2.2.1, fig. 4 top; Megatron-LM
// schedules.py, forward_backward_pipelining_without_interleaving). Rank r:
//   warm-up:      min(p - r - 1, m) forwards, filling the pipe below it
//   steady state: one forward, one backward, until the forwards run out
//   cool-down:    the remaining backwards
// A rank never holds more than p - r micro-batches' activations (GPipe: m).
// m < p is legal: every rank is all warm-up and cool-down, as in GPipe, and
// the bubble (p-1)/m is just larger than one compute time.
std::vector<Compute> one_f_one_b_order(int p, int m, int rank) {
    const int warmup = std::min(p - rank - 1, m);
    std::vector<Compute> c;
    for (int i = 0; i < warmup; ++i) c.push_back({true, i, 0});
    for (int i = 0; i < m - warmup; ++i) {
        c.push_back({true, warmup + i, 0});
        c.push_back({false, i, 0});
    }
    for (int i = m - warmup; i < m; ++i) c.push_back({false, i, 0});
    return c;
}

// Interleaved 1F1B (Narayanan et al. 2021, sec. 2.2.2, fig. 4 bottom; Megatron-LM
// schedules.py, forward_backward_pipelining_with_interleaving). Each rank
// holds v chunks; it runs m*v chunk-forwards, and the k-th goes through
//   chunk (k mod p v) / p   with micro (k / p v) * p + k mod p,
// so micro-batches pass the chunks in groups of p (hence m % p == 0): micro
// 0..p-1 through chunk 0, then 0..p-1 through chunk 1, ..., then p..2p-1
// through chunk 0. Backwards walk the same way with the chunks reversed.
// Warm-up: 2 (p - r - 1) + (v - 1) p chunk-forwards (at most m v), then
// steady 1F1B, then cool-down, as above.
int interleaved_warmup(int p, int m, int v, int rank) { return std::min(2 * (p - rank - 1) + (v - 1) * p, m * v); }

Compute interleaved_kth(int p, int v, int k, bool forward) {
    const int in_group = k % (p * v);
    const int chunk = in_group / p;
    return {forward, (k / (p * v)) * p + k % p, forward ? chunk : v - 1 - chunk};
}

std::vector<Compute> interleaved_order(int p, int m, int v, int rank) {
    const int total = m * v, warmup = interleaved_warmup(p, m, v, rank);
    std::vector<Compute> c;
    for (int k = 0; k < warmup; ++k) c.push_back(interleaved_kth(p, v, k, true));
    for (int k = 0; k < total - warmup; ++k) {
        c.push_back(interleaved_kth(p, v, warmup + k, true));
        c.push_back(interleaved_kth(p, v, k, false));
    }
    for (int k = total - warmup; k < total; ++k) c.push_back(interleaved_kth(p, v, k, false));
    return c;
}

}  // namespace

void check_pipe_spec(const PipeSpec& s) {
    SS_CHECK(s.p >= 1, "--pp " << s.p << ": a pipeline needs at least 1 stage");
    SS_CHECK(s.m >= 1, "--micro " << s.m << ": a step needs at least 1 micro-batch (--micro / --ga)");
    SS_CHECK(s.v >= 1, "--pp-virtual " << s.v << ": a stage needs at least 1 model chunk");
    // Each chunk computation is ~6 actions in the lists (12 bytes each) and ticks in the
    // simulation: 2^22 of them is ~300 MB, and keeps m v and p v far from int's limit.
    constexpr int64_t kMaxComputes = int64_t(1) << 22;
    SS_CHECK(int64_t(s.p) * s.m * s.v <= kMaxComputes,
             "--pp " << s.p << " x --ga " << s.m << " x --pp-virtual " << s.v << " = " << int64_t(s.p) * s.m * s.v
                     << " chunk computations per step is more than a schedule holds (" << kMaxComputes
                     << "); use fewer micro-batches (--ga) or stages");
    if (s.kind != Schedule::interleaved) {
        SS_CHECK(s.v == 1, "--pp-virtual " << s.v << " needs --schedule interleaved (" << schedule_name(s.kind)
                                           << " runs one model chunk per stage); use --schedule interleaved or --pp-virtual 1");
        return;
    }
    SS_CHECK(s.p >= 2, "--schedule interleaved needs --pp 2 or more (one stage has no pipeline to interleave); "
                       "use --schedule 1f1b");
    SS_CHECK(s.v >= 2, "--schedule interleaved needs --pp-virtual 2 or more (model chunks per stage); "
                       "with one chunk use --schedule 1f1b");
    SS_CHECK(s.m % s.p == 0, "--schedule interleaved needs the micro-batches (--ga "
                                 << s.m << ") to be a multiple of --pp " << s.p
                                 << " (micro-batches go through the chunks in groups of p, as in Megatron); use --ga "
                                 << (s.m + s.p - 1) / s.p * s.p);
}


int pipe_warmup(const PipeSpec& spec, int rank) {
    switch (spec.kind) {
        case Schedule::gpipe: return spec.m;
        case Schedule::one_f_one_b: return std::min(spec.p - rank - 1, spec.m);
        case Schedule::interleaved: return interleaved_warmup(spec.p, spec.m, spec.v, rank);
    }
    return 0;
}

// ---- 2. the lists ----------------------------------------------------------------------

// Each compute is wrapped in its messages: a forward of virtual stage s > 0
// receives its input first and, unless s is the last, sends its output after;
// a backward receives its output's gradient first (unless s is the last) and
// sends its input's gradient after (unless s = 0). Sends are eager, so only
// the receives can wait.
PipeSchedule make_pipe_schedule(const PipeSpec& spec) {
    check_pipe_spec(spec);
    const int p = spec.p, last = spec.p * spec.v - 1;
    PipeSchedule s;
    s.spec = spec;
    s.ranks.resize(p);
    for (int r = 0; r < p; ++r) {
        std::vector<Compute> order = spec.kind == Schedule::gpipe         ? gpipe_order(spec.m)
                                     : spec.kind == Schedule::one_f_one_b ? one_f_one_b_order(p, spec.m, r)
                                                                          : interleaved_order(p, spec.m, spec.v, r);
        std::vector<PipeAction>& out = s.ranks[r];
        for (const Compute& c : order) {
            const int vs = virtual_stage(p, r, c.chunk);
            if (c.forward) {
                if (vs > 0) out.push_back({PipeOp::recv_act, c.micro, c.chunk});
                out.push_back({PipeOp::forward, c.micro, c.chunk});
                if (vs < last) out.push_back({PipeOp::send_act, c.micro, c.chunk});
            } else {
                if (vs < last) out.push_back({PipeOp::recv_grad, c.micro, c.chunk});
                out.push_back({PipeOp::backward, c.micro, c.chunk});
                if (vs > 0) out.push_back({PipeOp::send_grad, c.micro, c.chunk});
            }
        }
    }
    return s;
}

// ---- 3. the formulas -------------------------------------------------------------------

double pipe_bubble_formula(const PipeSpec& spec) {
    const double v = spec.kind == Schedule::interleaved ? spec.v : 1;
    return (spec.p - 1) / (v * spec.m);
}

int pipe_in_flight_formula(const PipeSpec& spec, int rank) {
    switch (spec.kind) {
        case Schedule::gpipe: return spec.m;
        case Schedule::one_f_one_b: return std::min(spec.p - rank, spec.m);
        case Schedule::interleaved:  // the warm-up, plus the steady state's forward before its first backward
            return std::min(pipe_warmup(spec, rank) + 1, spec.m * spec.v);
    }
    return 0;
}

int pipe_comm_buffers_peak(const PipeSchedule& s, int rank, bool overlap) {
    const std::vector<PipeAction>& acts = s.ranks.at(size_t(rank));
    const int p = s.spec.p;
    std::set<std::pair<int, int>> inputs, out_grads;  // (micro, chunk) whose received buffer is live
    std::vector<bool> posted(acts.size(), false);
    int live = 0, peak = 0, sending = 0;
    auto add = [&](int k) {
        live += k;
        peak = std::max(peak, live);
    };
    auto make_room = [&] {  // a send beyond kPipeLookahead waits the oldest, whose buffer goes
        if (sending == kPipeLookahead) {
            --sending;
            --live;
        }
    };
    auto receive = [&](const PipeAction& a) {
        (a.op == PipeOp::recv_act ? inputs : out_grads).insert({a.micro, a.chunk});
        add(1);
    };
    for (size_t i = 0; i < acts.size(); ++i) {
        if (overlap)
            for (size_t j = i; j < std::min(acts.size(), i + kPipeLookahead); ++j)
                if (pipe_is_recv(acts[j].op) && !posted[j]) {
                    posted[j] = true;
                    receive(acts[j]);
                }
        const PipeAction& a = acts[i];
        const std::pair<int, int> key{a.micro, a.chunk};
        switch (a.op) {
            case PipeOp::recv_act:
            case PipeOp::recv_grad:
                if (!overlap) receive(a);
                break;
            case PipeOp::forward:
                if (inputs.erase(key)) --live;  // forward copied it into its saved input
                break;
            case PipeOp::send_act:
                if (overlap) {  // a copy: the output dies with the saved activations
                    make_room();
                    add(1);
                    ++sending;
                }
                break;
            case PipeOp::backward:
                if (a.chunk * p + rank > 0) add(1);  // the input's gradient, to send down
                if (out_grads.erase(key)) --live;
                break;
            case PipeOp::send_grad:
                if (overlap) {
                    make_room();
                    ++sending;  // the gradient's buffer, now the send's
                } else {
                    --live;
                }
                break;
        }
    }
    return peak;
}

}  // namespace ss
