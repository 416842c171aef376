// test_pipeline_schedule.cpp — the schedules as data (schedule/pipeline_schedule.h):
// every (p, m, v) makes lists that the checker accepts, that run every forward
// and backward once, hold the activations the formula says and leave the
// bubble the formula says; hand-broken lists are refused with the rule they
// break; `shardscope schedule` draws them.
//
// Timing in the simulation: a stage's forward = 1, its backward = 2 (a chunk's
// 1/v and 2/v), messages free. With it the bubble counted from the lists is
// exactly (p-1)/m for GPipe and 1F1B and exactly (p-1)/(v m) for interleaved
// 1F1B: the step takes 3m + 3(p-1)/v. For interleaved this is not built in:
// it holds for any backward time (the idle is (p-1)(t_f + t_b)/v), which the
// last grid case checks with t_b = 1, 3 and 4.
#include <catch2/catch.hpp>
#include <map>
#include <sstream>
#include <tuple>

#include "cli_run.h"
#include "core/check.h"
#include "schedule/pipeline_schedule.h"

using Catch::Matchers::Contains;
using namespace ss;

namespace {

struct Case {
    Schedule kind;
    int p, m, v;
};

// Every legal (p, m, v): p 1..8, m 1..16; interleaved v 2..4 with p >= 2 and m % p == 0.
std::vector<Case> grid() {
    std::vector<Case> cases;
    for (int p = 1; p <= 8; ++p)
        for (int m = 1; m <= 16; ++m) {
            cases.push_back({Schedule::gpipe, p, m, 1});
            cases.push_back({Schedule::one_f_one_b, p, m, 1});
            for (int v = 2; v <= 4; ++v)
                if (p >= 2 && m % p == 0) cases.push_back({Schedule::interleaved, p, m, v});
        }
    return cases;
}

std::string name(const Case& c) {
    std::ostringstream os;
    os << schedule_name(c.kind) << " p=" << c.p << " m=" << c.m << " v=" << c.v;
    return os.str();
}

// "F0 F1 B0 B1" — the compute actions of one rank, as a string to compare.
std::string computes(const std::vector<PipeAction>& list, int v) {
    std::string out;
    for (const PipeAction& a : list) {
        if (a.op != PipeOp::forward && a.op != PipeOp::backward) continue;
        out += std::string(out.empty() ? "" : " ") + (a.op == PipeOp::forward ? "F" : "B") + std::to_string(a.micro);
        if (v > 1) out += char('a' + a.chunk);
    }
    return out;
}

// Where in a rank's list an action is (-1: absent).
int find(const std::vector<PipeAction>& list, PipeOp op, int micro, int chunk = 0) {
    for (size_t i = 0; i < list.size(); ++i)
        if (list[i].op == op && list[i].micro == micro && list[i].chunk == chunk) return int(i);
    return -1;
}

void erase(std::vector<PipeAction>& list, PipeOp op, int micro, int chunk = 0) {
    const int i = find(list, op, micro, chunk);
    REQUIRE(i >= 0);
    list.erase(list.begin() + i);
}

void require_throws_with(const PipeSchedule& s, const std::vector<std::string>& fragments) {
    try {
        check_pipe_schedule(s);
        FAIL("check_pipe_schedule accepted a broken schedule");
    } catch (const Error& e) {
        INFO(e.what());
        for (const std::string& f : fragments) CHECK_THAT(e.what(), Contains(f));
    }
}

}  // namespace

