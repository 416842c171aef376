// mpi_watch.cpp — nothing hangs: waiting with a deadline, and naming who is missing.
//
// MPI's blocking collectives wait forever, and even after a timeout MPI cannot
// say which ranks never arrived. So every call of the mpi backend starts the
// non-blocking form and waits here, polling it against a deadline; between polls
// the rank answers a side channel of its own (a dup of the world):
//
//     rank 0 (waits in the tp all_reduce)          rank 1 (waits in the world barrier)
//       ... 60 s pass ...
//       query  ------------------------------------>  (answers between its own polls)
//              <------------------------------------  "W g0#4 0 x fp32 / barrier on world group [0,1,2,3]"
//       error: "desync: all_reduce on tp group [0,1] (grad, layer 5): rank 1 did not arrive
//               within 60 s; rank 1 is waiting in barrier on world group [0,1,2,3] (scalar, step)"
//
// A rank whose work has returned sends every other rank a "finished" notice
// with the number of calls it made on each group; a rank waiting in call k of a
// group whose member finished after fewer than k+1 calls there knows at once
// that the member skipped it, without waiting for the timeout.
//
// The error is thrown; run_mpi prints it and calls MPI_Abort, because an MPI
// collective that has begun cannot be cancelled.
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "comm/comm.h"
#include "comm/launch_env.h"
#include "comm/mpi/mpi_detail.h"
#include "core/check.h"
#include "core/text.h"

namespace ss::mpi {

namespace {

// Tags of the side channel (it has its own communicator, so they meet nothing else).
constexpr int kQuery = 1;     // "where are you?" (empty)
constexpr int kReply = 2;     // "W\n<key>\n<signature>\n<what>" or "F" (returned from its work)
constexpr int kFinished = 3;  // "<calls on group 0> <calls on group 1> ..."

std::string seconds(double s) {
    std::ostringstream os;
    os << s << " s";
    return os.str();
}

// Splits "a\nb\nc" into at most n parts (the last keeps any further newlines).
std::vector<std::string> split_lines(const std::string& s, size_t n) {
    std::vector<std::string> out;
    size_t pos = 0;
    while (out.size() + 1 < n) {
        size_t nl = s.find('\n', pos);
        if (nl == std::string::npos) break;
        out.push_back(s.substr(pos, nl - pos));
        pos = nl + 1;
    }
    out.push_back(s.substr(pos));
    return out;
}

}  // namespace

// ---- WaitInfo ------------------------------------------------------------------------

std::string WaitInfo::what() const {
    static const Label none{};
    const Label& l = label ? *label : none;
    if (group) return describe_call(op, *group, l);
    std::ostringstream os;
    os << op << (std::string(op) == "send" ? " to rank " : " from rank ") << peer << " on "
       << (axis && !axis->empty() ? *axis : "?") << " (" << label_str(l) << ")";
    return os.str();
}

std::string WaitInfo::key() const {
    if (group_index >= 0) return "g" + std::to_string(group_index) + "#" + std::to_string(seq);
    if (group) return std::string(op) + "#" + std::to_string(seq);  // prepare: not on a prepared group
    return "-";
}

std::string WaitInfo::signature() const {
    std::ostringstream os;
    os << count << " x " << dtype_name(dt);
    if (reduce) os << ", " << reduce;
    if (root >= 0) os << ", root index " << root;
    return os.str();
}

std::vector<int> WaitInfo::others(int me) const {
    if (!group) return {peer};
    std::vector<int> out;
    for (int r : group->ranks)
        if (r != me) out.push_back(r);
    return out;
}

// ---- Watch ------------------------------------------------------------------------

Watch::Watch(MPI_Comm ctl, int rank, int world, double timeout_seconds)
    : ctl_(ctl), rank_(rank), world_(world), timeout_(timeout_seconds) {
    SS_CHECK(timeout_seconds > 0, "mpi backend: timeout " << timeout_seconds << " s must be positive");
    // Only under a launcher: a process started by hand (a singleton, perhaps under nohup)
    // may outlive its shell on purpose.
    if (!mpi_launch_from_env().variable.empty()) launcher_ = int(getppid());
}

// `kill -9 mpirun` leaves its processes running, reparented: they would train on
// to the end, unseen, saving checkpoints and holding the checkpoint folder's
// lock. Each rank notices at its next wait that its parent changed, and stops.
// It exits at once: there is no one to report to (the launcher's pipes are gone),
// and a checkpoint is written to a temporary folder first (train/sharded_checkpoint.h), so
// `latest` still names a complete one.
void Watch::check_launcher() const {
    if (launcher_ <= 1 || int(getppid()) == launcher_) return;
    std::fprintf(stderr,
                 "shardscope: rank %d: the launcher that started this process (pid %d, mpirun or its daemon) is "
                 "gone; stopping here. A checkpoint being saved is left unfinished; `latest` still names a "
                 "complete one.\n",
                 rank_, launcher_);
    std::fflush(stderr);
    std::_Exit(1);
}

Watch::~Watch() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    for (auto& o : out_) MPI_Request_free(&o.req);  // they complete in the background
}

