#include "comm/threads/threads_world.h"

#include <sstream>

#include "core/check.h"

namespace ss::threads {

std::string call_str(const CallDesc& d) {
    std::ostringstream os;
    os << d.op << " on " << d.axis << " (" << d.count << " x " << dtype_name(d.dt);
    if (std::string(d.op) == "all_reduce" || std::string(d.op) == "reduce_scatter")
        os << ", " << reduce_op_name(d.reduce);
    if (d.root >= 0) os << ", root index " << d.root;
    os << "; " << label_str(d.label) << ")";
    return os.str();
}

double World::link_seconds(const char* op, uint64_t bytes, const std::vector<int>& ranks) const {
    const double t = link_seconds_ ? link_seconds_(op, bytes, ranks) : 0.0;
    if (t > timeout_seconds_) {
        std::ostringstream who;
        for (size_t i = 0; i < ranks.size(); ++i) who << (i ? "," : "") << ranks[i];
        SS_FAIL("emulated links: " << op << " of " << bytes << " bytes among ranks [" << who.str() << "] would take "
                                     << t << " s, longer than the " << timeout_seconds_ << " s any call may wait "
                                     << "(--comm-timeout). The links are too slow for this run: --link is GB/s and "
                                     << "microseconds (e.g. --link 10,5); or raise --comm-timeout");
    }
    return t;
}

GroupState::GroupState(std::vector<int> group_ranks)
    : ranks(std::move(group_ranks)),
      arrived(new Arrival[ranks.size()]),
      slots(ranks.size()) {}

World::World(int size, double timeout_seconds,
             std::function<double(const char*, uint64_t, const std::vector<int>&)> link_seconds)
    : size_(size), timeout_seconds_(timeout_seconds), link_seconds_(std::move(link_seconds)),
      finished_(new std::atomic<bool>[size]) {
    SS_CHECK(size >= 1, "threads backend: world size " << size << " must be at least 1");
    SS_CHECK(timeout_seconds > 0, "threads backend: timeout " << timeout_seconds << " s must be positive");
    for (int r = 0; r < size; ++r) {
        inboxes_.push_back(std::make_unique<Inbox>());
        waiting_.push_back(std::make_unique<Waiting>());
        finished_[r] = false;
    }
}

std::chrono::steady_clock::time_point World::deadline() const {
    auto d = std::chrono::duration<double>(timeout_seconds_);
    return std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(d);
}

GroupState& World::group(const std::vector<int>& ranks) {
    std::lock_guard<std::mutex> lock(groups_mu_);
    auto& g = groups_[ranks];
    if (!g) g = std::make_unique<GroupState>(ranks);
    return *g;
}

void World::fail(int rank, const std::string& msg) {
    {
        std::lock_guard<std::mutex> lock(fail_mu_);
        // Only the first failure is the story (a rank marked failing tells its own).
        if (failed_.load() && !(failing_ && rank == failed_rank_)) return;
        failing_ = false;
        failed_rank_ = rank;
        failed_msg_ = msg;
        failed_.store(true);
    }
    wake_all();
}

void World::mark_failing(int rank) {
    {
        std::lock_guard<std::mutex> lock(fail_mu_);
        if (failed_.load()) return;
        failing_ = true;
        failed_rank_ = rank;
        failed_msg_ = "(its error is on its way: it is leaving its work with calls in flight)";
        failed_.store(true);
    }
    wake_all();
}

std::string World::failure() const {
    std::lock_guard<std::mutex> lock(fail_mu_);
    return "rank " + std::to_string(failed_rank_) + " failed: " + failed_msg_;
}

std::string World::first_error() const {
    std::lock_guard<std::mutex> lock(fail_mu_);
    return "rank " + std::to_string(failed_rank_) + ": " + failed_msg_;
}

void World::mark_finished(int rank) {
    finished_[rank].store(true);
    wake_all();
}

// Sets the flag first (done by the callers), then takes each lock a sleeper
// holds while testing it: a sleeper either saw the flag or is already asleep
// and gets this notify. No wake-up is lost.
void World::wake_all() {
    std::lock_guard<std::mutex> lock(groups_mu_);
    for (auto& [ranks, g] : groups_) {
        std::lock_guard<std::mutex> glock(g->mu);
        g->cv.notify_all();
    }
    for (auto& box : inboxes_) {
        std::lock_guard<std::mutex> block(box->mu);
        box->cv.notify_all();
    }
}

void World::set_waiting(int rank, std::string what) {
    std::lock_guard<std::mutex> lock(waiting_[rank]->mu);
    waiting_[rank]->what = std::move(what);
}

std::string World::waiting(int rank) const {
    std::lock_guard<std::mutex> lock(waiting_[rank]->mu);
    return waiting_[rank]->what;
}

}  // namespace ss::threads