TEST_CASE("the small schedules are the ones in the papers, action by action", "[pipeline_schedule]") {
    // GPipe: all forwards, then the backwards in reverse (Huang et al. 2019, fig. 2c).
    PipeSchedule g = make_pipe_schedule({Schedule::gpipe, 2, 3, 1});
    CHECK(computes(g.ranks[0], 1) == "F0 F1 F2 B2 B1 B0");
    CHECK(computes(g.ranks[1], 1) == "F0 F1 F2 B2 B1 B0");
    // 1F1B: rank r warms up with p - r - 1 forwards.
    PipeSchedule f = make_pipe_schedule({Schedule::one_f_one_b, 3, 4, 1});
    CHECK(computes(f.ranks[0], 1) == "F0 F1 F2 B0 F3 B1 B2 B3");
    CHECK(computes(f.ranks[1], 1) == "F0 F1 B0 F2 B1 F3 B2 B3");
    CHECK(computes(f.ranks[2], 1) == "F0 B0 F1 B1 F2 B2 F3 B3");
    // Interleaved, p = 2, m = 4, v = 2: micro-batches pass the chunks in groups
    // of p; warm-up 2(p-r-1) + (v-1)p = 4 on rank 0, 2 on rank 1; backwards
    // start on the last chunk.
    PipeSchedule i = make_pipe_schedule({Schedule::interleaved, 2, 4, 2});
    CHECK(computes(i.ranks[0], 2) == "F0a F1a F0b F1b F2a B0b F3a B1b F2b B0a F3b B1a B2b B3b B2a B3a");
    CHECK(computes(i.ranks[1], 2) == "F0a F1a F0b B0b F1b B1b F2a B0a F3a B1a F2b B2b F3b B3b B2a B3a");
    // The messages around the computes, on the middle rank of a 3-stage 1F1B:
    // receive before, send after (and the last stage sends no activation).
    const std::vector<PipeAction>& r1 = f.ranks[1];
    REQUIRE(r1.size() >= 6);
    CHECK(r1[0].op == PipeOp::recv_act);
    CHECK(r1[1].op == PipeOp::forward);
    CHECK(r1[2].op == PipeOp::send_act);
    CHECK(find(r1, PipeOp::recv_grad, 0) == find(r1, PipeOp::backward, 0) - 1);
    CHECK(find(r1, PipeOp::send_grad, 0) == find(r1, PipeOp::backward, 0) + 1);
    CHECK(find(f.ranks[2], PipeOp::send_act, 0) == -1);
    CHECK(find(f.ranks[2], PipeOp::recv_grad, 0) == -1);
    CHECK(find(f.ranks[0], PipeOp::recv_act, 0) == -1);
    CHECK(find(f.ranks[0], PipeOp::send_grad, 0) == -1);
}

TEST_CASE("every schedule of the grid checks, runs each forward and backward once, and meets its formulas",
          "[pipeline_schedule]") {
    const std::vector<Case> cases = grid();
    REQUIRE(cases.size() == 256 + 78);  // gpipe and 1f1b 8 x 16 each; interleaved 26 (p, m) x 3 v
    for (const Case& c : cases) {
        INFO(name(c));
        const PipeSpec spec{c.kind, c.p, c.m, c.v};
        const PipeSchedule s = make_pipe_schedule(spec);
        REQUIRE(int(s.ranks.size()) == c.p);
        const PipeStats st = check_pipe_schedule(s);

        // Counted here, apart from the checker: one forward and one backward of
        // every (micro, virtual stage), on the rank that holds the stage.
        std::map<std::tuple<int, int, int>, int> count;  // (op, micro, virtual stage)
        for (int r = 0; r < c.p; ++r)
            for (const PipeAction& a : s.ranks[r])
                if (a.op == PipeOp::forward || a.op == PipeOp::backward)
                    ++count[{int(a.op), a.micro, a.chunk * c.p + r}];
        REQUIRE(count.size() == size_t(2 * c.m * c.p * c.v));
        for (const auto& [key, n] : count) REQUIRE(n == 1);

        // Activation sets held: counted from the lists = the formula, on every rank.
        REQUIRE(int(st.max_in_flight.size()) == c.p);
        for (int r = 0; r < c.p; ++r) {
            INFO("rank " << r);
            REQUIRE(st.max_in_flight[r] == pipe_in_flight_formula(spec, r));
        }

        // The bubble: simulated = formula. The step is 3m + 3(p-1)/v time units;
        // the tolerance is for the 1/v of a double (v = 3), nothing else.
        const double formula = c.kind == Schedule::interleaved ? double(c.p - 1) / (c.v * c.m) : double(c.p - 1) / c.m;
        REQUIRE(pipe_bubble_formula(spec) == Approx(formula).epsilon(1e-12));
        REQUIRE(st.bubble_fraction == Approx(formula).epsilon(1e-12).margin(1e-12));
        REQUIRE(st.makespan == Approx(3.0 * c.m + 3.0 * (c.p - 1) / c.v).epsilon(1e-12));
        for (double idle : st.idle) REQUIRE(idle == Approx(3.0 * (c.p - 1) / c.v).margin(1e-9));
        // The same idle measured GPipe's way (Huang et al. 2019, sec. 2.3): over
        // the whole step, not over the compute. For v = 1 that is (p-1)/(m+p-1),
        // the figure tutorials/08 and docs/formulas.md give beside the engine's (p-1)/m.
        const double gpipe_measure = (c.p - 1.0) / c.v / (c.m + (c.p - 1.0) / c.v);
        for (double idle : st.idle) REQUIRE(idle / st.makespan == Approx(gpipe_measure).epsilon(1e-12));
        if (c.v == 1) REQUIRE(gpipe_measure == Approx((c.p - 1.0) / (c.m + c.p - 1.0)).epsilon(1e-12));
    }
}

