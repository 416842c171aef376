// overlap.cpp — the replay of one data-parallel step (the rules: overlap.h).
#include "plan/overlap.h"

#include <algorithm>
#include <deque>
#include <map>

namespace ss {

namespace {

// The rank's clock and its group's wire.
struct Clocks {
    double now = 0;      // the rank: where its compute has got to
    double wire = 0;     // the wire: when it is free
    double compute = 0, comm = 0, exposed = 0, exposed_mb = 0;
    bool in_pass = false;  // waits now are a micro-batch's (ZeRO-2/3), not the step's

    void run(double seconds) {
        now += seconds;
        compute += seconds;
    }
    // Issues a call now; returns when it will have finished.
    double start(double seconds) {
        const double begin = std::max(now, wire);
        wire = begin + seconds;
        comm += seconds;
        return wire;
    }
    // The rank needs a call that finishes at @p done.
    void wait(double done) {
        if (done <= now) return;
        exposed += done - now;
        if (in_pass) exposed_mb += done - now;
        now = done;
    }
    void blocking(double seconds) { wait(start(seconds)); }
};

}  // namespace

DpStepTime replay_dp_step(const DpStep& s) {
    Clocks c;
    const int n = int(s.units.size());
    if (n == 0) return {};
    const int last = n - 1;  // ln_f and the head
    // The orders part_forward and part_backward take the units in (model/gpt2.h unit_order).
    std::vector<int> fwd_order, bwd_order{0, last};
    for (int u = 0; u < n; ++u) fwd_order.push_back(u);
    for (int u = last - 1; u >= 1; --u) bwd_order.push_back(u);
    const bool on = s.overlap;
    const int prefetch = on && s.zero == 3 ? s.prefetch : 0;

    // ZeRO-1/2: the previous step's all_gathers, started as it ended (the steady state).
    std::map<int, double> step_gathers;
    if (on && (s.zero == 1 || s.zero == 2))
        for (int u = 0; u < n; ++u) step_gathers[u] = c.start(s.units[size_t(u)].gather);

    for (int mb = 0; mb < s.ga; ++mb) {
        const bool last_mb = mb == s.ga - 1;
        c.in_pass = s.zero >= 2;
        for (int backward = 0; backward < 2; ++backward) {
            const std::vector<int>& order = backward ? bwd_order : fwd_order;
            std::map<int, double> prefetched;  // ZeRO-3: gathers in flight, by unit
            auto gather = [&](int u) {
                const UnitWork& w = s.units[size_t(u)];
                return backward && w.gather_bwd >= 0 ? w.gather_bwd : w.gather;
            };
            // ZeRO-3 takes unit order[i]: wait for its gather (or gather it), start the next ones'.
            auto take = [&](size_t i) {
                const int u = order[i];
                auto pre = prefetched.find(u);
                if (pre != prefetched.end()) {
                    c.wait(pre->second);
                    prefetched.erase(pre);
                } else {
                    c.blocking(gather(u));
                }
                for (size_t j = i + 1; j < order.size() && j - i <= size_t(prefetch); ++j)
                    if (!prefetched.count(order[j])) prefetched[order[j]] = c.start(gather(order[j]));
            };
            std::deque<double> reducing;  // ZeRO-2/3 reduce_scatters in flight; DDP, ZeRO-1: every call started
            // Unit u's gradients are complete.
            auto ready = [&](int u) {
                const UnitWork& w = s.units[size_t(u)];
                if (s.zero == 0 && last_mb) {
                    for (double t : w.all_reduces) on ? reducing.push_back(c.start(t)) : c.blocking(t);
                } else if (s.zero == 1 && last_mb && on) {
                    reducing.push_back(c.start(w.reduce));
                } else if (s.zero >= 2) {
                    if (!on || s.blocking_reduce) return c.blocking(w.reduce);
                    if (s.zero == 3 && reducing.size() >= 2) {  // at most two in flight (zero3.cpp)
                        c.wait(reducing.front());
                        reducing.pop_front();
                    }
                    reducing.push_back(c.start(w.reduce));
                }
            };
            if (!backward) {
                for (size_t i = 0; i < order.size(); ++i) {
                    const int u = order[i];
                    if (s.zero == 3) take(i);
                    if (mb == 0 && step_gathers.count(u)) {  // StepAndGather::need: the step's traffic
                        c.in_pass = false;
                        c.wait(step_gathers[u]);
                        c.in_pass = s.zero >= 2;
                    }
                    c.run(s.units[size_t(u)].fwd);
                }
                continue;
            }
            // Backward: unit 0 (wte, for the head) is taken first and its gradients complete last.
            for (size_t i = 0; i < order.size(); ++i) {
                const int u = order[i];
                if (s.zero == 3) take(i);
                if (u == 0) continue;
                c.run(s.units[size_t(u)].bwd);
                ready(u);
            }
            c.run(s.units[0].bwd);
            ready(0);
            for (double done : reducing) c.wait(done);  // backward's end (ZeRO-1: the step's start)
        }
        c.in_pass = false;
    }
    // --overlap off: ZeRO-1's reduce_scatters in the step; ZeRO-1/2's all_gathers after it.
    if (!on && s.zero == 1)
        for (const UnitWork& w : s.units) c.blocking(w.reduce);
    if (!on && (s.zero == 1 || s.zero == 2))
        for (const UnitWork& w : s.units) c.blocking(w.gather);

    DpStepTime t;
    t.compute = c.compute;
    t.comm = c.comm;
    t.exposed = c.exposed;
    t.exposed_each_mb = c.exposed_mb;
    t.total = c.now;
    return t;
}

}  // namespace ss
