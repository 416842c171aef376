// trace_equal.h — two TraceEvents equal in every field: the Tracer's log against what
// it was given (test_trace), the streaming reader against the full one (test_viz).
#pragma once

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "comm/trace/trace.h"

namespace ss::test {

/// Every field of @p x equals @p y's. Args as JSON values (1 and 1.0 alike), or where
/// those differ only by a NaN (never equal to itself), byte for byte in CBOR.
inline void require_same_event(const TraceEvent& x, const TraceEvent& y) {
    REQUIRE(x.kind == y.kind);
    REQUIRE(x.rank == y.rank);
    REQUIRE(x.tid == y.tid);
    REQUIRE(x.name == y.name);
    REQUIRE(x.cat == y.cat);
    REQUIRE(x.ts_us == y.ts_us);
    REQUIRE(x.dur_us == y.dur_us);
    REQUIRE(x.file_index == y.file_index);
    REQUIRE(x.axis == y.axis);
    REQUIRE(x.group == y.group);
    REQUIRE(x.bytes == y.bytes);
    REQUIRE(x.count == y.count);
    REQUIRE(x.dtype == y.dtype);
    REQUIRE(x.label.payload == y.label.payload);
    REQUIRE(x.label.layer == y.label.layer);
    REQUIRE(x.label.phase == y.label.phase);
    REQUIRE(x.label.microbatch == y.label.microbatch);
    REQUIRE(x.label.step == y.label.step);
    REQUIRE(x.peer == y.peer);
    REQUIRE(x.gpu_us == y.gpu_us);
    REQUIRE(x.issued_us == y.issued_us);
    REQUIRE(x.exposed_us == y.exposed_us);
    REQUIRE(x.mem == y.mem);
    REQUIRE(x.args.is_null() == y.args.is_null());
    REQUIRE((x.args == y.args || nlohmann::json::to_cbor(x.args) == nlohmann::json::to_cbor(y.args)));
}

}  // namespace ss::test
