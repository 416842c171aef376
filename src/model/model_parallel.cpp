// model_parallel.cpp — the one-rank model-parallel operators: with a single
// rank every f and g is the identity, the sequence gathers and scatters and
// the Ulysses all-to-alls are copies, and "ring" attention is one block, the
// whole sequence.
#include "model/model_parallel.h"

#include <cstring>
#include <vector>

#include "kernels/cpu/attention_block.h"

namespace ss {

void SequenceParallel::seq_to_heads(const float* src, float* dst, int B, int Tl, int C, int parts, int, bool) {
    std::memcpy(dst, src, sizeof(float) * size_t(B) * Tl * C * parts);
}

void SequenceParallel::heads_to_seq(const float* src, float* dst, int B, int Tl, int C, int parts, int, bool) {
    std::memcpy(dst, src, sizeof(float) * size_t(B) * Tl * C * parts);
}

void TensorParallel::gather_seq(const float* mine, float* all, int B, int Tl, int C, int, bool) {
    std::memcpy(all, mine, sizeof(float) * size_t(B) * Tl * C);
}

void TensorParallel::scatter_seq(const float* all, float* mine, int B, int Tl, int C, int, bool) {
    std::memcpy(mine, all, sizeof(float) * size_t(B) * Tl * C);
}

void SequenceParallel::ring_forward(float* out, float* lse, const float* q, const float* kv, int B, int Tl, int C,
                                    int NH, int) {
    std::vector<float> m(size_t(B) * NH * Tl), l(m.size());
    cpu::attention_block_init(m.data(), l.data(), out, B, Tl, C, NH);
    const std::vector<int> causal = cpu::causal_visible(Tl, Tl, 0, 0);
    cpu::attention_block_forward(m.data(), l.data(), out, q, C, kv, kv + C, 2 * C, B, Tl, Tl, causal.data(), C, NH);
    cpu::attention_block_finish(out, lse, m.data(), l.data(), out, B, Tl, C, NH);
}

void SequenceParallel::ring_backward(float* dqkv, const float* dout, const float* q, const float* kv,
                                     const float* out, const float* lse, int B, int Tl, int C, int NH, int) {
    std::vector<float> D(size_t(B) * NH * Tl);
    cpu::attention_block_delta(D.data(), dout, out, B, Tl, C, NH);
    const std::vector<int> causal = cpu::causal_visible(Tl, Tl, 0, 0);
    cpu::attention_block_backward(dqkv, dqkv + C, dqkv + 2 * C, 3 * C, dout, q, C, kv, kv + C, 2 * C, lse, D.data(),
                                  B, Tl, Tl, causal.data(), C, NH, /*overwrite=*/true);
}

ModelParallel ModelParallel::none() {
    static TensorParallel one_tp;  // stateless: safe to share between rank threads
    static SequenceParallel one_sp;
    return ModelParallel{one_tp, one_sp};
}

}  // namespace ss
