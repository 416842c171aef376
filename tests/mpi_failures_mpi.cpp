// mpi_failures_mpi.cpp — jobs that fail on purpose, one way per mode.
//
// A failed collective under MPI ends in MPI_Abort, which ends the whole job, so
// these cannot run inside a Catch test. tests/mpi_failure.sh runs each mode
// under mpirun and checks that the job failed, within a time limit (nothing
// hangs), with a message that names the call, the group and who is missing.
//
//     skip       rank 1 returns without making an all_reduce (the others know at once)
//     stuck      rank 1 "computes" forever (rank 0 names it after the 1 s timeout)
//     elsewhere  rank 1 waits in a barrier instead (the report says where)
//     throw      rank 2 throws (its message; the job ends at once)
//     recv       rank 1 waits for a message rank 0 never sends
//     start            rank 0 starts an all_reduce rank 1 never makes; its wait names rank 1
//     throw_in_flight  rank 2 throws with a started all_reduce in flight (the others make it)
//     throw_stuck      rank 1 throws with a started all_reduce in flight that rank 0 never makes
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "comm/comm.h"
#include "comm/mpi/mpi_backend.h"
#include "core/check.h"

using namespace ss;

namespace {
void sleep_s(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }
}  // namespace

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "";
    const std::vector<Group> pairs = {{"tp", {0, 1}}, {"tp", {2, 3}}};
    if (mode == "skip") {
        run_mpi([](Comm& comm) {
            float x = 1;
            const Label label{Payload::grad, 2, Phase::bwd, -1, 3};
            if (comm.rank() != 1) comm.all_reduce(&x, 1, comm.world_group(), ReduceOp::sum, label);
        }, CommOptions{60, {}, {}});
    } else if (mode == "stuck") {
        run_mpi([](Comm& comm) {
            float x = 1;
            if (comm.rank() == 1) sleep_s(60);  // until rank 0's MPI_Abort ends it
            comm.all_reduce(&x, 1, Group{"tp", {0, 1}}, ReduceOp::sum, {Payload::act, 2, Phase::bwd, -1, 3});
        }, CommOptions{1, {}, {}}, {Group{"tp", {0, 1}}});
    } else if (mode == "elsewhere") {
        run_mpi([](Comm& comm) {
            float x = 1;
            if (comm.rank() == 0) comm.all_reduce(&x, 1, Group{"tp", {0, 1}}, ReduceOp::sum, {Payload::grad, 5});
            if (comm.rank() != 0) sleep_s(0.3);
            comm.barrier(comm.world_group(), {Payload::scalar, -1, Phase::step});
        }, CommOptions{1, {}, {}}, pairs);
    } else if (mode == "throw") {
        run_mpi([](Comm& comm) {
            std::vector<float> x(100, 1.0f);
            for (int step = 0; step < 10; ++step) {
                if (comm.rank() == 2 && step == 3) throw Error("loss is NaN at step 3");
                comm.all_reduce(x.data(), x.size(), comm.world_group(), ReduceOp::sum,
                                {Payload::grad, -1, Phase::bwd, -1, step});
            }
        }, CommOptions{60, {}, {}});
    } else if (mode == "recv") {
        run_mpi([](Comm& comm) {
            float x = 0;
            if (comm.rank() == 0) sleep_s(60);
            if (comm.rank() == 1) comm.recv(&x, 1, 0, {Payload::act, -1, Phase::fwd, 2}, "pp");
        }, CommOptions{1, {}, {}});
    } else if (mode == "start") {
        run_mpi([](Comm& comm) {
            float x = 1;
            if (comm.rank() == 1) sleep_s(60);  // until rank 0's MPI_Abort ends it
            CommHandle h = comm.start_all_reduce(&x, 1, DType::f32, Group{"tp", {0, 1}}, ReduceOp::sum,
                                                 {Payload::grad, 4, Phase::bwd});
            comm.wait(h);
        }, CommOptions{1, {}, {}}, {Group{"tp", {0, 1}}});
    } else if (mode == "ahead") {
        run_mpi([](Comm& comm) {
            float x = 1, y = 1;
            if (comm.rank() == 1) sleep_s(60);  // until rank 0's MPI_Abort ends it
            CommHandle h1 = comm.start_all_reduce(&x, 1, DType::f32, comm.world_group(), ReduceOp::sum,
                                                  {Payload::param, 1, Phase::fwd});
            if (comm.rank() == 2) {  // waits in the later call, a blocking one, and times out after rank 0
                // (Comm::wait of a started second call would wait h1 first, the call before it on
                // the group: then it is not ahead.)
                sleep_s(0.3);
                comm.all_reduce(&y, 1, DType::f32, comm.world_group(), ReduceOp::sum, {Payload::param, 2, Phase::fwd});
                comm.wait(h1);
                return;
            }
            CommHandle h2 = comm.start_all_reduce(&y, 1, DType::f32, comm.world_group(), ReduceOp::sum,
                                                  {Payload::param, 2, Phase::fwd});
            comm.wait(h1);
            comm.wait(h2);
        }, CommOptions{1, {}, {}});
    } else if (mode == "throw_in_flight") {
        run_mpi([](Comm& comm) {
            std::vector<float> x(100, 1.0f);
            for (int step = 0; step < 10; ++step) {
                CommHandle h = comm.start_all_reduce(x.data(), x.size(), DType::f32, comm.world_group(),
                                                     ReduceOp::sum, {Payload::grad, -1, Phase::bwd, -1, step});
                if (comm.rank() == 2 && step == 3) throw Error("loss is NaN at step 3");
                comm.wait(h);
            }
        }, CommOptions{60, {}, {}});
    } else if (mode == "throw_stuck") {
        run_mpi([](Comm& comm) {
            float x = 1;
            if (comm.rank() == 0) sleep_s(60);  // until rank 1's MPI_Abort ends it
            CommHandle h = comm.start_all_reduce(&x, 1, DType::f32, Group{"tp", {0, 1}}, ReduceOp::sum,
                                                 {Payload::grad, 6, Phase::bwd});
            throw Error("rank 1 failed with a call in flight");
        }, CommOptions{1, {}, {}}, {Group{"tp", {0, 1}}});
    } else {
        std::fprintf(stderr, "usage: mpirun -np N %s skip|stuck|elsewhere|throw|recv|start|ahead|throw_in_flight|throw_stuck\n",
                     argv[0]);
        return 2;
    }
    std::fprintf(stderr, "rank %d: the job did not fail\n", mpi_world_rank());
    return 0;
}
