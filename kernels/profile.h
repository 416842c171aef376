// profile.h — where a step's time goes, kernel by kernel (`shardscope bench --profile`).
//
// Every kern:: function (dispatch.h) opens a ProfileScope as its first line.
// When profiling is on for the calling thread (set_profiling), the scope adds
// the call's wall time, its FLOPs and one call to that thread's KernelTimes;
// when it is off (the default) the scope costs one branch on a thread_local
// flag and reads no clock. Per thread, because the threads backend runs every
// rank as a thread of one process: each rank sees its own kernels only.
//
//   kern::set_profiling(true);
//   const kern::KernelTimes before = kern::profile_totals();
//   ... one step ...
//   const kern::KernelTimes step = kern::profile_totals() - before;   // train.cpp: StepStats::kernels
//
// FLOPs are the model's (Narayanan et al. 2021, eq. 3; 2 per multiply-add):
// a GEMM of M x N x K counts 2 M N K, and the attention core counts
// 4 B T^2 C forward and 8 B T^2 C backward, the full T x T products, although
// kernels/cpu/attention.cpp skips most of the masked half. Other kernels count 0.
// On the GPU the kern:: calls wait for their kernel, so the same scope times them.
#pragma once

#include <array>
#include <chrono>

namespace ss::kern {

/// The rows of the profile: each kern:: function feeds exactly one.
enum class Kernel : int {
    encoder,        ///< encoder_forward and encoder_backward (token + position embeddings)
    layernorm_fwd,  ///< layernorm_forward
    layernorm_bwd,  ///< layernorm_backward
    matmul_fwd,     ///< matmul_forward: c_attn, attn c_proj, c_fc, mlp c_proj
    matmul_dinp,    ///< matmul_backward's dinp = dout W^T
    matmul_dw,      ///< matmul_backward's dweight = x^T dout, with dbias (taken as dout is packed)
    attention_fwd,  ///< attention_forward: the causal core (and one rank's blockwise pass, model/attention.cpp)
    attention_bwd,  ///< attention_backward (and one rank's blockwise backward, its recompute inside)
    gelu_fwd,       ///< gelu_forward
    gelu_bwd,       ///< gelu_backward
    residual,       ///< add_inplace and add_bias
    lm_head_fwd,    ///< lm_head_forward: logits = x wte^T
    lm_head_bwd,    ///< lm_head_backward: dx and dwte
    crossentropy,   ///< crossentropy_forward and crossentropy_backward
    adamw,          ///< adamw_update
    convert,        ///< f32_to_bf16 and bf16_to_f32 (bf16 runs only)
    count           ///< the number of rows (not a kernel)
};

/// How many rows Kernel has.
constexpr int kKernelCount = int(Kernel::count);

/// The row's name as the profile table prints it ("matmul fwd", "lm_head bwd", ...).
const char* kernel_name(Kernel k);

/// Totals per kernel row: wall seconds, model FLOPs and calls.
struct KernelTimes {
    std::array<double, kKernelCount> seconds{};  ///< wall time inside the kern:: calls
    std::array<double, kKernelCount> flops{};    ///< their model FLOPs (see the file comment)
    std::array<long, kKernelCount> calls{};      ///< how many calls

    /// The totals of @p b added to these.
    KernelTimes& operator+=(const KernelTimes& b);
    /// What was added between two snapshots: this minus @p b, row by row.
    KernelTimes operator-(const KernelTimes& b) const;
    /// The seconds of all rows together.
    double total_seconds() const;
};

/// Turns profiling on or off for the calling thread (off by default).
void set_profiling(bool on);

/// The calling thread's totals since it started (only what ran while profiling was on).
KernelTimes profile_totals();

/// What ProfileScope needs inline; not for callers.
namespace detail {
/// The calling thread's switch (set_profiling); inline so that a scope's test is one branch.
inline thread_local bool t_profiling = false;
/// Adds one call of @p k that took @p seconds and did @p flops to the calling thread's totals.
void profile_add(Kernel k, double seconds, double flops);
}  // namespace detail

/// Times one kern:: call into the calling thread's totals, when profiling is on.
class ProfileScope {
public:
    /// Starts timing a call of @p k that does @p flops model FLOPs (0 for a non-GEMM kernel).
    explicit ProfileScope(Kernel k, double flops = 0) : k_(k), flops_(flops), on_(detail::t_profiling) {
        if (on_) t0_ = std::chrono::steady_clock::now();
    }
    /// Adds the elapsed time, the FLOPs and one call to the totals.
    ~ProfileScope() {
        if (on_) detail::profile_add(k_, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count(), flops_);
    }
    /// One scope times one call: not copied.
    ProfileScope(const ProfileScope&) = delete;
    /// Not assigned either.
    ProfileScope& operator=(const ProfileScope&) = delete;

private:
    Kernel k_;
    double flops_;
    bool on_;
    std::chrono::steady_clock::time_point t0_{};
};

}  // namespace ss::kern