TEST_CASE("the interleaved bubble does not lean on a backward of two forwards", "[pipeline_schedule]") {
    // Idle = (p-1)(t_f + t_b)/v, so the fraction is (p-1)/(v m) for any t_b;
    // GPipe and 1F1B the same with v = 1.
    for (const Case& c : grid()) {
        if (c.m > 8) continue;  // the same shapes again, longer
        const PipeSchedule s = make_pipe_schedule({c.kind, c.p, c.m, c.v});
        for (int t_b : {1, 2, 3, 4}) {
            INFO(name(c) << " t_b=" << t_b);
            REQUIRE(pipe_simulated_bubble(s, 1, t_b) == Approx(pipe_bubble_formula(s.spec)).epsilon(1e-12).margin(1e-12));
        }
    }
}

TEST_CASE("1F1B holds fewer activations than GPipe and interleaved more than 1F1B", "[pipeline_schedule]") {
    const PipeStats g = check_pipe_schedule(make_pipe_schedule({Schedule::gpipe, 4, 8, 1}));
    const PipeStats f = check_pipe_schedule(make_pipe_schedule({Schedule::one_f_one_b, 4, 8, 1}));
    const PipeStats i = check_pipe_schedule(make_pipe_schedule({Schedule::interleaved, 4, 8, 2}));
    CHECK(g.max_in_flight == std::vector<int>{8, 8, 8, 8});
    CHECK(f.max_in_flight == std::vector<int>{4, 3, 2, 1});
    // Chunks of half a stage: rank 0 holds 11 / 2 = 5.5 micro-batches' worth,
    // p (1 + (p-1)/(p v)) = 4 x 11/8 (Korthikanti et al. 2022, eq. 5).
    CHECK(i.max_in_flight == std::vector<int>{11, 9, 7, 5});
    // m < p is legal for 1F1B: everyone is all warm-up, the bubble (p-1)/m > 1.
    const PipeStats small = check_pipe_schedule(make_pipe_schedule({Schedule::one_f_one_b, 8, 3, 1}));
    CHECK(small.max_in_flight[0] == 3);
    CHECK(small.bubble_fraction == Approx(7.0 / 3));
}

