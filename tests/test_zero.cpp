// test_zero.cpp — DDP (naive, bucketed) and ZeRO 1-3 with replica groups
// are the single-rank step: same losses and final parameters; their model
// states are the ZeRO paper's bytes exactly; their traffic is its volumes.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <mutex>

#include "comm/threads/threads_backend.h"
#include "core/check.h"
#include "comm/trace/trace.h"
#include "comm/trace/trace_summary.h"
#include "mesh/process_mesh.h"
#include "model/safetensors.h"
#include "parallel/zero.h"
#include "train/train.h"
#include "equivalence.h"

using namespace ss;

namespace {

std::string out_path(const std::string& name) { return test_file("test_zero_" + name); }

struct Layout {
    int ranks, dp_shard, dp_rep, zero, ga;
    double bucket_mb;
};

TrainOptions make_opts(const std::string& model, int steps) {
    TrainOptions o;
    o.model = model_preset(model);
    o.steps = steps;
    o.quiet = true;
    o.lr = 1e-3f;
    return o;
}

void check_equals_one_rank(const std::string& model, const Layout& l, int steps = 10) {
    const int mbs = 2;
    TrainOptions par = make_opts(model, steps), one = make_opts(model, steps);
    par.ranks = l.ranks;
    par.dp_shard = l.dp_shard;
    par.dp_rep = l.dp_rep;
    par.zero = l.zero;
    par.ga = one.ga = l.ga;
    par.bucket_mb = l.bucket_mb;
    par.mbs = mbs;
    one.mbs = mbs * l.ranks;  // the same global batch on one rank
    std::string tag = model + "_" + std::to_string(l.ranks) + "_" + std::to_string(l.dp_shard) + "x" +
                      std::to_string(l.dp_rep) + "_z" + std::to_string(l.zero) + "_ga" + std::to_string(l.ga) +
                      (l.bucket_mb > 0 ? "_b" : "");
    par.save = out_path(tag + ".safetensors");
    one.save = out_path(model + "_one_" + std::to_string(one.mbs) + "_ga" + std::to_string(l.ga) + ".safetensors");
    INFO(tag);
    require_same_training(par, one);  // tolerances and their reasons: equivalence.h
}

}  // namespace

// [matrix]: every stage over every layout. The ThreadSanitizer run leaves these
// two out (minutes there); the cases below take the same code paths.
TEST_CASE("DDP and ZeRO 1-3 over 2, 4 and 8 ranks equal one rank (tiny, 10 steps)", "[zero][matrix]") {
    for (int zero : {0, 1, 2, 3})
        for (int ranks : {2, 4, 8})
            for (int ga : {1, 2}) check_equals_one_rank("tiny", {ranks, 0, 0, zero, ga, 0});
}

TEST_CASE("bucketed DDP equals naive DDP and one rank", "[zero][ddp]") {
    for (int ranks : {2, 4})
        for (int ga : {1, 2}) check_equals_one_rank("tiny", {ranks, 0, 0, 0, ga, 0.05});
}

TEST_CASE("replica groups (S x R = 2x2, 4x2, 2x4) equal one rank for every stage", "[zero][replicas][matrix]") {
    for (int zero : {0, 1, 2, 3}) {
        check_equals_one_rank("tiny", {4, 2, 2, zero, 1, 0});
        check_equals_one_rank("tiny", {8, 4, 2, zero, 2, 0});
        check_equals_one_rank("tiny", {8, 2, 4, zero, 1, 0});
    }
}

namespace {

// A shard is sum over units of ceil(P_u / N): computed here from the model's
// shape alone, independently of ShardPlan.
int64_t shard_elems(const GPT2Config& c, int n) {
    auto ceil_div = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
    const int64_t C = c.C;
    int64_t s = ceil_div(int64_t(c.V + c.maxT) * C, n);        // wte + wpe
    s += c.L * ceil_div(12 * C * C + 13 * C, n);                // each block
    s += ceil_div(2 * C, n);                                    // ln_f
    return s;
}

}  // namespace

