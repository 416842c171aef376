#include "core/ledger.h"

#include <algorithm>

#include "core/check.h"

namespace ss {

const char* mem_name(Mem m) {
    switch (m) {
        case Mem::params: return "params";
        case Mem::grads: return "grads";
        case Mem::optim: return "optim";
        case Mem::acts: return "acts";
        case Mem::comm: return "comm";
        case Mem::workspace: return "workspace";
        case Mem::hpz: return "hpz";
        case Mem::outer: return "outer";
        case Mem::count: break;
    }
    return "?";
}

void Ledger::alloc(Mem m, size_t bytes) {
    size_t& live = live_[int(m)];
    live += bytes;
    peak_[int(m)] = std::max(peak_[int(m)], live);
    live_total_ += bytes;
    peak_total_ = std::max(peak_total_, live_total_);
    if (on_change) on_change(*this);
}

void Ledger::release(Mem m, size_t bytes) {
    size_t& live = live_[int(m)];
    SS_CHECK(bytes <= live, "ledger: releasing " << bytes << " bytes of " << mem_name(m)
                                                 << " but only " << live << " are live");
    live -= bytes;
    live_total_ -= bytes;
    if (on_change) on_change(*this);
}

void Ledger::reset_peaks() {
    peak_ = live_;
    peak_total_ = live_total_;
}

}  // namespace ss