TEST_CASE("bad input: an error that says what to change", "[pipeline_schedule][errors]") {
    struct Bad {
        PipeSpec spec;
        std::string message;
    };
    const std::vector<Bad> cases = {
        {{Schedule::one_f_one_b, 0, 8, 1}, "--pp 0: a pipeline needs at least 1 stage"},
        {{Schedule::gpipe, 4, 0, 1}, "--micro 0: a step needs at least 1 micro-batch"},
        {{Schedule::interleaved, 4, 8, 0}, "--pp-virtual 0: a stage needs at least 1 model chunk"},
        {{Schedule::one_f_one_b, 4, 8, 2}, "--pp-virtual 2 needs --schedule interleaved"},
        {{Schedule::gpipe, 4, 8, 3}, "use --schedule interleaved or --pp-virtual 1"},
        {{Schedule::interleaved, 4, 6, 2},
         "--schedule interleaved needs the micro-batches (--ga 6) to be a multiple of --pp 4"},
        {{Schedule::interleaved, 4, 6, 2}, "use --ga 8"},
        {{Schedule::interleaved, 4, 2, 2}, "use --ga 4"},  // fewer micro-batches than stages
        {{Schedule::interleaved, 1, 4, 2}, "--schedule interleaved needs --pp 2 or more"},
        {{Schedule::interleaved, 4, 8, 1}, "--schedule interleaved needs --pp-virtual 2 or more"},
    };
    for (const Bad& b : cases) {
        INFO(schedule_name(b.spec.kind) << " p=" << b.spec.p << " m=" << b.spec.m << " v=" << b.spec.v);
        REQUIRE_THROWS_WITH(make_pipe_schedule(b.spec), Contains(b.message));
    }
}

TEST_CASE("hand-broken schedules are refused, naming the rule", "[pipeline_schedule][errors]") {
    const PipeSchedule good = make_pipe_schedule({Schedule::one_f_one_b, 2, 2, 1});
    REQUIRE_NOTHROW(check_pipe_schedule(good));
    // rank 0: F0 sA0 F1 sA1 rG0 B0 rG1 B1       rank 1: rA0 F0 B0 sG0 rA1 F1 B1 sG1

    SECTION("a backward moved before its forward") {
        PipeSchedule s = good;
        std::vector<PipeAction>& r1 = s.ranks[1];
        const PipeAction b0 = r1[find(r1, PipeOp::backward, 0)];
        erase(r1, PipeOp::backward, 0);
        r1.insert(r1.begin(), b0);
        require_throws_with(s, {"rank 1, action 0", "backward of micro 0", "backward before its forward"});
    }
    SECTION("a missing send") {
        PipeSchedule s = good;
        erase(s.ranks[0], PipeOp::send_act, 1);
        require_throws_with(s, {"rank 1", "receives the activation of micro 1 from virtual stage 0 to 1",
                                "which never sends it", "match the other's receives one for one"});
    }
    SECTION("a missing receive") {
        PipeSchedule s = good;
        erase(s.ranks[0], PipeOp::recv_grad, 1);
        require_throws_with(s, {"rank 0", "backward of micro 1", "no recv_grad earlier on this rank"});
    }
    SECTION("sends in another order than the receives: legal, matched by key, but later") {
        // A receive takes the message with its key (payload, micro, boundary;
        // comm/label.h), so rank 0 may send A1 before A0; rank 1 just waits.
        PipeSchedule s = make_pipe_schedule({Schedule::gpipe, 2, 2, 1});
        std::vector<PipeAction>& r0 = s.ranks[0];  // F0 sA0 F1 sA1 ... becomes F0 F1 sA1 sA0 ...
        REQUIRE(computes(r0, 1) == "F0 F1 B1 B0");
        const PipeAction a0 = r0[find(r0, PipeOp::send_act, 0)];
        erase(r0, PipeOp::send_act, 0);
        r0.insert(r0.begin() + find(r0, PipeOp::send_act, 1) + 1, a0);
        const PipeStats st = check_pipe_schedule(s);
        CHECK(st.makespan == Approx(3 * 2 + 3 + 1));  // F0 on rank 1 starts at 2, not 1
        s.ranks[1][find(s.ranks[1], PipeOp::recv_act, 1)].micro = 0;  // now two receives of A0
        require_throws_with(s, {"rank 1", "recv_act of micro 0", "repeated"});
    }
    SECTION("a send before the compute that makes its data") {
        PipeSchedule s = good;
        std::swap(s.ranks[0][0], s.ranks[0][1]);  // sA0 F0
        require_throws_with(s, {"rank 0, action 0", "sends an activation its forward has not computed yet"});
    }
    SECTION("a forward run twice, a backward never") {
        PipeSchedule s = good;
        s.ranks[1].push_back({PipeOp::forward, 1, 0});
        require_throws_with(s, {"rank 1", "forward of micro 1", "repeated"});
        PipeSchedule t = good;
        erase(t.ranks[0], PipeOp::backward, 1);
        require_throws_with(t, {"rank 0 never runs the backward of micro 1"});
    }
    SECTION("a send and a receive swapped: deadlock") {
        // GPipe p = 2, m = 1: rank 0 waits for the gradient before it sends the
        // activation the gradient is computed from.
        PipeSchedule s = make_pipe_schedule({Schedule::gpipe, 2, 1, 1});
        std::vector<PipeAction>& r0 = s.ranks[0];  // F0 sA0 rG0 B0
        std::swap(r0[find(r0, PipeOp::send_act, 0)], r0[find(r0, PipeOp::recv_grad, 0)]);
        require_throws_with(s, {"deadlock", "rank 0 at action 1 (recv_grad of micro 0", "from rank 1",
                                "rank 1 at action 0 (recv_act of micro 0", "from rank 0"});
    }
    SECTION("two receives swapped: deadlock") {
        // GPipe p = 3, m = 1, the middle rank: rA0 F0 sA0 rG0 B0 sG0 becomes
        // rG0 rA0 F0 sA0 B0 sG0 — it waits for a gradient of a forward it has
        // not sent on, so all three ranks wait.
        PipeSchedule s = make_pipe_schedule({Schedule::gpipe, 3, 1, 1});
        std::vector<PipeAction>& r1 = s.ranks[1];
        const PipeAction rg = r1[find(r1, PipeOp::recv_grad, 0)];
        erase(r1, PipeOp::recv_grad, 0);
        r1.insert(r1.begin(), rg);
        require_throws_with(s, {"deadlock", "rank 0 at action 2 (recv_grad", "rank 1 at action 0 (recv_grad",
                                "rank 2 at action 0 (recv_act", "the lists must not deadlock"});
    }
    SECTION("a list for each rank") {
        PipeSchedule s = good;
        s.ranks.pop_back();
        require_throws_with(s, {"1 rank lists for p=2 stages"});
    }
}

