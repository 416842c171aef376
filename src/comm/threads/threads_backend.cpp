// threads_backend.cpp — the collectives of the `threads` backend, by hand.
//
// All ranks are threads of one process, so a rank can read another rank's
// buffer directly: "sending" chunk c to my right neighbour is my right
// neighbour reading chunk c out of my buffer. What remains is the algorithm
// and the synchronisation, which is what this file is for.
//
// ---- all_reduce: the ring, as NCCL does it ------------------------------------------
//
// The ranks of the group form a ring, in group order; each one only ever reads
// from its LEFT neighbour (rank r-1, wrapping round):
//
//          +--------+     +--------+     +--------+     +--------+
//     +--> | rank 0 | --> | rank 1 | --> | rank 2 | --> | rank 3 | --+
//     |    +--------+     +--------+     +--------+     +--------+   |
//     +--------------------------------------------------------------+
//
// ("rank" here is the index in the group.) Every buffer is cut into n chunks
// c0..c3; "r3.c2" is chunk 2 of rank 3's buffer.
//
// Phase 1, reduce-scatter, n-1 steps. At step s, rank r takes chunk
// (r-2-s) mod n as its left neighbour has it (at step 0 the neighbour's own
// values, later the neighbour's running sum) and adds its own values to it:
//
//                rank 0          rank 1          rank 2          rank 3
//     step 0     c2 += r3.c2     c3 += r0.c3     c0 += r1.c0     c1 += r2.c1
//     step 1     c1 += r3.c1     c2 += r0.c2     c3 += r1.c3     c0 += r2.c0
//     step 2     c0 += r3.c0     c1 += r0.c1     c2 += r1.c2     c3 += r2.c3
//
// Follow c0: rank 2 makes x1+x2, rank 3 adds x3, rank 0 adds x0. After n-1
// steps rank r holds the full sum of chunk r (and ReduceOp::avg divides it by n).
//
// Phase 2, all-gather, n-1 steps. At step t, rank r copies its left
// neighbour's chunk (r-1-t) mod n, which the neighbour completed one step before:
//
//                rank 0          rank 1          rank 2          rank 3
//     step 0     c3 = r3.c3      c0 = r0.c0      c1 = r1.c1      c2 = r2.c2
//     step 1     c2 = r3.c2      c3 = r0.c3      c0 = r1.c0      c1 = r2.c1
//     step 2     c1 = r3.c1      c2 = r0.c2      c3 = r1.c3      c0 = r2.c0
//
// Each rank reads n-1 chunks in each phase, 2(n-1)/n of the buffer in all,
// whatever n is: nccl-tests' all-reduce bus-bandwidth factor. reduce_scatter
// is phase 1 alone and all_gather is phase 2 alone.
//
// Between steps all ranks of the group meet at a barrier (sync()), so at step
// s+1 the left neighbour's chunk is the one it finished at step s. NCCL instead
// streams slices of each chunk through small buffers with a flag per slice, so
// steps overlap; the order of the additions is the same.
//
// Fixed order: chunk c is always summed as ((x[c+1] + x[c+2]) + ...) + x[c],
// so every run gives the same bits. A serial sum x0 + x1 + ... rounds in a
// different order and may differ in the last bits (tests allow for it).
//
// Running sums live in two small fp32 buffers per rank (one chunk each), so
// the caller's input is only read until the owner writes its finished chunk.
// bf16 is therefore summed in fp32; the owner rounds its chunk to bf16 once at
// the end of phase 1, and phase 2 moves bf16 (reduce_kernels.h).
//
// ---- the others ----------------------------------------------------------------
//
//   all_to_all   each rank copies block `me` of every rank's send into its recv
//   broadcast    each rank copies the root's buffer
//   send / recv  through the receiver's inbox (threads_p2p.cpp)
//   barrier      one sync point
//
// Every collective is: post (my description and buffer pointers in my slot),
// sync, check that all members called the same thing (begin() and sync(), in
// threads_sync.cpp), the steps (each ending in a sync), done. The last sync also means no rank returns (and reuses its
// buffer) while another may still read it; a rank that leaves a call early, by
// an exception, first waits until no other member is inside it (InCall).
#include "comm/threads/threads_backend.h"

#include <cstring>
#include <thread>

#include "comm/reduce_kernels.h"
#include "comm/threads/threads_world.h"
#include "core/check.h"

