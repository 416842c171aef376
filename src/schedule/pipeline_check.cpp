// pipeline_check.cpp — the rules every pipeline schedule keeps, checked on its
// lists (pipeline_schedule.h, check_pipe_schedule): first what one rank's list
// must do alone, then that the sends and receives pair up, then the
// discrete-event run (pipeline_simulate.cpp), which must not deadlock.
#include "schedule/pipeline_schedule.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <tuple>

#include "core/check.h"

namespace ss {

namespace {

// Virtual stage of chunk c on pipeline rank r: vs = c * p + r.
int virtual_stage(int p, int rank, int chunk) { return chunk * p + rank; }

// "backward of micro 3, chunk 1 (virtual stage 5)"
std::string describe(const PipeAction& a, int p, int rank) {
    std::ostringstream os;
    os << pipe_op_name(a.op) << " of micro " << a.micro << ", chunk " << a.chunk << " (virtual stage "
       << virtual_stage(p, rank, a.chunk) << ")";
    return os.str();
}

// A message between two ranks: (from, to, message).
using WireKey = std::tuple<int, int, PipeMessage>;

std::string describe(const PipeMessage& msg) {
    std::ostringstream os;
    os << (msg.act ? "the activation" : "the gradient") << " of micro " << msg.micro << " from virtual stage "
       << (msg.act ? msg.lower : msg.lower + 1) << " to " << (msg.act ? msg.lower + 1 : msg.lower);
    return os.str();
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
            if (!pipe_is_send(a.op) && !pipe_is_recv(a.op)) continue;
            auto [peer, msg] = pipe_wire(a, p, r);
            if (pipe_is_send(a.op)) sent[{r, peer, msg}].push_back(int(i));
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

// The lists in time (simulate_pipe_lists); a deadlock is an error naming each
// stuck rank and the receive it waits in. The static rules ran first, so the
// run cannot stop for anything else.
PipeRun run_checked(const PipeSchedule& s, int t_f, int t_b) {
    const int p = s.spec.p;
    PipeRun t = simulate_pipe_lists(s.ranks, s.spec.v, t_f, t_b);
    if (t.ended == PipeRunEnd::deadlock) {
        std::ostringstream os;
        os << "pipeline schedule: deadlock: every rank with actions left waits in a receive whose send never comes:";
        for (const auto& [r, i] : t.at)
            os << " rank " << r << " at action " << i << " (" << describe(s.ranks[r][i], p, r) << ", from rank "
               << pipe_wire(s.ranks[r][i], p, r).first << ");";
        os << " (rule: the lists must not deadlock; move a send before the receive that waits for it)";
        SS_FAIL(os.str());
    }
    SS_CHECK(t.finished(), "pipeline schedule: the simulation stopped at rank " << t.at.at(0).first << ", action "
                                                                               << t.at.at(0).second
                                                                               << " though the rules held; report this");
    return t;
}

}  // namespace

PipeStats check_pipe_schedule(const PipeSchedule& s) {
    check_pipe_spec(s.spec);
    const int p = s.spec.p;
    SS_CHECK(int(s.ranks.size()) == p, "pipeline schedule: " << s.ranks.size() << " rank lists for p=" << p << " stages");
    PipeStats st;
    for (int r = 0; r < p; ++r) st.max_in_flight.push_back(check_rank(s, r));
    check_messages(s);
    const PipeRun t = run_checked(s, 1, 2);
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
    return double(run_checked(s, t_f, t_b).makespan - busy) / double(busy);
}

}  // namespace ss
