#include "optim/adamw.h"

#include <algorithm>
#include <cstring>

#include "core/check.h"
#include "kernels/dispatch.h"

namespace ss {

AdamW::AdamW(const ParamLayout& layout, std::vector<Piece> pieces, int64_t size, DType storage, Ledger& ledger,
             const cpu::AdamWParams& hp)
    : layout_(&layout), ledger_(&ledger), pieces_(std::move(pieces)), size_(size), storage_(storage), hp_(hp) {
    for (const Piece& p : pieces_)
        SS_CHECK(0 <= p.flat_begin && p.flat_begin <= p.flat_end && p.flat_end <= layout.total && p.local >= 0 &&
                     p.local + (p.flat_end - p.flat_begin) <= size,
                 "optimizer piece [" << p.flat_begin << ", " << p.flat_end << ") at " << p.local
                                     << " does not fit a local buffer of " << size << " over " << layout.total
                                     << " parameters");
    if (storage == DType::bf16) master_ = Tensor(ledger, Mem::optim, {size});
    m_ = Tensor(ledger, Mem::optim, {size});
    v_ = Tensor(ledger, Mem::optim, {size});
}

AdamW::AdamW(const ParamLayout& layout, int64_t begin, int64_t end, DType storage, Ledger& ledger,
             const cpu::AdamWParams& hp)
    : AdamW(layout, {Piece{begin, end, 0}}, end - begin, storage, ledger, hp) {}

void AdamW::set_master(const float* params_f32) {
    if (storage_ == DType::bf16) std::memcpy(master_.f32(), params_f32, sizeof(float) * size_t(size_));
}

void AdamW::step(void* params, const void* grads, DType grads_dtype) {
    ++t_;
    const int64_t n = size_;
    const float* g = static_cast<const float*>(grads);
    Tensor widened;  // bf16 gradients are widened to fp32 for the update (workspace, this call only)
    if (grads_dtype == DType::bf16) {
        widened = Tensor(*ledger_, Mem::workspace, {n}, DType::f32, false);
        kern::bf16_to_f32(widened.f32(), static_cast<const uint16_t*>(grads), size_t(n));
        g = widened.f32();
    }
    float* p = storage_ == DType::bf16 ? master_.f32() : static_cast<float*>(params);

    // Walk the parameters that overlap each piece: each segment gets its tensor's weight decay.
    for (const Piece& piece : pieces_) {
        for (const ParamSpec& s : layout_->specs) {
            int64_t lo = std::max(piece.flat_begin, s.offset), hi = std::min(piece.flat_end, s.offset + s.numel);
            if (lo >= hi) continue;
            cpu::AdamWParams hp = hp_;
            if (!s.decay) hp.weight_decay = 0.0f;
            int64_t i = piece.local + (lo - piece.flat_begin);
            kern::adamw_update(p + i, g + i, m_.f32() + i, v_.f32() + i, long(hi - lo), t_, hp);
        }
    }
    if (storage_ == DType::bf16) kern::f32_to_bf16(static_cast<uint16_t*>(params), master_.f32(), size_t(n));
}

}  // namespace ss
