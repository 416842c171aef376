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
#include <vector>

#include "core/ledger.h"
#include "core/tensor.h"
#include "kernels/cpu/adamw.h"
#include "model/params.h"

namespace ss {

/// A run of flat-buffer elements [flat_begin, flat_end) that sits at
/// [local, local + flat_end - flat_begin) of a rank's local buffer.
struct Piece {
    int64_t flat_begin = 0;  ///< first flat element
    int64_t flat_end = 0;    ///< one past the last
    int64_t local = 0;       ///< where flat_begin sits in the local buffer
};

/// AdamW state and update for a rank's local buffer of @p size elements, made
/// of pieces of the flat parameter buffer (all of it on one rank; a ZeRO shard
/// otherwise). Local elements outside every piece (ZeRO's padding) are left alone.
class AdamW {
public:
    /// Allocates the state (zeroed m and v; master weights for bf16) in @p ledger under Mem::optim.
    AdamW(const ParamLayout& layout, std::vector<Piece> pieces, int64_t size, DType storage, Ledger& ledger,
          const cpu::AdamWParams& hp);
    /// The whole range [begin, end) as one piece.
    AdamW(const ParamLayout& layout, int64_t begin, int64_t end, DType storage, Ledger& ledger,
          const cpu::AdamWParams& hp);

    /// bf16: copies the fp32 values of the local buffer into the master weights
    /// (call once after init or load). fp32: nothing to do.
    void set_master(const float* params_f32);

    /// One AdamW step (t advances by one) over the local buffer.
    /// @p params: the stored parameters (fp32 or bf16, as the storage dtype);
    /// @p grads: the gradients, fp32 or bf16 as @p grads_dtype. Both local, @p size elements.
    void step(void* params, const void* grads, DType grads_dtype);

    /// Elements of the local buffer.
    int64_t size() const { return size_; }
    /// Steps taken so far.
    int t() const { return t_; }
    /// Sets the steps taken (a resumed checkpoint's; Adam's bias correction uses it).
    void set_t(int t) { t_ = t; }
    /// Hyper-parameters used by every step() (writable, e.g. to change lr).
    cpu::AdamWParams& hyper() { return hp_; }

    /// First moment (fp32, size() elements).
    Tensor& m() { return m_; }
    /// Second moment (fp32, size() elements).
    Tensor& v() { return v_; }
    /// fp32 master weights (bf16 storage only; empty for fp32).
    Tensor& master() { return master_; }

private:
    const ParamLayout* layout_;
    Ledger* ledger_;
    std::vector<Piece> pieces_;
    int64_t size_;
    DType storage_;
    cpu::AdamWParams hp_;
    Tensor master_, m_, v_;
    int t_ = 0;
};

}  // namespace ss
