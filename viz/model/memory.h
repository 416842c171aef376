// memory.h — each rank's memory over time, from the trace's "memory" counters.
//
// The Ledger (src/core/ledger.h) books every allocation under a category and
// the Tracer writes a counter sample per change (merged within 20 µs, keeping
// the peak; docs/trace-format.md). Memory is a step function of time: a
// sample holds until the next one. So "memory at time t" is the last sample at
// or before t, and the peak is the sample with the largest total.
//
//     bytes ^        ZeRO-3, one rank: params gathered (comm) and freed per layer
//           |     _   _   _   _          _   _   _   _
//           |  __| |_| |_| |_| |________| |_| |_| |_| |__    <- the saw-tooth
//           |  params + grads + optim (1/N of the model each)
//           +----------------------------------------------> t
//
// A window is ~1,500 pixels wide and a rank has thousands of samples, so the
// panel draws one column per pixel: columns() gives, for each, the lowest and
// highest total in it and the sample that reached the highest (so a peak
// narrower than a pixel is still drawn, and the stacked categories are those
// of that sample).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "comm/trace/trace.h"

namespace ss::viz {

/// One memory sample of one rank.
struct MemPoint {
    double t = 0;                                  ///< µs
    std::array<uint64_t, kMemCategories> mem{};    ///< live bytes per category (index int(Mem))
    uint64_t total = 0;                            ///< sum of mem
};

/// One rank's samples in time order.
struct RankMemory {
    std::vector<MemPoint> points;  ///< sorted by t
    int peak = -1;                 ///< index of the first sample with the highest total, -1 if none
};

/// Every rank's memory.
struct MemoryModel {
    std::vector<RankMemory> ranks;  ///< indexed by rank
    uint64_t max_total = 0;         ///< highest total over all ranks and times
};

/// Builds the memory series of @p trace (ranks without samples get an empty series).
MemoryModel build_memory(const Trace& trace);

/// The sample in force at time @p t (the last one at or before t), or nullptr before the first.
const MemPoint* sample_at(const RankMemory& r, double t);

/// One pixel column of a memory plot.
struct MemColumn {
    uint64_t lo = 0, hi = 0;  ///< lowest and highest value (total, or masked total) in force during the column
    int top = -1;             ///< index of the sample that reached hi; -1: no sample yet (before the first)
};

/// Every category: the mask that makes a column's value the sample's total.
constexpr uint32_t kAllCategories = (1u << kMemCategories) - 1;

/// The bytes of @p p in the categories of @p mask (bit int(Mem)).
uint64_t masked_total(const MemPoint& p, uint32_t mask);

/// Splits [@p t0, @p t1) into @p n columns of equal time and fills @p out with each
/// column's range of masked_total(sample, @p mask) (the total, by default).
void columns(const RankMemory& r, double t0, double t1, int n, std::vector<MemColumn>& out,
             uint32_t mask = kAllCategories);

}  // namespace ss::viz
