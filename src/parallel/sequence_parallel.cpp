#include "parallel/sequence_parallel.h"

#include <cstring>

#include "core/tensor.h"

namespace ss {

UlyssesComm::UlyssesComm(Comm& comm, Group sp_group, Ledger& ledger)
    : comm_(comm), group_(std::move(sp_group)), ledger_(ledger), rank_(group_.index_of(comm.rank())) {}

namespace {
// One all_to_all buffer of n floats, booked in Mem::comm while the call runs: every float is
// written before it is read, so it is not zeroed.
Tensor exchange_buffer(Ledger& ledger, size_t n) { return Tensor(ledger, Mem::comm, {int64_t(n)}, DType::f32, false); }
}  // namespace

// Blocks of the all_to_all are [B][Tl][P*Cs], one per peer, Cs = C/sp.

void UlyssesComm::seq_to_heads(const float* src, float* dst, int B, int Tl, int C, int parts, int layer,
                               bool backward) {
    const int s = size(), Cs = C / s, W = parts * Cs;  // W: the row width of one block
    const size_t block = size_t(B) * Tl * W;
    Tensor send_buf = exchange_buffer(ledger_, block * s), recv_buf = exchange_buffer(ledger_, block * s);
    float *send = send_buf.f32(), *recv = recv_buf.f32();
    // To peer j: my tokens, the columns of j's heads in each of the P parts.
    for (int j = 0; j < s; ++j)
        for (int b = 0; b < B; ++b)
            for (int t = 0; t < Tl; ++t)
                for (int p = 0; p < parts; ++p)
                    std::memcpy(&send[j * block + (size_t(b) * Tl + t) * W + p * Cs],
                                src + (size_t(b) * Tl + t) * parts * C + p * C + j * Cs, sizeof(float) * Cs);
    comm_.all_to_all(send, recv, block, group_, label(layer, backward));
    // From peer i: its tokens (positions i*Tl ..) of my heads.
    const int T = Tl * s;
    for (int i = 0; i < s; ++i)
        for (int b = 0; b < B; ++b)
            std::memcpy(dst + (size_t(b) * T + size_t(i) * Tl) * W, &recv[i * block + size_t(b) * Tl * W],
                        sizeof(float) * size_t(Tl) * W);
}

void UlyssesComm::heads_to_seq(const float* src, float* dst, int B, int Tl, int C, int parts, int layer,
                               bool backward) {
    const int s = size(), Cs = C / s, W = parts * Cs;
    const size_t block = size_t(B) * Tl * W;
    const int T = Tl * s;
    Tensor send_buf = exchange_buffer(ledger_, block * s), recv_buf = exchange_buffer(ledger_, block * s);
    float *send = send_buf.f32(), *recv = recv_buf.f32();
    // To peer i: the tokens it holds, of my heads.
    for (int i = 0; i < s; ++i)
        for (int b = 0; b < B; ++b)
            std::memcpy(&send[i * block + size_t(b) * Tl * W], src + (size_t(b) * T + size_t(i) * Tl) * W,
                        sizeof(float) * size_t(Tl) * W);
    comm_.all_to_all(send, recv, block, group_, label(layer, backward));
    // From peer j: my tokens, j's heads: put them back in their columns.
    for (int j = 0; j < s; ++j)
        for (int b = 0; b < B; ++b)
            for (int t = 0; t < Tl; ++t)
                for (int p = 0; p < parts; ++p)
                    std::memcpy(dst + (size_t(b) * Tl + t) * parts * C + p * C + j * Cs,
                                &recv[j * block + (size_t(b) * Tl + t) * W + p * Cs], sizeof(float) * Cs);
}

}  // namespace ss
