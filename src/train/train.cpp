#include "train/train.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <ostream>

#include "core/check.h"
#include "kernels/cpu/blas.h"
#include "model/checkpoint.h"
#include "model/gpt2.h"
#include "optim/adamw.h"
#include "train/corpus.h"
#include "train/data.h"
#include "core/atomic_file.h"

namespace ss {

std::string TrainReport::gbs_line() const {
    char buf[256];
    std::snprintf(buf, sizeof buf, "GBS = MBS x GA x DP = %d x %d x %d = %lld sequences (x T %d = %lld tokens per step)",
                  opts.mbs, opts.ga, dp, (long long)gbs, T, (long long)(gbs * T));
    return buf;
}

nlohmann::json TrainReport::to_json() const {
    using nlohmann::json;
    const GPT2Config& m = opts.model;
    json j;
    j["config"] = {{"model", m.name}, {"L", m.L},           {"C", m.C},         {"H", m.H},
                   {"V", m.V},        {"maxT", m.maxT},     {"T", T},           {"mbs", opts.mbs},
                   {"ga", opts.ga},   {"steps", opts.steps}, {"lr", opts.lr},   {"seed", opts.seed},
                   {"dtype", dtype_name(opts.dtype)},         {"data", opts.data.empty() ? "builtin" : opts.data}};
    j["num_params"] = num_params;
    j["gbs"] = {{"mbs", opts.mbs}, {"ga", opts.ga}, {"dp", dp}, {"gbs", gbs}, {"tokens_per_step", gbs * T},
                {"formula", "GBS = MBS x GA x DP"}, {"line", gbs_line()}};
    json st = json::array();
    for (const StepStats& s : steps)
        st.push_back({{"step", s.step}, {"loss", s.loss}, {"ms", s.ms}, {"tokens_per_s", s.tokens_per_s}});
    j["steps"] = st;
    json mem;
    for (int c = 0; c < kMemCategories; ++c)
        mem[mem_name(Mem(c))] = {{"live_bytes", live[c]}, {"peak_bytes", peak[c]}};
    mem["peak_total_bytes"] = peak_total;
    j["memory"] = mem;
    return j;
}

// 1234567 -> "1,234,567"
static std::string with_commas(size_t v) {
    std::string digits = std::to_string(v), out;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

void print_memory(std::ostream& out, const TrainReport& r) {
    char buf[200];
    std::snprintf(buf, sizeof buf, "memory of rank 0 (bytes)   %16s %16s %12s\n", "live at end", "peak", "peak MiB");
    out << buf;
    for (int c = 0; c < kMemCategories; ++c) {
        std::snprintf(buf, sizeof buf, "  %-24s %16s %16s %12.3f\n", mem_name(Mem(c)), with_commas(r.live[c]).c_str(),
                      with_commas(r.peak[c]).c_str(), r.peak[c] / 1048576.0);
        out << buf;
    }
    std::snprintf(buf, sizeof buf, "  %-24s %16s %16s %12.3f\n", "total (peak of the sum)", "",
                  with_commas(r.peak_total).c_str(), r.peak_total / 1048576.0);
    out << buf;
}

static void check_options(const TrainOptions& o, int T) {
    validate(o.model);
    SS_CHECK(o.mbs >= 1, "--mbs must be at least 1 (got " << o.mbs << ")");
    SS_CHECK(o.ga >= 1, "--ga must be at least 1 (got " << o.ga << ")");
    SS_CHECK(o.steps >= 0, "--steps must not be negative (got " << o.steps << ")");
    SS_CHECK(T >= 1, "--seq must be at least 1 (got " << T << ")");
    SS_CHECK(T <= o.model.maxT, "--seq " << T << " is longer than the positional table (maxT=" << o.model.maxT
                                         << "); use --seq " << o.model.maxT << " or less, or raise --max-seq");
    SS_CHECK(o.lr > 0.0f, "--lr must be positive (got " << o.lr << ")");
}

TrainReport train(const TrainOptions& opts, std::ostream* out) {
    TrainReport r;
    r.opts = opts;
    r.T = opts.T > 0 ? opts.T : opts.model.maxT;
    check_options(opts, r.T);
    const int B = opts.mbs, T = r.T;
    r.dp = 1;
    r.gbs = int64_t(opts.mbs) * opts.ga * r.dp;
    cpu::set_blas_threads(opts.blas_threads);

    // Data first: a bad file should fail before any big allocation.
    std::vector<uint16_t> tokens = opts.data.empty() ? builtin_corpus_tokens() : read_token_file(opts.data);
    check_tokens(tokens, opts.model.V, opts.data.empty() ? "the built-in corpus" : opts.data);
    DataLoader loader(std::move(tokens), B, T);

    Ledger ledger;
    GPT2 model(opts.model, ledger, opts.dtype);
    if (opts.init.empty())
        model.init(opts.seed);
    else
        load_model(model, opts.init);
    r.num_params = model.layout().total;
    cpu::AdamWParams hp;
    hp.lr = opts.lr;
    hp.beta1 = opts.beta1;
    hp.beta2 = opts.beta2;
    hp.eps = opts.eps;
    hp.weight_decay = opts.weight_decay;
    AdamW optim(model.layout(), 0, model.layout().total, opts.dtype, ledger, hp);
    optim.set_master(model.w());

    if (out) {
        char buf[256];
        std::snprintf(buf, sizeof buf, "model %s: L=%d C=%d H=%d V=%d maxT=%d, %lld parameters, %s\n",
                      opts.model.name.c_str(), opts.model.L, opts.model.C, opts.model.H, opts.model.V,
                      opts.model.maxT, (long long)r.num_params, dtype_name(opts.dtype));
        *out << buf << r.gbs_line() << "\n";
    }

    Activations acts;
    const float dloss = 1.0f / float(B * T * opts.ga);  // mean over all tokens of the step
    for (int step = 1; step <= opts.steps; ++step) {
        auto t0 = std::chrono::steady_clock::now();
        model.zero_grad();
        double loss_sum = 0.0;
        for (int micro = 0; micro < opts.ga; ++micro) {
            loader.next_batch();
            loss_sum += model.forward(loader.inputs().data(), loader.targets().data(), B, T, acts);
            model.backward(loader.inputs().data(), loader.targets().data(), acts, dloss);
            acts.clear();  // saved activations die after their backward
        }
        model.store_grads();
        if (step == 1 && !opts.dump_grads.empty())
            write_safetensors(opts.dump_grads, flat_to_safetensors(model.layout(), model.g(), opts.dtype));
        optim.step(model.params().data(), model.grads().data(), opts.dtype);
        model.load_compute_params();
        auto t1 = std::chrono::steady_clock::now();

        StepStats s;
        s.step = step;
        s.loss = float(loss_sum / opts.ga);
        s.ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
        s.tokens_per_s = double(r.gbs) * T / (s.ms / 1000.0);
        r.steps.push_back(s);
        if (out && !opts.quiet) {
            char buf[160];
            std::snprintf(buf, sizeof buf, "step %4d/%d | loss %.4f | %8.1f ms | %10.0f tok/s\n", step, opts.steps,
                          s.loss, s.ms, s.tokens_per_s);
            *out << buf << std::flush;
        }
    }

    if (!opts.save.empty()) save_model(model, opts.save);
    for (int c = 0; c < kMemCategories; ++c) {
        r.live[c] = ledger.live(Mem(c));
        r.peak[c] = ledger.peak(Mem(c));
    }
    r.peak_total = ledger.peak_total();
    if (out) {
        print_memory(*out, r);
        *out << r.gbs_line() << "\n";
    }
    if (!opts.json.empty()) write_json_file(opts.json, r.to_json());
    return r;
}

}  // namespace ss
