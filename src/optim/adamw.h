// adamw.h — the optimizer step over (a slice of) the flat parameter buffer.
//
// The math is kernels/cpu/adamw.h; this file owns the optimizer STATE and
// decides where it lives. Per parameter element it keeps (Mem::optim):
//
//   fp32 storage: Adam m and v                      8 bytes  (params are the master copy)
//   bf16 storage: fp32 master weight, m and v      12 bytes  (the ZeRO paper's "K = 12",
//                                                             arXiv:1910.02054 section 3.1)
//
// An AdamW covers elements [begin, end) of the flat buffer: all of it on one
// rank, or the rank's shard under ZeRO (each rank updates only what it owns).
// Weight decay follows each parameter's ParamSpec::decay (matrices and
// embeddings decay, biases and LayerNorm do not), so a shard boundary inside
// a tensor changes nothing.
#pragma once

#include <cstdint>

#include "core/ledger.h"
#include "core/tensor.h"
#include "kernels/cpu/adamw.h"
#include "model/params.h"

namespace ss {

/// AdamW state and update for elements [begin, end) of a flat parameter buffer.
class AdamW {
public:
    /// Allocates the state (zeroed m and v; master weights for bf16) in @p ledger under Mem::optim.
    AdamW(const ParamLayout& layout, int64_t begin, int64_t end, DType storage, Ledger& ledger,
          const cpu::AdamWParams& hp);

    /// bf16: copies the fp32 values of the slice into the master weights (call once after init or load).
    /// @p params_f32 points at element @p begin. fp32: nothing to do.
    void set_master(const float* params_f32);

    /// One AdamW step (t advances by one).
    /// @p params points at element begin of the stored parameters (fp32 or bf16, as the storage dtype);
    /// @p grads at element begin of the gradients, fp32 or bf16 as @p grads_dtype.
    void step(void* params, const void* grads, DType grads_dtype);

    /// First flat-buffer element this optimizer updates.
    int64_t begin() const { return begin_; }
    /// One past the last element it updates.
    int64_t end() const { return end_; }
    /// Steps taken so far.
    int t() const { return t_; }
    /// Hyper-parameters used by every step() (writable, e.g. to change lr).
    cpu::AdamWParams& hyper() { return hp_; }

    /// First moment (fp32, end - begin elements).
    Tensor& m() { return m_; }
    /// Second moment (fp32, end - begin elements).
    Tensor& v() { return v_; }
    /// fp32 master weights (bf16 storage only; empty for fp32).
    Tensor& master() { return master_; }

private:
    const ParamLayout* layout_;
    Ledger* ledger_;
    int64_t begin_, end_;
    DType storage_;
    cpu::AdamWParams hp_;
    Tensor master_, m_, v_;
    int t_ = 0;
};

}  // namespace ss
