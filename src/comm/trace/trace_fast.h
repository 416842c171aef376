// trace_fast.h — read a Chrome trace in one streaming pass, for big traces.
//
// parse_chrome_trace (trace_io.cpp) parses the whole file into a JSON tree,
// then walks the tree into TraceEvents: for a 64-rank, 200k-event trace (42 MB)
// that is ~1.8 s, most of it building and freeing the tree, and the tree takes
// about ten times the file's bytes. This reader walks the same text with
// nlohmann's SAX interface and fills TraceEvents as the tokens arrive; only
// otherData and a span's small "args" become JSON values. read_chrome_trace
// (trace summary) and the viewer's load_trace (viz/model/load.h) both try it
// first.
//
// It is a fast path, not a second definition of the format: on anything it
// does not expect (a missing or mistyped field, an unknown payload, nested
// args, a format_version it does not read, a JSON error) it gives up and the
// caller falls back to parse_chrome_trace, whose error message names the file,
// the event and the field. tests/test_viz.cpp checks that both readers give
// the same Trace.
#pragma once

#include <string>

#include "comm/trace/trace.h"

namespace ss {

/// Parses @p text into @p out. Returns false (and leaves @p out unspecified) when the
/// text is not a trace this fast path is sure about; the caller then uses parse_chrome_trace.
bool fast_parse_chrome_trace(const std::string& text, Trace& out);

}  // namespace ss
