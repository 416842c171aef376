// fault.cpp — parsing an injected fault and making it happen (see fault.h).
#include "train/fault.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "comm/comm.h"
#include "core/check.h"

namespace ss {

namespace {

const char* kind_name(FaultKind k) {
    switch (k) {
        case FaultKind::none: return "none";
        case FaultKind::throw_error: return "throw";
        case FaultKind::hang: return "hang";
        case FaultKind::exit: return "exit";
    }
    return "?";
}

// A non-negative decimal integer that fits an int, or -1.
int parse_count(const std::string& s) {
    if (s.empty() || s.size() > 9) return -1;
    for (char c : s)
        if (c < '0' || c > '9') return -1;
    return std::atoi(s.c_str());
}

constexpr const char* kFormat = "expected rank=R,step=S,kind=throw|hang|exit, e.g. rank=1,step=3,kind=hang";

// What the faulty rank does at its next call, described as @p call.
void strike(const Fault& f, Comm& comm, const std::string& call) {
    std::ostringstream what;
    what << "injected fault: rank " << f.rank << ", step " << f.step << ": " << kind_name(f.kind) << " at " << call;
    switch (f.kind) {
        case FaultKind::none: return;
        case FaultKind::throw_error: throw Error(what.str());
        case FaultKind::hang: comm.stall(what.str()); return;
        case FaultKind::exit:
            if (std::string(comm.backend_name()) == "mpi") {
                // As a process that crashes: no MPI_Finalize, no atexit handlers
                // (the mpi backend's finalize among them), no report from MPI_Abort.
                std::fprintf(stderr, "rank %d: %s; the process exits (code 3) without MPI_Finalize\n", f.rank,
                             what.str().c_str());
                std::fflush(stderr);
                std::_Exit(3);
            }
            throw RankVanished{};
    }
}

}  // namespace

Fault parse_fault(const std::string& spec) {
    Fault f;
    bool has_rank = false, has_step = false, has_kind = false;
    std::istringstream in(spec);
    std::string item;
    while (std::getline(in, item, ',')) {
        const size_t eq = item.find('=');
        SS_CHECK(eq != std::string::npos, "--inject-fault '" << spec << "': '" << item << "' is not key=value; " << kFormat);
        const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
        if (key == "rank" || key == "step") {
            bool& seen = key == "rank" ? has_rank : has_step;
            SS_CHECK(!seen, "--inject-fault '" << spec << "': " << key << " is given twice; " << kFormat);
            seen = true;
            const int n = parse_count(value);
            SS_CHECK(n >= 0, "--inject-fault '" << spec << "': " << key << "='" << value
                             << "' is not a non-negative integer; " << kFormat);
            (key == "rank" ? f.rank : f.step) = n;
        } else if (key == "kind") {
            SS_CHECK(!has_kind, "--inject-fault '" << spec << "': kind is given twice; " << kFormat);
            has_kind = true;
            if (value == "throw") f.kind = FaultKind::throw_error;
            else if (value == "hang") f.kind = FaultKind::hang;
            else if (value == "exit") f.kind = FaultKind::exit;
            else SS_FAIL("--inject-fault '" << spec << "': kind='" << value << "' is not throw, hang or exit");
        } else {
            SS_FAIL("--inject-fault '" << spec << "': unknown key '" << key << "'; " << kFormat);
        }
    }
    SS_CHECK(has_rank && has_step && has_kind, "--inject-fault '" << spec << "': missing "
             << (!has_rank ? "rank" : !has_step ? "step" : "kind") << "; " << kFormat);
    SS_CHECK(f.step >= 1, "--inject-fault '" << spec << "': step=0 does not exist; steps count from 1");
    return f;
}

std::string fault_str(const Fault& f) {
    if (!f.active()) return "none";
    return "rank=" + std::to_string(f.rank) + ",step=" + std::to_string(f.step) + ",kind=" + kind_name(f.kind);
}

void inject_fault(const Fault& f, Comm& comm, int step, int steps) {
    if (!f.active()) return;
    if (step == 1) {
        SS_CHECK(f.rank < comm.world_size(), "--inject-fault " << fault_str(f) << ": rank " << f.rank
                 << " is outside the world of " << comm.world_size() << " ranks (0.." << comm.world_size() - 1 << ")");
        SS_CHECK(f.step <= steps, "--inject-fault " << fault_str(f) << ": the run has only " << steps
                 << " steps, so the fault would never happen; choose step=1.." << steps);
    }
    if (step != f.step || comm.rank() != f.rank) return;
    comm.before_next_call([f, &comm](const std::string& call) { strike(f, comm, call); });
}

}  // namespace ss
