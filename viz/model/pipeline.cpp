// pipeline.cpp — otherData.pipeline read defensively, timed by the engine's
// simulation (src/schedule/pipeline_simulate.cpp) into boxes, and the measured
// boxes of one step (see pipeline.h).
#include "viz/model/pipeline.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <set>
#include <sstream>

namespace ss::viz {

namespace {

using nlohmann::json;
using Op = PipeOp;

// Bounds that no real run comes near, so a hostile file cannot make the viewer
// allocate or loop without end (the loader is fuzzed: tests/fuzz/).
constexpr int kMaxPp = 4096;
constexpr int kMaxChunks = 64;
constexpr int64_t kMaxMicro = 1 << 20;
constexpr size_t kMaxActions = size_t(1) << 20;

bool parse_op(const std::string& s, Op& op) {
    for (int i = 0; i <= int(Op::send_grad); ++i)
        if (s == pipe_op_name(Op(i))) {
            op = Op(i);
            return true;
        }
    return false;
}

// j[key] as an int in [lo, hi], if it is there and one.
bool get_int(const json& j, const char* key, int64_t lo, int64_t hi, int& out) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer())
        return false;
    if (it->is_number_unsigned() && it->get<uint64_t>() > uint64_t(hi))
        return false;
    const int64_t x = it->get<int64_t>();
    if (x < lo || x > hi)
        return false;
    out = int(x);
    return true;
}

std::string where(int rank, size_t i, const PipeAction& a) {
    std::ostringstream s;
    s << "pp rank " << rank << ", action " << i << " (" << pipe_op_name(a.op) << " of micro-batch " << a.micro << ", chunk "
      << a.chunk << ")";
    return s.str();
}

// otherData.pipeline.actions -> lists, or a message naming the first bad entry.
std::string read_actions(const json& jl, std::vector<std::vector<PipeAction>>& out) {
    if (!jl.is_array())
        return "otherData.pipeline.actions is not a list (one list of actions per pp rank)";
    if (jl.empty())
        return "otherData.pipeline.actions is empty";
    if (jl.size() > size_t(kMaxPp))
        return "otherData.pipeline.actions has more than 4096 pp ranks";
    size_t total = 0;
    for (size_t r = 0; r < jl.size(); ++r) {
        const std::string at = "otherData.pipeline.actions[" + std::to_string(r) + "]";
        if (!jl[r].is_array())
            return at + " is not a list";
        total += jl[r].size();
        if (total > kMaxActions)
            return "otherData.pipeline.actions has more than 2^20 actions";
        std::vector<PipeAction> list;
        for (size_t i = 0; i < jl[r].size(); ++i) {
            const json& e = jl[r][i];
            const std::string ai = at + "[" + std::to_string(i) + "]";
            if (!e.is_array() || e.size() != 3 || !e[0].is_string() || !e[1].is_number_integer() ||
                !e[2].is_number_integer())
                return ai + " is not [op, micro-batch, chunk]";
            PipeAction a{Op::forward};
            if (!parse_op(e[0].get<std::string>(), a.op))
                return ai + ": unknown op \"" + e[0].get<std::string>() +
                       "\" (expected recv_act, forward, send_act, recv_grad, backward or send_grad)";
            const bool micro_ok = !e[1].is_number_unsigned() || e[1].get<uint64_t>() < uint64_t(kMaxMicro);
            const bool chunk_ok = !e[2].is_number_unsigned() || e[2].get<uint64_t>() < uint64_t(kMaxChunks);
            const int64_t micro = micro_ok ? e[1].get<int64_t>() : -1, chunk = chunk_ok ? e[2].get<int64_t>() : -1;
            if (micro < 0 || micro >= kMaxMicro)
                return ai + ": micro-batch out of range";
            if (chunk < 0 || chunk >= kMaxChunks)
                return ai + ": chunk out of range";
            a.micro = int(micro);
            a.chunk = int(chunk);
            list.push_back(a);
        }
        out.push_back(std::move(list));
    }
    return "";
}