// The simulation alone (the viewer draws a trace's lists with it): it never
// throws, whatever the lists, and says where it stopped and why.
TEST_CASE("simulate_pipe_lists: any lists run or stop with where and why, never a throw", "[pipeline][schedule]") {
    // Lists that keep the rules run to the end, with the checker's step length:
    // makespan in ticks (1/v of a stage's forward) = PipeStats::makespan x v.
    for (Schedule kind : {Schedule::gpipe, Schedule::one_f_one_b, Schedule::interleaved})
        for (int p = 2; p <= 4; ++p)
            for (int m = p; m <= 3 * p; m += p) {
                const PipeSpec spec{kind, p, m, kind == Schedule::interleaved ? 2 : 1};
                const PipeSchedule s = make_pipe_schedule(spec);
                PipeRun run;
                REQUIRE_NOTHROW(run = simulate_pipe_lists(s.ranks, spec.v));
                REQUIRE(run.finished());
                REQUIRE(run.at.empty());
                // Ticks are whole numbers and makespan x v is too: compared exactly.
                REQUIRE(double(run.makespan) == check_pipe_schedule(s).makespan * spec.v);
                for (int r = 0; r < p; ++r) REQUIRE(run.start[size_t(r)].size() == s.ranks[size_t(r)].size());
            }
    using Lists = std::vector<std::vector<PipeAction>>;
    PipeRun run;
    // A receive across the first stage's end (vs 0 has no previous stage).
    REQUIRE_NOTHROW(run = simulate_pipe_lists(Lists{{{PipeOp::recv_act, 0, 0}, {PipeOp::forward, 0, 0}}}, 1));
    REQUIRE(run.ended == PipeRunEnd::crosses_end);
    REQUIRE(run.at == std::vector<std::pair<int, size_t>>{{0, 0}});
    // A send across the last stage's end (p = 2, v = 1: vs 1 has no next).
    run = simulate_pipe_lists(Lists{{{PipeOp::forward, 0, 0}}, {{PipeOp::forward, 0, 0}, {PipeOp::send_act, 0, 0}}}, 1);
    REQUIRE(run.ended == PipeRunEnd::crosses_end);
    REQUIRE(run.at == std::vector<std::pair<int, size_t>>{{1, 1}});
    // A chunk the ranks do not have, a negative micro-batch, no ranks at all.
    run = simulate_pipe_lists(Lists{{{PipeOp::forward, 0, 0}, {PipeOp::forward, 0, 2}}}, 2);
    REQUIRE(run.ended == PipeRunEnd::out_of_range);
    REQUIRE(run.at == std::vector<std::pair<int, size_t>>{{0, 1}});
    REQUIRE(simulate_pipe_lists(Lists{{{PipeOp::forward, -1, 0}}}, 1).ended == PipeRunEnd::out_of_range);
    REQUIRE(simulate_pipe_lists(Lists{}, 1).ended == PipeRunEnd::out_of_range);
    // The deadlock of the checker's test above (GPipe p = 2, m = 1, rank 0's send
    // and receive swapped): both ranks left, each at the receive it waits in.
    PipeSchedule s = make_pipe_schedule({Schedule::gpipe, 2, 1, 1});
    std::vector<PipeAction>& r0 = s.ranks[0];
    std::swap(r0[find(r0, PipeOp::send_act, 0)], r0[find(r0, PipeOp::recv_grad, 0)]);
    REQUIRE_NOTHROW(run = simulate_pipe_lists(s.ranks, 1));
    REQUIRE(run.ended == PipeRunEnd::deadlock);
    REQUIRE(run.at == std::vector<std::pair<int, size_t>>{{0, 1}, {1, 0}});
    REQUIRE(run.start[0].size() == 1);  // rank 0 ran its forward, then waits
    // Lists that break the checker's rules but can run are timed as they are:
    // a backward with no forward, alone on one rank, takes t_b.
    run = simulate_pipe_lists(Lists{{{PipeOp::backward, 0, 0}}}, 1, 1, 3);
    REQUIRE(run.finished());
    REQUIRE(run.makespan == 3);
}