void Watch::post(int dest, int tag, std::string text) {
    out_.push_back({MPI_REQUEST_NULL, std::move(text)});
    Outgoing& o = out_.back();
    SS_MPI_CHECK(MPI_Isend(o.text.data(), int(o.text.size()), MPI_CHAR, dest, tag, ctl_, &o.req));
}

// Answers queries, stores replies and notices, forgets sent answers.
void Watch::service(const WaitInfo* waiting) {
    for (;;) {
        int flag = 0;
        MPI_Message msg;
        MPI_Status st;
        SS_MPI_CHECK(MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, ctl_, &flag, &msg, &st));
        if (!flag) break;
        int n = 0;
        SS_MPI_CHECK(MPI_Get_count(&st, MPI_CHAR, &n));
        std::string text(size_t(n), '\0');
        SS_MPI_CHECK(MPI_Mrecv(text.data(), n, MPI_CHAR, &msg, MPI_STATUS_IGNORE));
        const int from = st.MPI_SOURCE;
        if (st.MPI_TAG == kQuery) {
            if (finishing_ || !waiting)
                post(from, kReply, "F");
            else
                post(from, kReply, "W\n" + waiting->key() + "\n" + waiting->signature() + "\n" + waiting->what());
        } else if (st.MPI_TAG == kReply) {
            replies_[from] = text;
        } else if (st.MPI_TAG == kFinished) {
            Finished f;
            std::istringstream is(text);
            for (uint64_t c; is >> c;) f.calls.push_back(c);
            f.at = now_seconds();
            finished_[from] = std::move(f);
        }
    }
    for (auto it = out_.begin(); it != out_.end();) {  // forget the answers that have gone
        int done = 0;
        SS_MPI_CHECK(MPI_Test(&it->req, &done, MPI_STATUS_IGNORE));
        it = done ? out_.erase(it) : std::next(it);
    }
}

// A member that returned from its work before making this call, if any: the desync report.
std::string Watch::skipped(const WaitInfo& info) const {
    std::vector<int> gone;
    std::ostringstream detail;
    for (int r : info.others(rank_)) {
        auto it = finished_.find(r);
        if (it == finished_.end()) continue;
        if (!info.group) {  // send / recv
            if (std::string(info.op) == "send")
                return info.what() + ": rank " + std::to_string(r) +
                       " returned from its work without receiving this message";
            // A message it sent just before may still be on the way: allow it a second.
            if (now_seconds() - it->second.at < 1.0) continue;
            return "desync: " + info.what() + ": rank " + std::to_string(r) +
                   " did not send: it returned from its work without sending this message";
        }
        if (info.group_index < 0) continue;
        const auto& calls = it->second.calls;
        const uint64_t made = size_t(info.group_index) < calls.size() ? calls[info.group_index] : 0;
        if (made <= info.seq) {
            gone.push_back(r);
            detail << "; rank " << r << " made " << made << " call" << (made == 1 ? "" : "s")
                   << " on this group, this is call " << info.seq + 1;
        }
    }
    if (gone.empty()) return "";
    return "desync: " + info.what() + ": rank" + (gone.size() > 1 ? "s " : " ") + join_ints(gone) +
           " did not arrive: " + (gone.size() > 1 ? "they" : "it") +
           " returned from " + (gone.size() > 1 ? "their" : "its") + " work without making this call" +
           detail.str();
}

void Watch::wait(const std::function<bool()>& done, const WaitInfo& info) {
    check_launcher();
    if (done()) return;
    const double deadline = now_seconds() + timeout_;
    for (uint64_t polls = 0;; ++polls) {
        if (done()) return;
        check_launcher();
        service(&info);
        if (!finished_.empty()) {  // only near the end of a run
            std::string why = skipped(info);
            if (!why.empty()) throw Error(why);
        }
        if (now_seconds() > deadline) timed_out(info);
        pause(polls);
    }
}