// The measured boxes: forward/backward spans with step, microbatch and stage args,
// of one step, on the ranks of rank 0's pp group.
void read_measured(const Trace& trace, const MeshShape& shape, bool has_mesh, PipelineView& pv) {
    const int world = std::max(trace.world(), 1);
    if (!has_mesh || shape.pp != pv.pp) {
        pv.measured_message = "the trace has no mesh with pp = " + std::to_string(pv.pp) +
                              " (otherData.mesh), so its ranks cannot be put on pp rows";
        return;
    }
    const int per_stage = world / pv.pp;  // ranks per pp stage: the grid puts pp outermost
    for (int r = 0; r < pv.pp; ++r) pv.measured_ranks.push_back(r * per_stage);
    struct Span {
        int step;
        PipeBox box;
    };
    std::vector<Span> spans;
    std::set<int> steps;
    for (const TraceEvent& e : trace.events) {
        if (e.kind != TraceEvent::Kind::span || (e.name != "forward" && e.name != "backward"))
            continue;
        if (e.rank < 0 || e.rank % per_stage != 0 || e.rank / per_stage >= pv.pp || !e.args.is_object())
            continue;
        int step = 0, micro = 0, stage = 0;
        if (!get_int(e.args, "step", INT32_MIN, INT32_MAX, step) ||
            !get_int(e.args, "microbatch", 0, kMaxMicro, micro) ||
            !get_int(e.args, "stage", 0, int64_t(pv.pp) * pv.v - 1, stage))
            continue;
        const int rank = e.rank / per_stage;
        if (stage % pv.pp != rank)
            continue;  // virtual stage vs lives on pp rank vs % p
        spans.push_back({step, PipeBox{rank, e.ts_us, e.ts_us + e.dur_us, e.name == "backward", micro, stage / pv.pp}});
        steps.insert(step);
    }
    if (steps.empty()) {
        pv.measured_message = "the trace has no forward/backward spans with step, microbatch and stage";
        return;
    }
    pv.measured_step = steps.size() >= 2 ? *std::next(steps.begin()) : *steps.begin();
    for (const Span& s : spans)
        if (s.step == pv.measured_step)
            pv.measured.boxes.push_back(s.box);
    count_bubble(pv.measured, pv.pp);
    for (PipeBox& b : pv.measured.boxes) {  // µs from the step's first box
        b.start -= pv.measured.t0;
        b.end -= pv.measured.t0;
    }
    pv.measured.t0 = 0;
}

}  // namespace

void count_bubble(PipeTimeline& t, int pp) {
    std::sort(t.boxes.begin(), t.boxes.end(), [](const PipeBox& a, const PipeBox& b) {
        return a.rank != b.rank ? a.rank < b.rank : a.start < b.start;
    });
    t.t0 = t.makespan = t.busy = t.bubble = 0;
    if (t.boxes.empty())
        return;
    double lo = t.boxes.front().start, hi = t.boxes.front().end;
    for (const PipeBox& b : t.boxes) {
        lo = std::min(lo, b.start);
        hi = std::max(hi, b.end);
        t.busy += b.end - b.start;
    }
    t.t0 = lo;
    t.makespan = hi - lo;
    if (t.busy > 0)
        t.bubble = (pp * t.makespan - t.busy) / t.busy;
}

PipeTimeline simulate_pipeline(const std::vector<std::vector<PipeAction>>& actions, int v, std::string& error) {
    error.clear();
    PipeTimeline out;
    const int p = int(actions.size());
    if (p < 1 || v < 1) {
        error = "no pipeline ranks to simulate";
        return out;
    }
    // The engine's run in ticks: a chunk's forward 1, its backward 2; one tick is
    // 1/v of a stage's forward (a chunk is 1/v of the rank's layers).
    const PipeRun run = simulate_pipe_lists(actions, v, 1, 2);
    auto at = [&](size_t k) {
        const auto [r, i] = run.at[k];
        return where(r, i, actions[size_t(r)][i]);
    };
    switch (run.ended) {
        case PipeRunEnd::finished: break;
        case PipeRunEnd::out_of_range: {
            const PipeAction& a = actions[size_t(run.at[0].first)][run.at[0].second];
            error = at(0) + (a.chunk >= v ? ": chunk " + std::to_string(a.chunk) + " but v = " + std::to_string(v)
                                          : std::string(": out of range"));
            return out;
        }
        case PipeRunEnd::crosses_end: error = at(0) + " crosses an end of the pipeline"; return out;
        case PipeRunEnd::deadlock: {
            const size_t shown = std::min<size_t>(run.at.size(), 4);  // each rank left in a receive, and which
            error = "the lists deadlock: ";
            for (size_t k = 0; k < shown; ++k) error += (k ? "; " : "") + at(k);
            error += shown == 1 ? " waits for a send that never comes" : " wait for sends that never come";
            return out;
        }
    }
    for (int r = 0; r < p; ++r)
        for (size_t i = 0; i < actions[size_t(r)].size(); ++i) {
            const PipeAction& a = actions[size_t(r)][i];
            if (a.op != Op::forward && a.op != Op::backward)
                continue;
            const long ticks = a.op == Op::forward ? 1 : 2;
            const double start = double(run.start[size_t(r)][i]) / v;
            out.boxes.push_back(PipeBox{r, start, double(run.start[size_t(r)][i] + ticks) / v, a.op == Op::backward,
                                        a.micro, a.chunk});
        }
    count_bubble(out, p);
    return out;
}

