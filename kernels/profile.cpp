// profile.cpp — kernels/profile.h: one KernelTimes per thread, fed by ProfileScope.
#include "kernels/profile.h"

namespace ss::kern {

namespace {
thread_local KernelTimes t_totals;
}  // namespace

const char* kernel_name(Kernel k) {
    switch (k) {
        case Kernel::encoder: return "encoder";
        case Kernel::layernorm_fwd: return "layernorm fwd";
        case Kernel::layernorm_bwd: return "layernorm bwd";
        case Kernel::matmul_fwd: return "matmul fwd";
        case Kernel::matmul_dinp: return "matmul dinp";
        case Kernel::matmul_dw: return "matmul dW";
        case Kernel::attention_fwd: return "attention fwd";
        case Kernel::attention_bwd: return "attention bwd";
        case Kernel::gelu_fwd: return "gelu fwd";
        case Kernel::gelu_bwd: return "gelu bwd";
        case Kernel::residual: return "residual";
        case Kernel::lm_head_fwd: return "lm_head fwd";
        case Kernel::lm_head_bwd: return "lm_head bwd";
        case Kernel::crossentropy: return "crossentropy";
        case Kernel::adamw: return "adamw";
        case Kernel::convert: return "bf16 convert";
        case Kernel::count: break;
    }
    return "?";
}

KernelTimes& KernelTimes::operator+=(const KernelTimes& b) {
    for (int i = 0; i < kKernelCount; ++i) {
        seconds[size_t(i)] += b.seconds[size_t(i)];
        flops[size_t(i)] += b.flops[size_t(i)];
        calls[size_t(i)] += b.calls[size_t(i)];
    }
    return *this;
}

KernelTimes KernelTimes::operator-(const KernelTimes& b) const {
    KernelTimes d = *this;
    for (int i = 0; i < kKernelCount; ++i) {
        d.seconds[size_t(i)] -= b.seconds[size_t(i)];
        d.flops[size_t(i)] -= b.flops[size_t(i)];
        d.calls[size_t(i)] -= b.calls[size_t(i)];
    }
    return d;
}

double KernelTimes::total_seconds() const {
    double s = 0;
    for (double x : seconds) s += x;
    return s;
}

void set_profiling(bool on) { detail::t_profiling = on; }

KernelTimes profile_totals() { return t_totals; }

void detail::profile_add(Kernel k, double seconds, double flops) {
    const size_t i = size_t(k);
    t_totals.seconds[i] += seconds;
    t_totals.flops[i] += flops;
    t_totals.calls[i] += 1;
}

}  // namespace ss::kern
