// live.cpp — train() on a worker thread, its output captured line by line, and
// stopped between steps on request (see live.h).
#include "viz/app/live.h"

#include <exception>
#include <filesystem>
#include <ostream>
#include <streambuf>
#include <system_error>

#include "model/config.h"

namespace ss::viz {

namespace {

// A streambuf that appends to LiveRun::log under its mutex, so the UI can show
// train()'s per-step lines while it runs.
class LogBuf : public std::streambuf {
public:
    explicit LogBuf(LiveRun& run) : run_(run) {}

protected:
    int overflow(int c) override {
        if (c != EOF) {
            std::lock_guard<std::mutex> lock(run_.mu);
            run_.log.push_back(char(c));
        }
        return c;
    }
    std::streamsize xsputn(const char* s, std::streamsize n) override {
        std::lock_guard<std::mutex> lock(run_.mu);
        run_.log.append(s, size_t(n));
        return n;
    }

private:
    LiveRun& run_;
};

}  // namespace

// The window closed, or the headless limit passed, with the run going: the worker
// touches this LiveRun until it returns, so it is stopped (before its next step)
// and waited for, never detached.
LiveRun::~LiveRun() {
    stop.requested = true;
    if (worker.joinable()) worker.join();
}

void live_start(LiveUi& ui) {
    if (live_active(ui)) return;
    ui.run = std::make_unique<LiveRun>();
    LiveRun& run = *ui.run;
    run.stop.by = "the viewer";
    const LiveConfig c = ui.cfg;
    TrainOptions o;
    o.model = model_preset(model_preset_names()[size_t(c.model)]);
    o.ranks = c.ranks;
    o.tp = c.tp;
    o.zero = c.zero;
    o.dp_rep = c.dp_rep;
    o.mbs = c.mbs;
    o.ga = c.ga;
    o.steps = c.steps;
    o.dtype = c.dtype == 1 ? DType::bf16 : DType::f32;
    o.bucket_mb = c.bucket_mb;
    o.blas_threads = 1;
    // The first live-N.json not there yet: an earlier session's traces are kept. (An
    // out_dir that cannot be read counts as empty; train() then says what is wrong with it.)
    auto trace_name = [&](int n) {
        return (std::filesystem::path(ui.out_dir) / ("live-" + std::to_string(n) + ".json")).string();
    };
    std::error_code ec;
    do ++ui.runs;
    while (std::filesystem::exists(trace_name(ui.runs), ec));
    o.trace = trace_name(ui.runs);
    run.trace = o.trace;
    run.worker = std::thread([&run, o] {
        LogBuf buf(run);
        std::ostream out(&buf);
        try {
            out << "$ shardscope train --model " << o.model.name << " --ranks " << o.ranks << " --tp " << o.tp
                << " --zero " << o.zero << " --dp-rep " << o.dp_rep << " --mbs " << o.mbs << " --ga " << o.ga
                << " --steps " << o.steps << " --dtype " << (o.dtype == DType::bf16 ? "bf16" : "fp32")
                << " --trace " << o.trace << "\n";
            train(o, &out, &run.stop);
        } catch (const std::exception& e) {
            std::lock_guard<std::mutex> lock(run.mu);
            run.error = e.what();
        }
        run.phase = LivePhase::finished;  // last: the UI reads log and error once it sees this
    });
}

bool live_active(const LiveUi& ui) { return ui.run && ui.run->phase != LivePhase::shown; }

void live_stop(LiveUi& ui) {
    if (ui.run) ui.run->stop.requested = true;
}

bool live_poll(LiveUi& ui, std::string& trace_path, std::string& error) {
    LivePhase finished = LivePhase::finished;
    if (!ui.run || !ui.run->phase.compare_exchange_strong(finished, LivePhase::shown)) return false;
    if (ui.run->worker.joinable()) ui.run->worker.join();
    std::lock_guard<std::mutex> lock(ui.run->mu);
    trace_path = ui.run->trace;
    error = ui.run->error;
    return true;
}

}  // namespace ss::viz