std::string pipe_box_label(const PipeBox& b, int v) {
    std::string s = (b.backward ? "B" : "F") + std::to_string(b.micro);
    if (v > 1)
        s += char('a' + b.chunk % 26);
    return s;
}

PipelineView read_pipeline(const Trace& trace, const MeshShape& shape, bool has_mesh) {
    PipelineView pv;
    const json* pipe = nullptr;
    if (trace.other_data.is_object()) {
        auto it = trace.other_data.find("pipeline");
        if (it != trace.other_data.end())
            pipe = &*it;
    }
    if (!pipe) {
        pv.message = "no pipeline in this run (pp = 1, or a trace written before otherData.pipeline)";
        return pv;
    }
    if (!pipe->is_object()) {
        pv.message = "otherData.pipeline is not an object";
        return pv;
    }
    auto actions = pipe->find("actions");
    if (actions == pipe->end()) {
        pv.message = "otherData.pipeline has no actions (each pp rank's list of [op, micro-batch, chunk])";
        return pv;
    }
    pv.message = read_actions(*actions, pv.actions);
    if (!pv.message.empty()) {
        pv.actions.clear();
        return pv;
    }
    pv.pp = int(pv.actions.size());
    // v and m: as written, else what the lists use.
    int max_chunk = 0, max_micro = 0;
    for (const auto& list : pv.actions)
        for (const PipeAction& a : list) {
            max_chunk = std::max(max_chunk, a.chunk);
            max_micro = std::max(max_micro, a.micro);
        }
    pv.v = max_chunk + 1;
    pv.m = max_micro + 1;
    int pp = pv.pp;
    if (get_int(*pipe, "pp", 1, kMaxPp, pp) && pp != pv.pp) {
        pv.message =
            "otherData.pipeline: pp = " + std::to_string(pp) + " but actions has " + std::to_string(pv.pp) + " lists";
        return pv;
    }
    int v = pv.v, m = pv.m;
    if (get_int(*pipe, "pp_virtual", 1, kMaxChunks, v) && v < pv.v) {
        pv.message = "otherData.pipeline: pp_virtual = " + std::to_string(v) + " but an action uses chunk " +
                     std::to_string(max_chunk);
        return pv;
    }
    if (get_int(*pipe, "micro_batches", 1, kMaxMicro, m) && m <= max_micro) {
        pv.message = "otherData.pipeline: micro_batches = " + std::to_string(m) + " but an action uses micro-batch " +
                     std::to_string(max_micro);
        return pv;
    }
    pv.v = v;
    pv.m = m;
    auto sched = pipe->find("schedule");
    if (sched != pipe->end() && sched->is_string())
        pv.schedule = sched->get<std::string>();
    auto split = pipe->find("split");
    if (split != pipe->end() && split->is_array() && split->size() <= size_t(kMaxPp) * kMaxChunks)
        for (const json& s : *split)
            if (s.is_number_integer())
                pv.split.push_back(s.get<int>());
    pv.bubble_formula = double(pv.pp - 1) / (double(pv.v) * pv.m);
    auto bubble = pipe->find("bubble");
    if (bubble != pipe->end() && bubble->is_number())
        pv.bubble_formula = bubble->get<double>();

    std::string error;
    pv.simulated = simulate_pipeline(pv.actions, pv.v, error);
    if (!error.empty()) {
        pv.message = "otherData.pipeline.actions: " + error;
        return pv;
    }
    if (pv.simulated.busy <= 0) {
        pv.message = "otherData.pipeline.actions has no forward or backward";
        return pv;
    }
    read_measured(trace, shape, has_mesh, pv);
    return pv;
}

}  // namespace ss::viz
