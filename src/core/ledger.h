// ledger.h — every byte a rank allocates, by what it is for.
//
// Each rank owns one Ledger. Every Tensor is booked in it under a category,
// so `train` can report live and peak bytes per category and the trace can
// draw memory over time. The categories follow the ZeRO paper's split
// (arXiv:1910.02054, section 3): model states (params, grads, optim) and
// residual states (acts, comm buffers, workspace); DiLoCo's outer optimizer
// (parallel/replicas.h) books its own state apart (outer), so that a run shows
// what the outer step costs beside what AdamW holds.
//
// A Ledger belongs to one rank and is used by that rank's thread only: it has
// no lock.
#pragma once

#include <array>
#include <cstddef>
#include <functional>

namespace ss {

/// What an allocation is for.
enum class Mem {
    params,     ///< the model's parameters as the forward pass reads them
    grads,      ///< gradients of the parameters
    optim,      ///< optimizer state: fp32 master weights (bf16 runs), Adam m and v
    acts,       ///< activations saved for the backward pass
    comm,       ///< communication buffers, ZeRO-3's gathered parameters
    workspace,  ///< scratch: fp32 compute copies, temporaries
    hpz,        ///< ZeRO++ hpZ: the secondary partition, 1/K of each unit, kept from its first forward to the step
    outer,      ///< DiLoCo's outer optimizer state (--replica-outer nesterov): the params at the last sync, fp32 momentum
    count
};

/// Number of categories.
constexpr int kMemCategories = int(Mem::count);

/// The category's name as printed and written in traces: "params", "grads", ...
const char* mem_name(Mem m);

/// Live and peak bytes per category for one rank.
class Ledger {
public:
    /// Books @p bytes under @p m.
    void alloc(Mem m, size_t bytes);
    /// Returns @p bytes booked under @p m.
    void release(Mem m, size_t bytes);

    /// Bytes currently live in @p m.
    size_t live(Mem m) const { return live_[int(m)]; }
    /// Highest value live(m) has reached.
    size_t peak(Mem m) const { return peak_[int(m)]; }
    /// Bytes currently live over all categories.
    size_t live_total() const { return live_total_; }
    /// Highest value live_total() has reached (not the sum of the per-category peaks).
    size_t peak_total() const { return peak_total_; }
    /// Forgets the peaks (sets them to the live values), e.g. after warm-up.
    void reset_peaks();

    /// Called after every change (the tracer uses it to write memory counters).
    std::function<void(const Ledger&)> on_change;

private:
    std::array<size_t, kMemCategories> live_{};
    std::array<size_t, kMemCategories> peak_{};
    size_t live_total_ = 0;
    size_t peak_total_ = 0;
};

}  // namespace ss
