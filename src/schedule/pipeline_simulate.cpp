// pipeline_simulate.cpp — the wire and the clock of a pipeline step: which
// message each send or receive carries, and a discrete-event run of any lists
// (pipeline_schedule.h). The checker (pipeline_check.cpp), the chart
// (pipeline_chart.cpp) and the viewer's Pipeline panel (viz/model/pipeline.cpp)
// all time the lists with simulate_pipe_lists.
#include "schedule/pipeline_schedule.h"

#include <algorithm>
#include <deque>
#include <map>
#include <tuple>

namespace ss {

bool PipeMessage::operator<(const PipeMessage& o) const {
    return std::tie(act, micro, lower) < std::tie(o.act, o.micro, o.lower);
}

bool pipe_is_send(PipeOp op) { return op == PipeOp::send_act || op == PipeOp::send_grad; }
bool pipe_is_recv(PipeOp op) { return op == PipeOp::recv_act || op == PipeOp::recv_grad; }

std::pair<int, PipeMessage> pipe_wire(const PipeAction& a, int p, int rank) {
    const int vs = a.chunk * p + rank;  // virtual stage of chunk c on rank r
    auto rank_of = [p](int s) { return ((s % p) + p) % p; };
    switch (a.op) {
        case PipeOp::send_act: return {rank_of(vs + 1), {true, a.micro, vs}};
        case PipeOp::recv_act: return {rank_of(vs - 1), {true, a.micro, vs - 1}};
        case PipeOp::send_grad: return {rank_of(vs - 1), {false, a.micro, vs - 1}};
        case PipeOp::recv_grad: return {rank_of(vs + 1), {false, a.micro, vs}};
        default: return {rank, {true, a.micro, vs}};
    }
}

namespace {

// A message between two ranks: (from, to, message).
using WireKey = std::tuple<int, int, PipeMessage>;

// What makes lists impossible to run before any runs: an action outside the
// grid, or a message across an end of the pipeline (it would wait forever).
PipeRunEnd check_bounds(const std::vector<std::vector<PipeAction>>& ranks, int v, std::pair<int, size_t>& at) {
    const int p = int(ranks.size()), last = p * v - 1;
    for (int r = 0; r < p; ++r)
        for (size_t i = 0; i < ranks[size_t(r)].size(); ++i) {
            const PipeAction& a = ranks[size_t(r)][i];
            at = {r, i};
            if (a.chunk < 0 || a.chunk >= v || a.micro < 0) return PipeRunEnd::out_of_range;
            const int vs = a.chunk * p + r;
            const bool down = a.op == PipeOp::recv_act || a.op == PipeOp::send_grad;  // to or from vs - 1
            const bool up = a.op == PipeOp::send_act || a.op == PipeOp::recv_grad;    // to or from vs + 1
            if ((down && vs == 0) || (up && vs == last)) return PipeRunEnd::crosses_end;
        }
    return PipeRunEnd::finished;
}

}  // namespace

// Each rank runs its list until a receive finds no message; the send that brings
// it puts the rank back on the ready list. The times do not depend on the order
// ranks are taken in: a rank's clock moves only by its own computes and by the
// send times of the messages it receives, and the messages of one key come from
// one rank, in that rank's order.
PipeRun simulate_pipe_lists(const std::vector<std::vector<PipeAction>>& ranks, int v, int t_f, int t_b) {
    PipeRun run;
    const int p = int(ranks.size());
    if (p < 1 || v < 1) {
        run.ended = PipeRunEnd::out_of_range;
        return run;
    }
    std::pair<int, size_t> bad;
    run.ended = check_bounds(ranks, v, bad);
    if (!run.finished()) {
        run.at.push_back(bad);
        return run;
    }
    run.start.resize(size_t(p));
    run.end.assign(size_t(p), 0);
    std::vector<size_t> next(size_t(p), 0);
    std::map<WireKey, std::deque<long>> sent;  // messages not yet received: when each was sent, oldest first
    std::map<WireKey, int> waiting;            // the rank blocked in a receive of this message
    std::vector<int> ready;
    for (int r = p - 1; r >= 0; --r) ready.push_back(r);
    while (!ready.empty()) {
        const int r = ready.back();
        ready.pop_back();
        const std::vector<PipeAction>& list = ranks[size_t(r)];
        long& clock = run.end[size_t(r)];
        for (size_t& i = next[size_t(r)]; i < list.size(); ++i) {
            const PipeAction& a = list[i];
            if (pipe_is_recv(a.op)) {
                auto [from, msg] = pipe_wire(a, p, r);
                const WireKey key{from, r, msg};
                auto m = sent.find(key);
                if (m == sent.end() || m->second.empty()) {  // not sent yet: wait for it
                    waiting[key] = r;
                    break;
                }
                clock = std::max(clock, m->second.front());
                m->second.pop_front();
            }
            run.start[size_t(r)].push_back(clock);
            if (a.op == PipeOp::forward) clock += t_f;
            if (a.op == PipeOp::backward) clock += t_b;
            if (pipe_is_send(a.op)) {  // eager: the sender goes on
                auto [to, msg] = pipe_wire(a, p, r);
                const WireKey key{r, to, msg};
                sent[key].push_back(clock);
                auto w = waiting.find(key);
                if (w != waiting.end()) {
                    ready.push_back(w->second);
                    waiting.erase(w);
                }
            }
        }
    }
    for (int r = 0; r < p; ++r)
        if (next[size_t(r)] < ranks[size_t(r)].size()) run.at.push_back({r, next[size_t(r)]});
    if (!run.at.empty()) run.ended = PipeRunEnd::deadlock;
    for (long e : run.end) run.makespan = std::max(run.makespan, e);
    return run;
}

}  // namespace ss