TEST_CASE("model states per rank are the ZeRO paper's bytes, exactly (bf16)", "[zero][memory]") {
    // An odd shape so that units do not divide by N and padding shows up.
    TrainOptions o = make_opts("tiny", 1);
    o.model.C = 50;
    o.model.H = 5;
    o.model.V = 257;  // the byte corpus needs V >= 256
    o.model.maxT = 20;
    o.model.name = "odd";
    o.model.vocab_divisible_by = 1;  // no padding rows: Vp = V = 257, the odd shape this test is about
    o.mbs = 1;
    o.T = 20;
    o.dtype = DType::bf16;
    const int64_t P = num_params(o.model);
    for (int n : {2, 3, 4}) {
        const int64_t S = shard_elems(o.model, n);
        REQUIRE(S * n >= P);
        REQUIRE(S * n - P < int64_t(n) * (o.model.L + 2));  // at most N-1 padding elements per unit
        for (int zero : {0, 1, 2, 3}) {
            o.ranks = n;
            o.zero = zero;
            TrainReport r = train(o, nullptr);
            INFO("N=" << n << " ZeRO-" << zero << " P=" << P << " S=" << S);
            for (const auto& peak : r.rank_peak) {
                const size_t params = peak[int(Mem::params)], grads = peak[int(Mem::grads)],
                             optim = peak[int(Mem::optim)];
                switch (zero) {
                    case 0:  // (2 + 2 + 12) Psi
                        REQUIRE(params == size_t(2 * P));
                        REQUIRE(grads == size_t(2 * P));
                        REQUIRE(optim == size_t(12 * P));
                        break;
                    case 1:  // 2 Psi + 2 Psi + 12 Psi / N
                        REQUIRE(params == size_t(2 * P));
                        REQUIRE(grads == size_t(2 * P));
                        REQUIRE(optim == size_t(12 * S));
                        break;
                    case 2:  // 2 Psi + 14 Psi / N
                        REQUIRE(params == size_t(2 * P));
                        REQUIRE(grads + optim == size_t(14 * S));
                        break;
                    case 3:  // 16 Psi / N
                        REQUIRE(params + grads + optim == size_t(16 * S));
                        break;
                }
            }
        }
    }
}

namespace {

// Sums the nccl-tests bytes of step @p step's collectives by "axis/payload/op".
std::map<std::string, uint64_t> bytes_by_kind(const Trace& t, int rank, int step) {
    std::map<std::string, uint64_t> out;
    for (const TraceEvent& e : t.events)
        if (e.kind == TraceEvent::Kind::collective && e.rank == rank && e.label.step == step)
            out[e.axis + "/" + payload_name(e.label.payload) + "/" + e.name] += e.bytes;
    return out;
}

}  // namespace

TEST_CASE("traffic per step is the ZeRO paper's volume, exactly, and ZeRO-3 forward moves params only",
          "[zero][trace]") {
    TrainOptions o = make_opts("tiny", 2);
    o.mbs = 1;
    o.dtype = DType::bf16;
    const uint64_t P = uint64_t(num_params(o.model)), es = 2;
    for (int n : {2, 4}) {
        const uint64_t S = uint64_t(shard_elems(o.model, n));
        for (int zero : {0, 1, 2, 3}) {
            o.ranks = n;
            o.zero = zero;
            o.trace = out_path("trace_" + std::to_string(n) + "_" + std::to_string(zero) + ".json");
            train(o, nullptr);
            Trace t = read_chrome_trace(o.trace);
            for (int rank = 0; rank < n; ++rank) {
                auto b = bytes_by_kind(t, rank, 2);
                INFO("N=" << n << " ZeRO-" << zero << " rank " << rank);
                // nccl-tests bytes: all_reduce counts its buffer, all_gather its output,
                // reduce_scatter its input; each moves (n-1)/n of that (x2 for all_reduce).
                std::map<std::string, uint64_t> want;
                if (zero == 0) want = {{"dp/grad/all_reduce", P * es}};
                if (zero == 1 || zero == 2)
                    want = {{"dp_shard/grad/reduce_scatter", n * S * es}, {"dp_shard/param/all_gather", n * S * es}};
                if (zero == 3)  // gathered in forward, again in backward; gradients reduce-scattered
                    want = {{"dp_shard/grad/reduce_scatter", n * S * es}, {"dp_shard/param/all_gather", 2 * n * S * es}};
                want["dp/scalar/all_reduce"] = 4;  // the loss
                REQUIRE(b == want);
            }
            for (const TraceEvent& e : t.events)
                if (e.kind == TraceEvent::Kind::collective && e.label.phase == Phase::fwd)
                    REQUIRE(e.label.payload == Payload::param);
        }
    }
}