namespace ss {

using threads::CallDesc;

// Chunk c of a buffer of `total` elements cut into n nearly equal chunks.
struct ThreadsBackend::Chunks {
    size_t total;
    int n;
    size_t begin(int c) const { return size_t((unsigned __int128)total * c / n); }
    size_t size(int c) const { return begin(c + 1) - begin(c); }
    size_t max_size() const { return (total + n - 1) / n; }
};

namespace {

int mod(int a, int n) { return ((a % n) + n) % n; }

}  // namespace

// ---- the ring ------------------------------------------------------------------------

// Phase 1: see the table at the top of the file. `in` (my n chunks) is only
// read. The running sums travel in fp32 through two chunk-sized buffers per
// rank, `partials`, taken by step parity: at step s my right neighbour reads
// the sum I made at step s-1 while I write the other buffer. At the last step
// the sum of my own chunk is complete; it is written to `out` (fp32, may be my
// chunk of `in` itself), or to a partials buffer when `out` is null, and
// finish() turns it into the result (the average, the bf16 rounding).
template <class T>
void ThreadsBackend::ring_reduce_scatter(GroupCtx& g, const CallDesc& d, const T* in, float* partials,
                                         const Chunks& chunks, float* out,
                                         const std::function<void(float*, size_t)>& finish) {
    const int n = chunks.n, me = g.me, left = mod(me - 1, n);
    const size_t stride = chunks.max_size();
    const T* left_in = static_cast<const T*>(slot(g, left).data);
    const float* left_partials = static_cast<const float*>(slot(g, left).work);
    for (int s = 0; s < n - 1; ++s) {
        const int c = mod(me - 2 - s, n);
        const size_t b = chunks.begin(c), len = chunks.size(c);
        const bool last = s == n - 2;  // then c == me
        float* sum = last && out ? out : partials + (s % 2) * stride;
        if (s == 0)
            reduce::sum(sum, in + b, left_in + b, len);  // my chunk + my left neighbour's
        else
            reduce::sum(sum, in + b, left_partials + ((s - 1) % 2) * stride, len);  // + its running sum
        if (last) finish(sum, len);
        sync(g, d);
    }
}

// Phase 2 on the data buffers, any dtype: see the table at the top of the file.
void ThreadsBackend::ring_all_gather(GroupCtx& g, const CallDesc& d, char* data, const Chunks& chunks,
                                     size_t elem_size) {
    const int n = chunks.n, me = g.me, left = mod(me - 1, n);
    const char* left_data = static_cast<const char*>(slot(g, left).data);
    for (int t = 0; t < n - 1; ++t) {
        const int c = mod(me - 1 - t, n);
        const size_t off = chunks.begin(c) * elem_size, len = chunks.size(c) * elem_size;
        if (len) std::memcpy(data + off, left_data + off, len);
        sync(g, d);
    }
}

// ---- the collectives ----------------------------------------------------------------

void ThreadsBackend::all_reduce(void* buf, size_t count, DType dt, const Group& group, ReduceOp op,
                                const Label& label) {
    drain(0, group.ranks);
    const int n = group.size();
    if (n == 1) return;  // the sum, and the average, of one value is itself
    const float divisor = op == ReduceOp::avg ? float(n) : 1.0f;
    GroupCtx& g = ctx(group);
    const CallDesc d{"all_reduce", group.axis, count, dt, op, -1, label};

    const Chunks chunks{count, n};
    float* partials = scratch(g, 2 * chunks.max_size());
    InCall call = begin(g, d, buf, partials);
    if (dt == DType::f32) {
        float* x = static_cast<float*>(buf);
        ring_reduce_scatter(g, d, static_cast<const float*>(x), partials, chunks, x + chunks.begin(g.me),
                            [&](float* sum, size_t len) {
                                if (divisor != 1.0f) reduce::divide(sum, len, divisor);
                            });
    } else {  // bf16: sums in fp32, rounded once, by the chunk's owner
        uint16_t* x = static_cast<uint16_t*>(buf);
        ring_reduce_scatter(g, d, static_cast<const uint16_t*>(x), partials, chunks, nullptr,
                            [&](float* sum, size_t len) {
                                reduce::narrow_to_bf16(x + chunks.begin(g.me), sum, len, divisor);
                            });
    }
    ring_all_gather(g, d, static_cast<char*>(buf), chunks, dtype_size(dt));
    emulate_link(call, d.op, count, dt);
}

void ThreadsBackend::reduce_scatter(const void* send, void* recv, size_t count_per_rank, DType dt,
                                    const Group& group, ReduceOp op, const Label& label) {
    drain(0, group.ranks);
    const int n = group.size();
    const size_t total = size_t(n) * count_per_rank;
    if (n == 1) {
        if (send != recv && total) std::memcpy(recv, send, total * dtype_size(dt));
        return;
    }
    const float divisor = op == ReduceOp::avg ? float(n) : 1.0f;
    GroupCtx& g = ctx(group);
    const CallDesc d{"reduce_scatter", group.axis, count_per_rank, dt, op, -1, label};

    const Chunks chunks{total, n};  // chunk j is block j: count_per_rank elements
    float* partials = scratch(g, 2 * chunks.max_size());
    InCall call = begin(g, d, send, partials);
    if (dt == DType::f32) {
        ring_reduce_scatter(g, d, static_cast<const float*>(send), partials, chunks, static_cast<float*>(recv),
                            [&](float* sum, size_t len) {
                                if (divisor != 1.0f) reduce::divide(sum, len, divisor);
                            });
    } else {
        ring_reduce_scatter(g, d, static_cast<const uint16_t*>(send), partials, chunks, nullptr,
                            [&](float* sum, size_t len) {
                                reduce::narrow_to_bf16(static_cast<uint16_t*>(recv), sum, len, divisor);
                            });
    }
    emulate_link(call, d.op, count_per_rank, dt);
}

void ThreadsBackend::all_gather(const void* send, void* recv, size_t count_per_rank, DType dt,
                                const Group& group, const Label& label) {
    drain(0, group.ranks);
    const int n = group.size();
    const size_t es = dtype_size(dt), block = count_per_rank * es;
    GroupCtx* g = n > 1 ? &ctx(group) : nullptr;
    const int me = g ? g->me : 0;
    char* mine = static_cast<char*>(recv) + size_t(me) * block;
    if (send != mine && block) std::memcpy(mine, send, block);  // my own block first
    if (n == 1) return;
    const CallDesc d{"all_gather", group.axis, count_per_rank, dt, ReduceOp::sum, -1, label};
    InCall call = begin(*g, d, recv, nullptr);
    ring_all_gather(*g, d, static_cast<char*>(recv), Chunks{size_t(n) * count_per_rank, n}, es);
    emulate_link(call, d.op, count_per_rank, dt);
}

void ThreadsBackend::all_to_all(const void* send, void* recv, size_t count_per_rank, DType dt,
                                const Group& group, const Label& label) {
    drain(0, group.ranks);
    const int n = group.size();
    const size_t block = count_per_rank * dtype_size(dt);
    if (n == 1) {
        if (block) std::memcpy(recv, send, block);
        return;
    }
    GroupCtx& g = ctx(group);
    const CallDesc d{"all_to_all", group.axis, count_per_rank, dt, ReduceOp::sum, -1, label};
    InCall call = begin(g, d, send, nullptr);
    // Block j of my recv is block `me` of member j's send. Start at my right
    // neighbour, so that not every rank reads member 0 first.
    for (int k = 1; k <= n; ++k) {
        const int j = (g.me + k) % n;
        const char* theirs = static_cast<const char*>(slot(g, j).data);
        if (block) std::memcpy(static_cast<char*>(recv) + size_t(j) * block, theirs + size_t(g.me) * block, block);
    }
    sync(g, d);  // nobody returns while others still read its send
    emulate_link(call, d.op, count_per_rank, dt);
}

void ThreadsBackend::broadcast(void* buf, size_t count, DType dt, int root_index, const Group& group,
                               const Label& label) {
    drain(0, group.ranks);
    const int n = group.size();
    if (n == 1) return;
    GroupCtx& g = ctx(group);
    const CallDesc d{"broadcast", group.axis, count, dt, ReduceOp::sum, root_index, label};
    InCall call = begin(g, d, buf, nullptr);
    // Every rank reads the root directly: over shared memory that is one copy.
    // (Across machines NCCL pipelines it down a ring or a tree instead.)
    if (g.me != root_index && count) std::memcpy(buf, slot(g, root_index).data, count * dtype_size(dt));
    sync(g, d);
    emulate_link(call, d.op, count, dt);
}

void ThreadsBackend::barrier(const Group& group, const Label& label) {
    drain(0, group.ranks);
    if (group.size() == 1) return;
    GroupCtx& g = ctx(group);
    InCall call = begin(g, CallDesc{"barrier", group.axis, 0, DType::f32, ReduceOp::sum, -1, label}, nullptr, nullptr);
    emulate_link(call, "barrier", 0, DType::f32);
}
// ---- the launcher ----------------------------------------------------------------------

void run_threads(int world, const std::function<void(Comm&)>& body, const CommOptions& opts) {
    SS_CHECK(world >= 1, "run_threads: world=" << world << " must be at least 1");
    SS_CHECK(opts.tracers.empty() || int(opts.tracers.size()) == world,
             "run_threads: " << opts.tracers.size() << " tracers for " << world
                             << " ranks; give one per rank (make_tracers(world)) or none");
    threads::World shared(world, opts.timeout_seconds, opts.link_seconds);
    std::vector<std::thread> ranks;
    ranks.reserve(world);
    auto rank_main = [&](int r) {
        // The Comm outlives the try: a failure is known to every rank before its
        // progress threads are joined, so their waits end at once.
        std::unique_ptr<Comm> comm;
        try {
            comm = std::make_unique<Comm>(r, world, std::make_unique<ThreadsBackend>(shared, r),
                                          opts.tracers.empty() ? nullptr : opts.tracers[r]);
            body(*comm);
            comm->wait_all();  // calls started and never waited for still end with the rank
        } catch (const RankVanished&) {
            // The rank ends here as if its work had returned: finished, not failed.
        } catch (const std::exception& e) {
            shared.fail(r, e.what());  // ignored if another rank failed first
        } catch (...) {
            shared.fail(r, "an exception that is not a std::exception");
        }
        shared.mark_finished(r);
        comm.reset();
    };
    try {
        for (int r = 0; r < world; ++r) ranks.emplace_back(rank_main, r);
    } catch (const std::exception& e) {  // could not start a thread: stop those that started
        shared.fail(-1, std::string("run_threads could not start rank ") + std::to_string(ranks.size()) +
                            ": " + e.what());
    }
    for (auto& t : ranks) t.join();
    if (shared.failed()) throw Error(shared.first_error());
}

}  // namespace ss