TEST_CASE("the chart: rows per rank, the phases, the bubble line; lines fit", "[pipeline_schedule]") {
    const std::string c = pipe_schedule_chart(make_pipe_schedule({Schedule::one_f_one_b, 4, 8, 1}));
    INFO(c);
    CHECK_THAT(c, Contains("schedule 1f1b: p=4 stages, m=8 micro-batches\n"));
    CHECK_THAT(c, Contains("\nrank 0 | F0 F1 F2 F3 .  .  .  .  .  .  B0 B0 F4 B1 B1 F5 B2 B2 F6 B3 B3 F7 B4 B4 .  B5 B5 .  "
                           "B6 B6 .  B7 B7\n"));
    CHECK_THAT(c, Contains("\nrank 3 | .  .  .  F0 B0 B0 F1 B1 B1"));
    CHECK_THAT(c, Contains("warm-up/steady/cool-down, rank 0 to 3: 3/5/3 2/6/2 1/7/1 0/8/0\n"));
    CHECK_THAT(c, Contains("\nbubble: (p-1)/m = 3/8 = 0.375 of the compute time (counted from the lists: 0.375); "
                           "at most 4 micro-batches in flight on rank 0 (GPipe: 8)\n"));
    const std::string i = pipe_schedule_chart(make_pipe_schedule({Schedule::interleaved, 4, 8, 2}));
    INFO(i);
    CHECK_THAT(i, Contains("rank 0 | F0a F1a F2a F3a F0b F1b F2b F3b F4a F5a F6a .   .   .   B0b B0b F7a"));
    CHECK_THAT(i, Contains("bubble: (p-1)/(v m) = 3/(2x8) = 0.1875 of the compute time (counted from the lists: 0.1875); "
                           "at most 11 chunks (5.5 micro-batches) in flight on rank 0 (1F1B: 4, GPipe: 8)\n"));
    // Every chart row of the grid stays under 120 characters (rows wrap into blocks).
    for (const Case& k : grid()) {
        std::istringstream lines(pipe_schedule_chart(make_pipe_schedule({k.kind, k.p, k.m, k.v})));
        for (std::string line; std::getline(lines, line);)
            if (line.rfind("rank ", 0) == 0) {
                INFO(name(k) << ": " << line);
                REQUIRE(line.size() <= 120);
            }
    }
}

