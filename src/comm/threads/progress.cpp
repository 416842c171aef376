// progress.cpp — the threads backend's progress threads (progress.h).
#include "comm/threads/progress.h"

#include <algorithm>
#include <cstdio>

#include "core/check.h"

namespace ss::threads {

// One group's queue and the thread that runs it.
struct Progress::Queue {
    std::mutex mu;
    std::condition_variable cv;             // new job, or stop
    std::condition_variable idle_cv;        // the queue became empty and no job runs
    std::deque<std::shared_ptr<Job>> jobs;  // queued, oldest first
    std::shared_ptr<QueuePulse> pulse = std::make_shared<QueuePulse>();
    bool running = false;                   // a job is running now
    bool stopping = false;
    std::thread thread;

    void loop() {
        std::unique_lock<std::mutex> lock(mu);
        for (;;) {
            cv.wait(lock, [&] { return stopping || !jobs.empty(); });
            if (jobs.empty()) return;  // stopping, and everything ran
            std::shared_ptr<Job> job = jobs.front();
            jobs.pop_front();
            running = true;
            lock.unlock();
            const auto t0 = std::chrono::steady_clock::now();
            pulse->running_since.store(t0.time_since_epoch().count());
            bool failed = false;
            std::string error;
            try {
                job->run();
            } catch (const std::exception& e) {
                failed = true;
                error = e.what();
            } catch (...) {
                failed = true;
                error = job->what + ": threw something that is not a std::exception";
            }
            {
                std::lock_guard<std::mutex> jl(job->mu);
                job->started = t0;
                job->finished = std::chrono::steady_clock::now();
                job->failed = failed;
                job->error = std::move(error);
                job->done = true;
                job->run = nullptr;  // frees what the call captured
            }
            job->cv.notify_all();
            lock.lock();
            running = false;
            if (jobs.empty()) idle_cv.notify_all();
        }
    }
};

namespace {

// The Request of a job on a progress thread.
class JobRequest final : public Request {
public:
    JobRequest(std::shared_ptr<Job> job, double backstop) : job_(std::move(job)), backstop_(backstop) {}
    void wait() override {
        using clock = std::chrono::steady_clock;
        std::unique_lock<std::mutex> lock(job_->mu);
        const auto backstop = std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(backstop_));
        const auto waited_from = clock::now();
        while (!job_->done) {
            // The call running on the queue (this one, or one before it) began at `since`; each
            // call ahead that finishes moves it, and the deadline with it.
            const auto since =
                std::max(waited_from, clock::time_point(clock::duration(job_->pulse->running_since.load())));
            if (clock::now() >= since + backstop) {
                char secs[32];
                std::snprintf(secs, sizeof secs, "%.1f", backstop_);
                throw Error("wait for " + job_->what + ": the call running on its group's queue has not finished " +
                            "after " + secs + " s, past every call's own timeout; the progress thread is stuck");
            }
            job_->cv.wait_until(lock, since + backstop, [&] { return job_->done; });
        }
        started = job_->started;
        finished = job_->finished;
        if (job_->failed) throw Error(job_->error);
    }

private:
    std::shared_ptr<Job> job_;
    double backstop_;
};

}  // namespace

Progress::Progress(double backstop_seconds) : backstop_seconds_(backstop_seconds) {}

Progress::~Progress() {
    for (auto& [key, q] : queues_) {
        {
            std::lock_guard<std::mutex> lock(q->mu);
            q->stopping = true;
        }
        q->cv.notify_all();
    }
    for (auto& [key, q] : queues_)
        if (q->thread.joinable()) q->thread.join();
}

Progress::Queue& Progress::queue(const QueueKey& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = queues_.find(key);
    if (it != queues_.end()) return *it->second;
    auto q = std::make_unique<Queue>();
    q->thread = std::thread([raw = q.get()] { raw->loop(); });
    return *queues_.emplace(key, std::move(q)).first->second;
}

std::unique_ptr<Request> Progress::submit(const QueueKey& key, std::function<void()> run, std::string what) {
    auto job = std::make_shared<Job>();
    job->run = std::move(run);
    job->what = std::move(what);
    Queue& q = queue(key);
    job->pulse = q.pulse;
    {
        std::lock_guard<std::mutex> lock(q.mu);
        q.jobs.push_back(job);
    }
    q.cv.notify_one();
    return std::make_unique<JobRequest>(std::move(job), backstop_seconds_);
}

void Progress::drain(const QueueKey& key) {
    Queue* q = nullptr;
    {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = queues_.find(key);
        if (it == queues_.end()) return;  // nothing was ever started on it
        q = it->second.get();
    }
    if (q->thread.get_id() == std::this_thread::get_id()) return;  // the queue's own call
    std::unique_lock<std::mutex> lock(q->mu);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(backstop_seconds_);
    SS_CHECK(q->idle_cv.wait_until(lock, deadline, [&] { return q->jobs.empty() && !q->running; }),
             "a blocking call waited " << int(backstop_seconds_) << " s for the calls started before it on "
                                       << "its group to finish, past every call's own timeout; the progress "
                                       << "thread is stuck");
}

}  // namespace ss::threads
