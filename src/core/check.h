// check.h — how ShardScope reports a mistake.
//
// Library code throws ss::Error with a message that says what went wrong and
// what to change ("TP=3 does not divide n_head=4; choose TP in {1, 2, 4}").
// The `shardscope` mains catch it, print it and exit non-zero.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace ss {

/// The one exception type ShardScope throws for bad input or a failed run.
struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// Throws ss::Error carrying @p msg (the source location is kept for debugging).
[[noreturn]] void fail(const char* file, int line, const std::string& msg);

}  // namespace ss

/// Throws ss::Error with the streamed message when @p cond is false, e.g.
/// `SS_CHECK(C % H == 0, "C=" << C << " is not divisible by H=" << H)`.
#define SS_CHECK(cond, msg)                                   \
    do {                                                      \
        if (!(cond)) {                                        \
            std::ostringstream ss_check_os_;                  \
            ss_check_os_ << msg;                              \
            ::ss::fail(__FILE__, __LINE__, ss_check_os_.str()); \
        }                                                     \
    } while (0)

/// Throws ss::Error unconditionally with the streamed message.
#define SS_FAIL(msg) SS_CHECK(false, msg)
