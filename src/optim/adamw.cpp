#include "optim/adamw.h"

#include <algorithm>
#include <cstring>

#include "core/check.h"

namespace ss {

AdamW::AdamW(const ParamLayout& layout, int64_t begin, int64_t end, DType storage, Ledger& ledger,
             const cpu::AdamWParams& hp)
    : layout_(&layout), ledger_(&ledger), begin_(begin), end_(end), storage_(storage), hp_(hp) {
    SS_CHECK(0 <= begin && begin <= end && end <= layout.total,
             "optimizer slice [" << begin << ", " << end << ") is outside the " << layout.total << " parameters");
    const int64_t n = end - begin;
    if (storage == DType::bf16) master_ = Tensor(ledger, Mem::optim, {n});
    m_ = Tensor(ledger, Mem::optim, {n});
    v_ = Tensor(ledger, Mem::optim, {n});
}

void AdamW::set_master(const float* params_f32) {
    if (storage_ == DType::bf16) std::memcpy(master_.f32(), params_f32, sizeof(float) * size_t(end_ - begin_));
}

void AdamW::step(void* params, const void* grads, DType grads_dtype) {
    ++t_;
    const int64_t n = end_ - begin_;
    const float* g = static_cast<const float*>(grads);
    Tensor widened;  // bf16 gradients are widened to fp32 for the update (workspace, this call only)
    if (grads_dtype == DType::bf16) {
        widened = Tensor(*ledger_, Mem::workspace, {n}, DType::f32, false);
        bf16_to_f32(widened.f32(), static_cast<const uint16_t*>(grads), size_t(n));
        g = widened.f32();
    }
    float* p = storage_ == DType::bf16 ? master_.f32() : static_cast<float*>(params);

    // Walk the parameters that overlap [begin, end): each segment gets its own weight decay.
    for (const ParamSpec& s : layout_->specs) {
        int64_t lo = std::max(begin_, s.offset), hi = std::min(end_, s.offset + s.numel);
        if (lo >= hi) continue;
        cpu::AdamWParams hp = hp_;
        if (!s.decay) hp.weight_decay = 0.0f;
        int64_t i = lo - begin_;
        cpu::adamw_update(p + i, g + i, m_.f32() + i, v_.f32() + i, long(hi - lo), t_, hp);
    }
    if (storage_ == DType::bf16) f32_to_bf16(static_cast<uint16_t*>(params), master_.f32(), size_t(n));
}

}  // namespace ss
