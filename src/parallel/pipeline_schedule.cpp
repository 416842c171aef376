// pipeline_schedule.cpp — GPipe, 1F1B and interleaved 1F1B as lists of
// actions, the checker that simulates them, and the text chart. The picture
// and the sources are in pipeline_schedule.h; this file follows it:
//   1. the compute order of each schedule (which forward or backward next)
//   2. the lists: each compute wrapped in its receive and its send
//   3. the check: static rules, then a discrete-event simulation
//   4. the formulas
//   5. the chart
#include "parallel/pipeline_schedule.h"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <map>
#include <sstream>
#include <tuple>

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
int rank_of(int p, int vs) { return ((vs % p) + p) % p; }

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

void check_spec(const PipeSpec& s) {
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

}  // namespace

// ---- 2. the lists ----------------------------------------------------------------------

// Each compute is wrapped in its messages: a forward of virtual stage s > 0
// receives its input first and, unless s is the last, sends its output after;
// a backward receives its output's gradient first (unless s is the last) and
// sends its input's gradient after (unless s = 0). Sends are eager, so only
// the receives can wait.
PipeSchedule make_pipe_schedule(const PipeSpec& spec) {
    check_spec(spec);
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

// ---- 3. the check ----------------------------------------------------------------------

namespace {

// "backward of micro 3, chunk 1 (virtual stage 5)"
std::string describe(const PipeAction& a, int p, int rank) {
    std::ostringstream os;
    os << pipe_op_name(a.op) << " of micro " << a.micro << ", chunk " << a.chunk << " (virtual stage "
       << virtual_stage(p, rank, a.chunk) << ")";
    return os.str();
}

// One message on the wire: an activation or a gradient of a micro-batch,
// crossing the boundary between virtual stages `lower` and lower + 1.
struct Message {
    bool act;
    int micro, lower;
    bool operator<(const Message& o) const {
        return std::tie(act, micro, lower) < std::tie(o.act, o.micro, o.lower);
    }
};

// A receive takes the oldest message from its peer with the same key: payload,
// micro-batch and boundary (comm/label.h, p2p_key; parallel/pipeline.cpp
// labels the boundary by the first block after it). So the order of a rank's
// sends need not be the order of its neighbour's receives.
using WireKey = std::tuple<int, int, Message>;  // (from, to, message)

std::string describe(const Message& msg) {
    std::ostringstream os;
    os << (msg.act ? "the activation" : "the gradient") << " of micro " << msg.micro << " from virtual stage "
       << (msg.act ? msg.lower : msg.lower + 1) << " to " << (msg.act ? msg.lower + 1 : msg.lower);
    return os.str();
}

bool is_send(PipeOp op) { return op == PipeOp::send_act || op == PipeOp::send_grad; }
bool is_recv(PipeOp op) { return op == PipeOp::recv_act || op == PipeOp::recv_grad; }

// The peer rank of a send or receive and the message it carries.
std::pair<int, Message> wire(const PipeAction& a, int p, int rank) {
    const int vs = virtual_stage(p, rank, a.chunk);
    switch (a.op) {
        case PipeOp::send_act: return {rank_of(p, vs + 1), {true, a.micro, vs}};
        case PipeOp::recv_act: return {rank_of(p, vs - 1), {true, a.micro, vs - 1}};
        case PipeOp::send_grad: return {rank_of(p, vs - 1), {false, a.micro, vs - 1}};
        case PipeOp::recv_grad: return {rank_of(p, vs + 1), {false, a.micro, vs}};
        default: return {rank, {true, a.micro, vs}};
    }
}

#define SS_RULE(cond, rank, i, a, what) \
    SS_CHECK(cond, "pipeline schedule: rank " << rank << ", action " << i << " (" << describe(a, p, rank) << "): " << what)

// Rules that read one rank's list alone; returns the in-flight maximum.
int check_rank(const PipeSchedule& s, int r) {
    const int p = s.spec.p, m = s.spec.m, v = s.spec.v, last = p * v - 1;
    // [micro][chunk]: how far each (micro, chunk) got on this rank.
    struct Seen {
        bool recv_act = false, forward = false, send_act = false, recv_grad = false, backward = false, send_grad = false;
    };
    std::vector<std::vector<Seen>> seen(m, std::vector<Seen>(v));
    int in_flight = 0, max_in_flight = 0;
    const std::vector<PipeAction>& list = s.ranks[r];
    for (size_t i = 0; i < list.size(); ++i) {
        const PipeAction& a = list[i];
        SS_CHECK(a.micro >= 0 && a.micro < m && a.chunk >= 0 && a.chunk < v,
                 "pipeline schedule: rank " << r << ", action " << i << " (" << pipe_op_name(a.op) << " of micro "
                                            << a.micro << ", chunk " << a.chunk << "): out of range (m=" << m
                                            << " micro-batches, v=" << v << " chunks)");
        const int vs = virtual_stage(p, r, a.chunk);
        Seen& x = seen[a.micro][a.chunk];
        bool* flag = nullptr;
        switch (a.op) {
            case PipeOp::recv_act:
                SS_RULE(vs > 0, r, i, a, "virtual stage 0 has no previous stage to receive from");
                flag = &x.recv_act;
                break;
            case PipeOp::forward:
                SS_RULE(vs == 0 || x.recv_act, r, i, a, "no recv_act earlier on this rank (a forward needs its input)");
                flag = &x.forward;
                max_in_flight = std::max(max_in_flight, ++in_flight);
                break;
            case PipeOp::send_act:
                SS_RULE(vs < last, r, i, a, "the last virtual stage has no next stage to send to");
                SS_RULE(x.forward, r, i, a, "sends an activation its forward has not computed yet");
                flag = &x.send_act;
                break;
            case PipeOp::recv_grad:
                SS_RULE(vs < last, r, i, a, "the last virtual stage has no next stage to receive from");
                flag = &x.recv_grad;
                break;
            case PipeOp::backward:
                SS_RULE(x.forward, r, i, a, "backward before its forward (rule: forward before backward on each stage)");
                SS_RULE(vs == last || x.recv_grad, r, i, a,
                        "no recv_grad earlier on this rank (a backward needs its output's gradient)");
                flag = &x.backward;
                --in_flight;
                break;
            case PipeOp::send_grad:
                SS_RULE(vs > 0, r, i, a, "virtual stage 0 has no previous stage to send to");
                SS_RULE(x.backward, r, i, a, "sends a gradient its backward has not computed yet");
                flag = &x.send_grad;
                break;
        }
        SS_RULE(!*flag, r, i, a, "repeated (each (micro, virtual stage) does this exactly once)");
        *flag = true;
    }
    for (int i = 0; i < m; ++i)
        for (int c = 0; c < v; ++c)
            for (bool fwd : {true, false})
                SS_CHECK(fwd ? seen[i][c].forward : seen[i][c].backward,
                         "pipeline schedule: rank " << r << " never runs the " << (fwd ? "forward" : "backward")
                                                    << " of micro " << i << ", chunk " << c << " (virtual stage "
                                                    << virtual_stage(p, r, c)
                                                    << "); every (micro, virtual stage) needs one forward and one backward");
    return max_in_flight;
}

// Every receive has its send and every send its receive: the same message
// between the same two ranks, one for one.
void check_messages(const PipeSchedule& s) {
    const int p = s.spec.p;
    std::map<WireKey, std::vector<int>> sent, received;  // the actions, per message
    for (int r = 0; r < p; ++r)
        for (size_t i = 0; i < s.ranks[r].size(); ++i) {
            const PipeAction& a = s.ranks[r][i];
            if (!is_send(a.op) && !is_recv(a.op)) continue;
            auto [peer, msg] = wire(a, p, r);
            if (is_send(a.op)) sent[{r, peer, msg}].push_back(int(i));
            else received[{peer, r, msg}].push_back(int(i));
        }
    const char* rule = "rule: the sends from one rank to another match the other's receives one for one";
    for (const auto& [key, recvs] : received) {
        const auto& [from, to, msg] = key;
        const auto it = sent.find(key);
        const size_t n = it == sent.end() ? 0 : it->second.size();
        SS_CHECK(recvs.size() <= n, "pipeline schedule: rank " << to << ", action " << recvs[n] << " receives "
                                                               << describe(msg) << " from rank " << from
                                                               << ", which never sends it (" << rule << ")");
    }
    for (const auto& [key, sends] : sent) {
        const auto& [from, to, msg] = key;
        const auto it = received.find(key);
        const size_t n = it == received.end() ? 0 : it->second.size();
        SS_CHECK(sends.size() <= n, "pipeline schedule: rank " << from << ", action " << sends[n] << " sends "
                                                               << describe(msg) << " to rank " << to
                                                               << ", which never receives it (" << rule << ")");
    }
}

// The discrete-event run: a rank executes its list strictly in order; a
// forward of a chunk takes t_f ticks and a backward t_b (check_pipe_schedule:
// 1 and 2, a tick being 1/v of a stage's forward); messages take no time, and
// a receive completes once its message was sent. start[r][i] is the tick
// action i of rank r begins.
struct Timeline {
    std::vector<std::vector<long>> start;
    std::vector<long> end;  // per rank
    long makespan = 0;      // ticks
};

Timeline simulate(const PipeSchedule& s, int t_f = 1, int t_b = 2) {
    const int p = s.spec.p;
    Timeline t;
    t.start.resize(p);
    t.end.assign(p, 0);
    std::vector<size_t> next(p, 0);
    std::map<WireKey, std::deque<long>> wires;  // send times, oldest first
    for (;;) {
        bool moved = false, left = false;
        for (int r = 0; r < p; ++r) {
            const std::vector<PipeAction>& list = s.ranks[r];
            for (; next[r] < list.size(); ++next[r]) {
                const PipeAction& a = list[next[r]];
                if (is_recv(a.op)) {
                    auto [from, msg] = wire(a, p, r);
                    std::deque<long>& w = wires[{from, r, msg}];
                    if (w.empty()) break;  // its message is not sent yet: wait
                    t.end[r] = std::max(t.end[r], w.front());
                    w.pop_front();
                }
                t.start[r].push_back(t.end[r]);
                if (a.op == PipeOp::forward) t.end[r] += t_f;
                if (a.op == PipeOp::backward) t.end[r] += t_b;
                if (is_send(a.op)) {
                    auto [to, msg] = wire(a, p, r);
                    wires[{r, to, msg}].push_back(t.end[r]);
                }
                moved = true;
            }
            left = left || next[r] < list.size();
        }
        if (!left) break;
        if (!moved) {
            std::ostringstream os;
            os << "pipeline schedule: deadlock: every rank with actions left waits in a receive whose send never comes:";
            for (int r = 0; r < p; ++r)
                if (next[r] < s.ranks[r].size())
                    os << " rank " << r << " at action " << next[r] << " ("
                       << describe(s.ranks[r][next[r]], p, r) << ", from rank "
                       << wire(s.ranks[r][next[r]], p, r).first << ");";
            os << " (rule: the lists must not deadlock; move a send before the receive that waits for it)";
            SS_FAIL(os.str());
        }
    }
    for (long e : t.end) t.makespan = std::max(t.makespan, e);
    return t;
}

}  // namespace

PipeStats check_pipe_schedule(const PipeSchedule& s) {
    check_spec(s.spec);
    const int p = s.spec.p;
    SS_CHECK(int(s.ranks.size()) == p, "pipeline schedule: " << s.ranks.size() << " rank lists for p=" << p << " stages");
    PipeStats st;
    for (int r = 0; r < p; ++r) st.max_in_flight.push_back(check_rank(s, r));
    check_messages(s);
    const Timeline t = simulate(s);
    // Every rank runs m v chunk-forwards (1 tick) and m v chunk-backwards (2 ticks).
    const long busy = 3L * s.spec.m * s.spec.v;
    const double tick = 1.0 / s.spec.v;
    st.makespan = t.makespan * tick;
    for (int r = 0; r < p; ++r) st.idle.push_back((t.makespan - busy) * tick);
    st.bubble_fraction = double(t.makespan - busy) / double(busy);
    return st;
}

double pipe_simulated_bubble(const PipeSchedule& s, int t_f, int t_b) {
    SS_CHECK(t_f >= 1 && t_b >= 1, "pipe_simulated_bubble: times must be at least 1; got " << t_f << ", " << t_b);
    check_pipe_schedule(s);
    const long busy = long(t_f + t_b) * s.spec.m * s.spec.v;
    return double(simulate(s, t_f, t_b).makespan - busy) / double(busy);
}

// ---- 4. the formulas -------------------------------------------------------------------

double pipe_bubble_formula(const PipeSpec& spec) {
    const double v = spec.kind == Schedule::interleaved ? spec.v : 1;
    return (spec.p - 1) / (v * spec.m);
}

int pipe_in_flight_formula(const PipeSpec& spec, int rank) {
    switch (spec.kind) {
        case Schedule::gpipe: return spec.m;
        case Schedule::one_f_one_b: return std::min(spec.p - rank, spec.m);
        case Schedule::interleaved:  // the warm-up, plus the steady state's forward before its first backward
            return std::min(interleaved_warmup(spec.p, spec.m, spec.v, rank) + 1, spec.m * spec.v);
    }
    return 0;
}

// ---- 5. the chart ---------------------------------------------------------------------

namespace {

std::string fmt_num(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", x);
    return buf;
}

// Chunks are letters while the alphabet lasts (a = chunk 0 ... z = chunk 25);
// with more chunks every label names its chunk by number instead ("c26").
constexpr int kLetterChunks = 26;

// "F3", "B12"; interleaved "F3a" (chunk 0), "F3b" (chunk 1), ..., or "F3c0", "F3c27" when v > 26.
std::string cell_label(const PipeAction& a, int v) {
    std::string s = (a.op == PipeOp::forward ? "F" : "B") + std::to_string(a.micro);
    if (v > kLetterChunks) s += "c" + std::to_string(a.chunk);
    else if (v > 1) s += char('a' + a.chunk);
    return s;
}

}  // namespace

std::string pipe_schedule_chart(const PipeSchedule& s) {
    const PipeStats st = check_pipe_schedule(s);
    const Timeline t = simulate(s);
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
            const std::string label = cell_label(a, v);
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
    else if (inter)
        os << "one column = a chunk's forward (1/" << v << " of a stage's); F3a = forward of micro-batch 3 through chunk a,\n"
           << "b, c, d = chunks 1, 2, 3; B3a = its backward (two columns); . = idle\n";
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
        const int warmup = sp.kind == Schedule::gpipe         ? m
                           : sp.kind == Schedule::one_f_one_b ? std::min(p - r - 1, m)
                                                              : interleaved_warmup(p, m, v, r);
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