TEST_CASE("replica groups split the traffic between dp_shard and dp_rep", "[zero][trace][replicas]") {
    TrainOptions o = make_opts("tiny", 2);
    o.mbs = 1;
    o.dtype = DType::bf16;
    o.ranks = 8;
    o.dp_shard = 4;
    o.dp_rep = 2;
    o.zero = 3;
    o.trace = out_path("trace_hsdp.json");
    train(o, nullptr);
    Trace t = read_chrome_trace(o.trace);
    const uint64_t S = uint64_t(shard_elems(o.model, 4));
    auto b = bytes_by_kind(t, 5, 2);
    std::map<std::string, uint64_t> want = {{"dp_shard/param/all_gather", 2 * 4 * S * 2},
                                            {"dp_shard/grad/reduce_scatter", 4 * S * 2},
                                            {"dp_rep/grad/all_reduce", S * 2},  // only my shard crosses replicas
                                            {"dp/scalar/all_reduce", 4}};
    REQUIRE(b == want);
}

TEST_CASE("local SGD: K = 1 is HSDP; K > 1 differs, and replicas agree right after each sync", "[zero][replicas]") {
    TrainOptions o = make_opts("tiny", 4);
    o.mbs = 2;
    o.ranks = 4;
    o.dp_shard = 2;
    o.dp_rep = 2;
    o.zero = 2;
    TrainReport hsdp = train(o, nullptr);
    o.replica_sync_every = 1;
    TrainReport k1 = train(o, nullptr);
    for (int i = 0; i < 4; ++i) REQUIRE(k1.steps[i].loss == hsdp.steps[i].loss);
    o.replica_sync_every = 2;
    TrainReport k2 = train(o, nullptr);
    REQUIRE(k2.steps[0].loss == hsdp.steps[0].loss);  // nothing has diverged before the first update
    bool differs = false;
    for (int i = 1; i < 4; ++i) differs |= k2.steps[i].loss != hsdp.steps[i].loss;
    REQUIRE(differs);
    REQUIRE(k2.replica_batch_line().find("= 2 x 1 x 2 = 4 sequences") != std::string::npos);

    // Replicas hold different parameters between syncs and the same right after one.
    for (int zero : {0, 1, 2, 3}) {
        ProcessMesh mesh(4, MeshShape{1, 2, 2, 1, 1});
        std::vector<std::vector<uint16_t>> after(4), between(4);
        run_threads(4, [&](Comm& comm) {
            Mpu mpu = mesh.mpu(comm.rank());
            Ledger ledger;
            ZeroConfig zc;
            zc.stage = zero;
            zc.replica_sync_every = 2;
            ZeroModel m(o.model, DType::bf16, zc, comm, mpu.get_data_parallel_group(), mpu.dp_shard_group(),
                        mpu.dp_rep_group(), ledger, {});
            m.init(1);
            std::vector<int> tok(2 * 16);
            for (int step = 1; step <= 2; ++step) {
                for (size_t i = 0; i < tok.size(); ++i) tok[i] = int((i * 7 + comm.rank() * 13 + step) % 256);
                Activations acts;
                m.zero_grad();
                m.forward(tok.data(), tok.data(), 2, 16, acts, 0);
                m.backward(tok.data(), tok.data(), acts, 1.0f / 32, 0, true);
                m.step();
                const Tensor& p = m.stored_params();
                std::vector<uint16_t> v(p.bf16(), p.bf16() + p.numel());
                (step == 1 ? between : after)[comm.rank()] = v;
            }
        });
        INFO("ZeRO-" << zero);
        // Ranks r and r + 2 are replicas of each other (same dp_shard index).
        REQUIRE(between[0] != between[2]);
        REQUIRE(after[0] == after[2]);
        REQUIRE(after[1] == after[3]);
    }
}

