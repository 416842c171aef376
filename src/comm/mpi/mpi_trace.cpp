// mpi_trace.cpp — one Chrome trace for a job of many processes.
//
// Under the threads backend every Tracer is in one process and
// write_chrome_trace() puts them in one file. Under mpirun each process holds
// only its own, so the events travel to rank 0 first:
//
//     1. MPI_Barrier, then every rank reads its own clock  (the same instant, give or take
//                                                           the barrier's exit skew)
//     2. every rank packs its events (CBOR)
//     3. MPI_Gather of the sizes, MPI_Gatherv of the bytes  -> rank 0
//     4. rank 0 shifts rank r's times by (its reading - rank r's reading), so every
//        lane is on rank 0's clock, and writes the file with write_chrome_trace()
//     5. MPI_Bcast of rank 0's error, if any, so every rank throws the same one
//
// Why shift at all: each process's Tracer counts from its own origin (when it
// was made). Processes on one machine share steady_clock, but on several
// machines they do not, and the origins differ anyway; the barrier is a moment
// every rank can name on its own clock.
#include <climits>

#include "comm/mpi/mpi_backend.h"
#include "comm/mpi/mpi_detail.h"
#include "comm/trace/trace.h"
#include "core/check.h"

namespace ss {

using nlohmann::json;

namespace {

// Every field of an event, compactly; event_from_json is the inverse.
json event_to_json(const TraceEvent& e) {
    const Label& l = e.label;
    return json{{"k", int(e.kind)},   {"tid", e.tid},     {"name", e.name},   {"cat", e.cat},
                {"ts", e.ts_us},      {"dur", e.dur_us},  {"axis", e.axis},   {"group", e.group},
                {"bytes", e.bytes},   {"count", e.count}, {"dtype", e.dtype}, {"peer", e.peer},
                {"label", {int(l.payload), l.layer, int(l.phase), l.microbatch, l.step}},
                {"mem", e.mem},       {"args", e.args},   {"gpu", e.gpu_us},
                {"iss", e.issued_us}, {"exp", e.exposed_us}};
}

TraceEvent event_from_json(const json& j) {
    TraceEvent e;
    e.kind = TraceEvent::Kind(j.at("k").get<int>());
    e.tid = j.at("tid").get<int>();
    e.name = j.at("name").get<std::string>();
    e.cat = j.at("cat").get<std::string>();
    e.ts_us = j.at("ts").get<double>();
    e.dur_us = j.at("dur").get<double>();
    e.axis = j.at("axis").get<std::string>();
    e.group = j.at("group").get<std::vector<int>>();
    e.bytes = j.at("bytes").get<uint64_t>();
    e.count = j.at("count").get<uint64_t>();
    e.dtype = j.at("dtype").get<std::string>();
    e.peer = j.at("peer").get<int>();
    e.gpu_us = j.at("gpu").get<double>();
    e.issued_us = j.at("iss").get<double>();
    e.exposed_us = j.at("exp").get<double>();
    const json& l = j.at("label");
    e.label = Label{Payload(l.at(0).get<int>()), l.at(1).get<int>(), Phase(l.at(2).get<int>()), l.at(3).get<int>(),
                    l.at(4).get<int>()};
    e.mem = j.at("mem").get<std::array<uint64_t, kMemCategories>>();
    e.args = j.at("args");
    return e;
}

// A wait that cannot be allowed to hang: after the timeout, end the job.
void wait_or_abort(MPI_Request& req, double timeout_seconds, const char* step) {
    if (mpi::wait_for(req, timeout_seconds)) return;
    std::ostringstream os;
    os << "write_chrome_trace_mpi: " << step << ": not every rank arrived within " << timeout_seconds
       << " s (every rank of the job must call write_chrome_trace_mpi)";
    mpi::abort_world(os.str());
}

}  // namespace

void write_chrome_trace_mpi(const std::string& path, const Tracer& mine, const json& other_data,
                            double timeout_seconds) {
    mpi::ensure_initialized();
    int rank = 0, world = 1;
    SS_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    SS_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &world));

    // 1. A moment every rank can name on its own clock.
    MPI_Request req;
    SS_MPI_CHECK(MPI_Ibarrier(MPI_COMM_WORLD, &req));
    wait_or_abort(req, timeout_seconds, "the clock barrier");
    const double sync_us = mine.now_us();

    // 2. My events, packed.
    json packed = {{"rank", mine.rank()}, {"sync_us", sync_us}, {"events", json::array()}};
    for (const TraceEvent& ev : mine.events()) packed["events"].push_back(event_to_json(ev));
    const std::vector<uint8_t> bytes = json::to_cbor(packed);
    if (bytes.size() > size_t(INT_MAX))
        mpi::abort_world("write_chrome_trace_mpi: rank " + std::to_string(rank) + "'s events take " +
                         std::to_string(bytes.size()) + " bytes, more than MPI_Gatherv can move");
    int size = int(bytes.size());

    // 3. Sizes, then bytes, to rank 0.
    std::vector<int> sizes(rank == 0 ? world : 1), offsets(rank == 0 ? world : 1);
    SS_MPI_CHECK(MPI_Igather(&size, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, MPI_COMM_WORLD, &req));
    wait_or_abort(req, timeout_seconds, "gathering the sizes");
    size_t total = 0;
    if (rank == 0)
        for (int r = 0; r < world; ++r) {
            offsets[r] = int(total);
            total += size_t(sizes[r]);
            if (total > size_t(INT_MAX))
                mpi::abort_world("write_chrome_trace_mpi: the ranks' events take more than 2 GiB together; "
                                 "trace fewer steps");
        }
    std::vector<uint8_t> all(rank == 0 ? total : 1);
    SS_MPI_CHECK(MPI_Igatherv(bytes.data(), size, MPI_BYTE, all.data(), sizes.data(), offsets.data(), MPI_BYTE, 0,
                              MPI_COMM_WORLD, &req));
    wait_or_abort(req, timeout_seconds, "gathering the events");

    // 4. Rank 0 puts every lane on its clock and writes one file.
    std::string error;
    if (rank == 0) {
        try {
            std::vector<std::unique_ptr<Tracer>> tracers;
            std::vector<int> seen(world, -1);
            double sync0 = 0;
            for (int r = 0; r < world; ++r) {
                std::vector<uint8_t> part(all.begin() + offsets[r], all.begin() + offsets[r] + sizes[r]);
                const json j = json::from_cbor(part);
                const int tracer_rank = j.at("rank").get<int>();
                const double sync_r = j.at("sync_us").get<double>();
                if (r == 0) sync0 = sync_r;
                SS_CHECK(tracer_rank >= 0 && tracer_rank < world && seen[tracer_rank] < 0,
                         "write_chrome_trace_mpi: process " << r << " passed the tracer of rank " << tracer_rank
                             << (tracer_rank >= 0 && tracer_rank < world
                                     ? ", which process " + std::to_string(seen[tracer_rank]) + " passed too"
                                     : ", outside the world")
                             << "; each process passes its own (ss::Tracer(ss::mpi_world_rank()))");
                seen[tracer_rank] = r;
                const double shift = sync0 - sync_r;  // rank r's time -> rank 0's time
                auto t = std::make_unique<Tracer>(tracer_rank, TraceClock::now(), 0.0);
                for (const json& ev : j.at("events")) {
                    TraceEvent e = event_from_json(ev);
                    e.ts_us += shift;
                    if (e.issued_us >= 0) e.issued_us += shift;  // a time, like ts; exposed_us is a length
                    t->record(std::move(e));
                }
                tracers.push_back(std::move(t));
            }
            write_chrome_trace(path, tracers, other_data);
        } catch (const std::exception& e) {
            error = e.what();
        }
    }

    // 5. Everyone learns whether it worked. No timeout: rank 0 is only writing a file.
    int len = int(error.size());
    SS_MPI_CHECK(MPI_Ibcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD, &req));
    wait_or_abort(req, 1e12, "the result");
    error.resize(size_t(len));
    if (len > 0) {
        SS_MPI_CHECK(MPI_Ibcast(error.data(), len, MPI_CHAR, 0, MPI_COMM_WORLD, &req));
        wait_or_abort(req, 1e12, "the result");
        throw Error(rank == 0 ? error : "rank 0 could not write the trace: " + error);
    }
}

}  // namespace ss
