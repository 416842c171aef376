// fault.h — injected faults: one rank goes wrong on purpose, to test that the
// whole run still ends, and to learn what a failed distributed run looks like.
//
//   shardscope train --ranks 4 --zero 3 --comm-timeout 2 --inject-fault rank=1,step=3,kind=hang
//
// The training loop calls inject_fault() at the start of every step. At step S
// on rank R it arms the fault, which strikes at the rank's next collective or
// send/recv (Comm::before_next_call), so that every message can name the call:
//
//   kind    rank R                                    how the run ends
//   -----   ---------------------------------------   ------------------------------------------------
//   throw   throws ss::Error "injected fault: rank R,  threads: the others stop at their next wait and
//           step S: throw at <call>"                   run_threads reports rank R's error;
//                                                      mpi: run_mpi prints it, MPI_Abort ends the job
//   hang    stops communicating (Comm::stall), as a    the others' waits time out after --comm-timeout:
//           rank stuck in its own code                 "desync: <call>: rank R did not arrive within
//                                                      T s; rank R is not waiting in any collective"
//   exit    vanishes. threads: its work returns at     threads: at once, "desync: <call>: rank R did not
//           once (RankVanished); mpi: the process      arrive: it returned from its work ...";
//           ends without MPI_Finalize (std::_Exit(3))  mpi: it prints where it died, mpirun ends the job
//
// No rank is left running: under threads the stalled rank wakes when the run
// fails (Backend::stall); under MPI, MPI_Abort or mpirun end every process.
// docs/reliability.md ("Injected faults") lists the tests that hold this.
#pragma once

#include <string>

namespace ss {

class Comm;

/// What an injected fault does to its rank (see the table at the top of fault.h).
enum class FaultKind {
    none,         ///< no fault (the default)
    throw_error,  ///< `throw`: the rank throws ss::Error
    hang,         ///< `hang`: the rank stops communicating
    exit,         ///< `exit`: the rank vanishes (its work returns; under MPI its process exits)
};

/// One injected fault: rank @p rank goes wrong at step @p step (1-based, as the
/// step lines print it).
struct Fault {
    int rank = -1;                     ///< global rank that fails
    int step = -1;                     ///< step at whose start it is armed
    FaultKind kind = FaultKind::none;  ///< what it does

    /// True when a fault is set.
    bool active() const { return kind != FaultKind::none; }
};

/// Parses "rank=R,step=S,kind=throw|hang|exit" (the three keys in any order,
/// each once). Throws ss::Error naming the spec and what is wrong with it.
Fault parse_fault(const std::string& spec);

/// "rank=1,step=3,kind=hang" (what parse_fault reads), or "none".
std::string fault_str(const Fault& f);

/// Called by the training loop at the start of step @p step (of @p steps) on
/// every rank. At step 1 it checks that @p f can happen in this run (its rank
/// inside the world, its step inside the run) and throws ss::Error if not; at
/// step f.step on rank f.rank it arms the fault on @p comm. Does nothing when
/// no fault is set.
void inject_fault(const Fault& f, Comm& comm, int step, int steps);

}  // namespace ss
