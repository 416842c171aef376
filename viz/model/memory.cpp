// memory.cpp — memory series, the sample in force at a time, and pixel columns (see memory.h).
#include "viz/model/memory.h"

#include <algorithm>

namespace ss::viz {

MemoryModel build_memory(const Trace& trace) {
    MemoryModel m;
    m.ranks.resize(size_t(std::max(trace.world(), 0)));
    for (const TraceEvent& e : trace.events) {
        if (e.kind != TraceEvent::Kind::memory) continue;
        MemPoint p;
        p.t = e.ts_us;
        p.mem = e.mem;
        for (uint64_t b : e.mem) p.total += b;
        m.ranks[size_t(e.rank)].points.push_back(p);
    }
    for (RankMemory& r : m.ranks) {
        std::stable_sort(r.points.begin(), r.points.end(),
                         [](const MemPoint& a, const MemPoint& b) { return a.t < b.t; });
        for (size_t i = 0; i < r.points.size(); ++i)
            if (r.peak < 0 || r.points[i].total > r.points[size_t(r.peak)].total) r.peak = int(i);
        if (r.peak >= 0) m.max_total = std::max(m.max_total, r.points[size_t(r.peak)].total);
    }
    return m;
}

namespace {

// Index of the last sample at or before t, or -1.
int index_at(const RankMemory& r, double t) {
    auto it = std::upper_bound(r.points.begin(), r.points.end(), t,
                               [](double v, const MemPoint& p) { return v < p.t; });
    return int(it - r.points.begin()) - 1;
}

}  // namespace

const MemPoint* sample_at(const RankMemory& r, double t) {
    const int i = index_at(r, t);
    return i < 0 ? nullptr : &r.points[size_t(i)];
}

uint64_t masked_total(const MemPoint& p, uint32_t mask) {
    if (mask == kAllCategories) return p.total;
    uint64_t t = 0;
    for (int c = 0; c < kMemCategories; ++c)
        if ((mask >> c) & 1u) t += p.mem[size_t(c)];
    return t;
}

void columns(const RankMemory& r, double t0, double t1, int n, std::vector<MemColumn>& out, uint32_t mask) {
    out.assign(size_t(std::max(n, 0)), MemColumn{});
    if (n <= 0 || t1 <= t0 || r.points.empty()) return;
    const double dt = (t1 - t0) / n;
    int i = index_at(r, t0);  // the sample in force at the start of column 0
    for (int c = 0; c < n; ++c) {
        const double end = t0 + (c + 1) * dt;
        MemColumn col;
        auto take = [&](int k) {
            const uint64_t v = masked_total(r.points[size_t(k)], mask);
            if (col.top < 0) {
                col.lo = col.hi = v;
                col.top = k;
            } else {
                col.lo = std::min(col.lo, v);
                if (v > col.hi) {
                    col.hi = v;
                    col.top = k;
                }
            }
        };
        if (i >= 0) take(i);  // carried in from the previous column
        while (size_t(i + 1) < r.points.size() && r.points[size_t(i + 1)].t < end) take(++i);
        out[size_t(c)] = col;
    }
}

}  // namespace ss::viz