TEST_CASE("local SGD with overlap on is overlap off, bit for bit: the sync waits for ZeRO-1/2's gathers",
          "[zero][replicas][overlap]") {
    // ZeRO-1/2 start the parameter all-gathers in the step and wait under the next
    // forward; a sync in between must not be overwritten by them when they land.
    for (int zero : {1, 2})
        for (DType dt : {DType::f32, DType::bf16}) {
            INFO("ZeRO-" << zero << " " << dtype_name(dt));
            TrainOptions on = make_opts("tiny", 5);
            on.mbs = 2;
            on.ranks = 4;
            on.dp_shard = 2;
            on.dp_rep = 2;
            on.zero = zero;
            on.dtype = dt;
            on.replica_sync_every = 2;
            TrainOptions off = on;
            on.overlap = true;
            off.overlap = false;
            const TrainReport a = train(on, nullptr), b = train(off, nullptr);
            for (size_t i = 0; i < a.steps.size(); ++i) REQUIRE(a.steps[i].loss == b.steps[i].loss);
        }
}

TEST_CASE("bad data-parallel layouts get clear errors", "[zero][errors]") {
    TrainOptions o = make_opts("tiny", 1);
    o.ranks = 4;
    auto message = [&](TrainOptions x) {
        try {
            train(x, nullptr);
        } catch (const ss::Error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    TrainOptions z4 = o;
    z4.zero = 4;
    REQUIRE_THAT(message(z4), Catch::Matchers::Contains("--zero 4 does not exist"));
    TrainOptions bad_shard = o;
    bad_shard.dp_shard = 3;
    REQUIRE_THAT(message(bad_shard), Catch::Matchers::Contains("3"));
    TrainOptions k0 = o;
    k0.replica_sync_every = 0;
    REQUIRE_THAT(message(k0), Catch::Matchers::Contains("--replica-sync-every must be at least 1"));
    TrainOptions one_replica = k0;  // local SGD with nothing to average: refused, not run as plain DDP
    one_replica.replica_sync_every = 2;
    one_replica.dp_rep = 1;
    REQUIRE_THAT(message(one_replica), Catch::Matchers::Contains("this layout has one replica: nothing to average"));
}

TEST_CASE("trace summary picks one rank and step, and 'moved' is the paper's volume", "[zero][trace]") {
    TrainOptions o = make_opts("tiny", 2);
    o.mbs = 1;
    o.ranks = 4;
    o.zero = 3;
    o.trace = out_path("trace_summary.json");
    train(o, nullptr);
    TraceSummary s = summarize_trace(read_chrome_trace(o.trace), TraceFilter{0, 2});
    const double P = double(num_params(o.model)), N = 4, es = 4;  // fp32; tiny's units divide by 4
    double moved = 0;
    for (const CollectiveTotals& r : s.by_payload)
        if (r.payload != Payload::scalar) moved += r.bus_bytes;
    // ZeRO paper, section 7.2.2: 3 Psi (N-1)/N per rank and step (here in bytes).
    REQUIRE(moved == Approx(3 * P * (N - 1) / N * es).epsilon(1e-12));
    REQUIRE(format_trace_summary(s, "x", true).find(std::to_string(uint64_t(2 * P * es))) != std::string::npos);
}

TEST_CASE("trace summary counts what crosses nodes: ZeRO-3 all three gathers, hpZ's backward none",
          "[zero][trace][nodes]") {
    // 4 ranks as 2 emulated nodes of 2; the ZeRO++ paper's count: ZeRO-3 moves 3 Psi (N-1)/N
    // across nodes per rank and step, hpZ keeps the backward's gathers inside the node.
    TrainOptions o = make_opts("tiny", 2);
    o.mbs = 1;
    o.ranks = 4;
    o.zero = 3;
    o.gpus_per_node = 2;
    o.link_intra = "1000";
    o.link_inter = "1000";  // two tiers, but fast: the test is about bytes
    const double P = double(num_params(o.model)), N = 4, es = 4;  // fp32; tiny's units divide by 4
    for (int hpz : {0, 2}) {
        INFO("--hpz " << hpz);
        o.hpz = hpz;
        o.trace = out_path("trace_nodes_hpz" + std::to_string(hpz) + ".json");
        train(o, nullptr);
        const Trace trace = read_chrome_trace(o.trace);
        REQUIRE(trace_gpus_per_node(trace.other_data) == 2);  // written by train
        const TraceSummary s = summarize_trace(trace, TraceFilter{0, 2});
        REQUIRE(s.gpus_per_node == 2);
        double across = 0, hpz_moved = 0;
        for (const CollectiveTotals& r : s.rows) {
            if (r.payload == Payload::scalar) continue;
            across += r.across_bytes;
            if (r.axis == "hpz") {
                REQUIRE(r.across_bytes == 0);  // inside the node, always
                hpz_moved += r.bus_bytes;
            } else {
                REQUIRE(r.across_bytes == Approx(r.bus_bytes));  // dp_shard spans both nodes
            }
        }
        REQUIRE(across == Approx((hpz ? 2 : 3) * P * (N - 1) / N * es).epsilon(1e-12));
        REQUIRE(hpz_moved == Approx(hpz ? P * (2 - 1) / 2.0 * es : 0).epsilon(1e-12));  // (K-1)/K, K = 2
        REQUIRE(s.nodes.size() == 2);  // step 2 and the total of rank 0
        REQUIRE(s.nodes[0].across == Approx(s.total.across_bytes));
        REQUIRE(s.nodes[0].inside + s.nodes[0].across == Approx(s.total.bus_bytes));
    }
    // Without two tiers the trace has no node size, and the summary no such counts.
    o.gpus_per_node = 0;
    o.link_intra = o.link_inter = "";
    o.hpz = 0;
    o.trace = out_path("trace_nodes_none.json");
    train(o, nullptr);
    REQUIRE(summarize_trace(read_chrome_trace(o.trace)).nodes.empty());
}

TEST_CASE("files stay whole: --init, --save and --dump-grads in every stage match one rank", "[zero][files]") {
    // A checkpoint made by one rank ...
    TrainOptions mk = make_opts("tiny", 3);
    mk.mbs = 4;
    mk.save = out_path("start.safetensors");
    train(mk, nullptr);
    // ... starts one rank and a sharded run at the same place; the first step's
    // gradients (gathered from the shards) and the final files agree.
    TrainOptions one = make_opts("tiny", 2);
    one.mbs = 8;
    one.init = mk.save;
    one.dump_grads = out_path("grads_one.safetensors");
    one.save = out_path("end_one.safetensors");
    train(one, nullptr);
    for (int zero : {0, 1, 2, 3}) {
        TrainOptions par = one;
        par.ranks = 4;
        par.mbs = 2;
        par.zero = zero;
        par.dp_shard = zero == 3 ? 2 : 0;  // also a replica layout for ZeRO-3
        par.dp_rep = zero == 3 ? 2 : 0;
        par.dump_grads = out_path("grads_par.safetensors");
        par.save = out_path("end_par.safetensors");
        train(par, nullptr);
        INFO("ZeRO-" << zero);
        StFile g = read_safetensors(par.dump_grads), g1 = read_safetensors(one.dump_grads);
        REQUIRE(g.tensors.size() == g1.tensors.size());  // every tensor, whole, HF names
        // One forward/backward, then 2 AdamW steps: summation order only (tolerances derived in equivalence.h).
        require_same_gradients(g, g1);
        require_same_params(read_safetensors(par.save), read_safetensors(one.save), one, 2);
    }
}