namespace {

// True if @p their_key ("g3#18") is a later call on the group of @p info (key "g3#17"):
// calls on a group are made in order, so a member waiting in a later one made this one.
bool later_on_same_group(const std::string& their_key, const WaitInfo& info) {
    if (info.group_index < 0) return false;
    const std::string prefix = "g" + std::to_string(info.group_index) + "#";
    if (their_key.compare(0, prefix.size(), prefix) != 0) return false;
    const std::string n = their_key.substr(prefix.size());
    if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos) return false;
    return std::stoull(n) > info.seq;
}

}  // namespace

// Asks the members where they are, then throws the report.
void Watch::timed_out(const WaitInfo& info) {
    const std::vector<int> others = info.others(rank_);
    replies_.clear();
    int asked = 0;
    for (int r : others)
        if (!finished_.count(r)) {
            post(r, kQuery, "");
            ++asked;
        }
    // Answers come within microseconds from a rank that is polling; a short grace
    // period lets one that is between two polls answer too.
    const double grace_end = now_seconds() + std::clamp(timeout_ / 2, 0.5, 3.0);
    for (uint64_t polls = 0; int(replies_.size()) < asked && now_seconds() < grace_end; ++polls) {
        service(&info);
        pause(polls);
    }

    const std::string key = info.key(), sig = info.signature();
    std::vector<int> missing;
    std::vector<std::string> notes;
    std::vector<std::pair<int, std::string>> arrived_differently;  // same call, other signature
    for (int r : others) {
        const std::string who = "rank " + std::to_string(r);
        if (finished_.count(r)) {  // it made this call (else skipped() would have said so), or it is a send/recv
            if (!info.group || info.group_index < 0) {
                missing.push_back(r);
                notes.push_back(who + " returned from its work");
            }
            continue;
        }
        auto it = replies_.find(r);
        if (it == replies_.end()) {
            missing.push_back(r);
            notes.push_back(who + " is not waiting in any collective (it did not answer: busy computing, stuck, "
                                  "or in a call outside ShardScope's Comm)");
            continue;
        }
        if (it->second == "F") {
            missing.push_back(r);
            notes.push_back(who + " returned from its work and waits for the others to finish");
            continue;
        }
        auto parts = split_lines(it->second, 4);  // W, key, signature, what
        if (parts.size() == 4 && parts[1] == key && key != "-") {
            if (parts[2] != sig) arrived_differently.push_back({r, parts[2]});
            continue;  // it is in this very call
        }
        if (parts.size() == 4 && later_on_same_group(parts[1], info)) {
            // Started calls (ZeRO-3's prefetch): it made this call and waits in a later one on
            // the group, so it arrived here; naming it among the missing would blame it.
            notes.push_back(who + " made this call and is ahead, waiting in " + parts[3]);
            continue;
        }
        missing.push_back(r);
        notes.push_back(who + " is waiting in " + (parts.size() == 4 ? parts[3] : it->second));
    }

    std::ostringstream os;
    const std::string limit = seconds(timeout_);
    if (std::string(info.op) == "recv") {
        os << "desync: " << info.what() << ": rank " << info.peer << " did not send within " << limit;
    } else if (std::string(info.op) == "send") {
        os << info.what() << ": rank " << info.peer << " did not receive it within " << limit;
    } else if (!missing.empty()) {
        os << "desync: " << info.what() << ": rank" << (missing.size() > 1 ? "s " : " ") << join_ints(missing)
           << " did not arrive within " << limit;
    } else if (!arrived_differently.empty()) {
        os << "mismatched collectives on group " << ranks_str(info.group->ranks) << ": rank " << rank_
           << " called " << info.what() << " with " << sig;
        for (auto& [r, s] : arrived_differently) os << ", but rank " << r << " called it with " << s;
    } else {
        os << info.what() << ": every member reached this call but MPI did not complete it within " << limit
           << " (a very slow link, or a mismatch MPI cannot see)";
    }
    for (const auto& n : notes) os << "; " << n;
    throw Error(os.str());
}

void Watch::finish(const std::vector<uint64_t>& calls_per_group) {
    finishing_ = true;
    std::ostringstream os;
    for (size_t i = 0; i < calls_per_group.size(); ++i) os << (i ? " " : "") << calls_per_group[i];
    for (int r = 0; r < world_; ++r)
        if (r != rank_) post(r, kFinished, os.str());
    // No timeout here: a rank may still have long work to do (writing a
    // checkpoint); if it gets stuck in a collective, its own wait times out.
    for (uint64_t polls = 0; int(finished_.size()) < world_ - 1; ++polls) {
        service(nullptr);
        pause(polls);
    }
    for (uint64_t polls = 0; !out_.empty(); ++polls) {  // my notices have been received
        service(nullptr);
        pause(polls);
    }
}

}  // namespace ss::mpi