TEST_CASE("shardscope schedule draws the chart; bad input exits 1 with the reason", "[pipeline_schedule][cli]") {
    CliResult r = run_shardscope("schedule --pp 4 --micro 8 --schedule 1f1b");
    INFO(r.output);
    REQUIRE(r.code == 0);
    CHECK_THAT(r.output, Contains("schedule 1f1b: p=4 stages, m=8 micro-batches"));
    CHECK_THAT(r.output, Contains("rank 0 | F0 F1 F2 F3 .  .  .  .  .  .  B0 B0 F4"));
    CHECK_THAT(r.output, Contains("bubble: (p-1)/m = 3/8 = 0.375 of the compute time (counted from the lists: 0.375); "
                                  "at most 4 micro-batches in flight on rank 0 (GPipe: 8)"));
    CliResult ga = run_shardscope("schedule --pp 4 --ga 8 --schedule 1f1b");  // --ga is --micro
    CHECK(ga.code == 0);
    CHECK(ga.output == r.output);

    CliResult i = run_shardscope("schedule --pp 4 --micro 8 --schedule interleaved --pp-virtual 2 --actions");
    INFO(i.output);
    REQUIRE(i.code == 0);
    CHECK_THAT(i.output, Contains("bubble: (p-1)/(v m) = 3/(2x8) = 0.1875"));
    CHECK_THAT(i.output, Contains("rank 1: recv_act m0 c0, forward m0 c0, send_act m0 c0,"));

    CliResult bad = run_shardscope("schedule --pp 4 --ga 6 --schedule interleaved --pp-virtual 2");
    INFO(bad.output);
    CHECK(bad.code == 1);
    CHECK_THAT(bad.output, Contains("shardscope: error: --schedule interleaved needs the micro-batches (--ga 6) to be "
                                    "a multiple of --pp 4"));
    CHECK_THAT(bad.output, Contains("use --ga 8"));
    CliResult name = run_shardscope("schedule --pp 4 --micro 8 --schedule zb-h1");
    CHECK(name.code == 1);
    CHECK_THAT(name.output, Contains("shardscope: error: --schedule zb-h1 is not a schedule"));
    CliResult missing = run_shardscope("schedule --pp 4");
    CHECK(missing.code != 0);
    CHECK_THAT(missing.output, Contains("--micro is required"));
}

// Issue 14, 4.6: a schedule of 10^10 computations was built until memory ran
// out (and m v overflowed int); it is refused with the product and the flags.
TEST_CASE("a schedule too large to hold is refused, naming the flags", "[pipeline_schedule]") {
    PipeSpec s;
    s.p = 100000;
    s.m = 100000;
    REQUIRE_THROWS_WITH(make_pipe_schedule(s), Contains("--pp 100000 x --ga 100000 x --pp-virtual 1 = 10000000000 "
                                                        "chunk computations per step is more than a schedule holds (4194304)"));
    s.p = 4;
    s.m = 1024;  // at the bound's scale in one factor only: built as before
    REQUIRE(make_pipe_schedule(s).ranks.size() == 4);
}
