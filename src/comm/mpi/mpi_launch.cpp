// mpi_launch.cpp — one rank per process: starting MPI once, run_mpi, and the
// one way out of a failed collective (MPI_Abort).
//
// Under `mpirun -np 4 prog`, four copies of prog start; each calls run_mpi,
// MPI tells each its rank, and each runs the body as that rank:
//
//     process 0: run_mpi(body) -> body(Comm rank 0)  -+
//     process 1: run_mpi(body) -> body(Comm rank 1)  -+-  MPI between them
//     ...                                            -+
//
// If any rank fails it prints "rank R: <why>" and calls MPI_Abort, which ends
// every process of the job (Open MPI's mpirun then exits non-zero), so no rank
// is left waiting for one that is gone.
#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <thread>

#include "comm/mpi/mpi_session.h"
#include "core/check.h"

namespace ss {

namespace mpi {

int rank_if_running() {
    int rank = -1, initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
}

void fail_call(const char* call, int rc, const char* file, int line) {
    char text[MPI_MAX_ERROR_STRING] = {0};
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) std::snprintf(text, sizeof text, "MPI error code %d", rc);
    const int rank = rank_if_running();
    const char* src = std::strstr(file, "src/");  // "src/comm/mpi/mpi_backend.cpp", not the whole path
    const std::string name(call, std::strcspn(call, "("));
    std::ostringstream os;
    os << name << " failed on rank " << rank << " (" << (src ? src : file) << ":" << line << "): " << text;
    throw Error(os.str());
}

namespace {
void finalize_at_exit() {
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized) MPI_Finalize();
}
}  // namespace

void ensure_initialized() {
    static bool done = false;  // the body runs on the main thread (MPI_THREAD_FUNNELED)
    if (done) return;
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    SS_CHECK(!finalized, "MPI has already been finalised in this process; the mpi backend cannot start again");
    if (!initialized) {
        int provided = 0;
        const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
        SS_CHECK(rc == MPI_SUCCESS, "MPI_Init_thread failed (code " << rc << "); run under mpirun, or use --backend threads");
        std::atexit(finalize_at_exit);  // whoever called MPI_Init finalises: here, once
    }
    // Errors come back as codes, so SS_MPI_CHECK can name the call (communicators
    // made from the world inherit this).
    SS_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    done = true;
}

void abort_world(const std::string& message) {
    const int rank = rank_if_running();
    std::fprintf(stderr, "rank %d: %s\n", rank, message.c_str());
    std::fflush(stderr);
    if (rank >= 0) MPI_Abort(MPI_COMM_WORLD, 1);  // MPI runs
    std::_Exit(1);
}

MPI_Datatype datatype(DType dt) {
    switch (dt) {
        case DType::f32: return MPI_FLOAT;
        case DType::bf16: return MPI_UINT16_T;  // MPI has no bf16: the bits travel as 16-bit integers
        case DType::i32: return MPI_INT32_T;
        case DType::u8: return MPI_UINT8_T;  // ZeRO++'s quantized payloads (moved, never reduced)
    }
    SS_FAIL("mpi backend: unknown dtype " << int(dt));
}

void pause(uint64_t polls) {
    if (polls < 64) return;  // spin: the answer is usually microseconds away
    if (polls < 200000) {
        sched_yield();  // several ranks may share one core (mpirun --oversubscribe)
        return;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));  // a long wait: stop burning the core
}

bool test(MPI_Request& req) {
    int done = 0;
    SS_MPI_CHECK(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
    return done != 0;
}

bool wait_for(MPI_Request& req, double timeout_seconds) {
    const double deadline = now_seconds() + timeout_seconds;
    for (uint64_t polls = 0;; ++polls) {
        if (test(req)) return true;
        if (now_seconds() > deadline) return false;
        pause(polls);
    }
}

}  // namespace mpi

// ---- the public functions ------------------------------------------------------------

bool mpi_available() { return true; }

int mpi_world_rank() {
    mpi::ensure_initialized();
    int rank = 0;
    SS_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    return rank;
}

int mpi_world_size() {
    mpi::ensure_initialized();
    int size = 0;
    SS_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    return size;
}

void run_mpi(const std::function<void(Comm&)>& body, const CommOptions& opts,
             const std::vector<Group>& groups_to_prepare) {
    mpi::run_rank<MpiBackend>("run_mpi", body, opts, groups_to_prepare);  // mpi_session.h
}

}  // namespace ss
