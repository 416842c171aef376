// text.h — small pieces of message text shared by the error reports.
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace ss {

/// @p v written as "a, b, c" (or with @p sep between the values): the lists
/// of ranks and of valid choices that error messages print.
inline std::string join_ints(const std::vector<int>& v, const char* sep = ", ") {
    std::ostringstream s;
    for (size_t i = 0; i < v.size(); ++i) s << (i ? sep : "") << v[i];
    return s.str();
}

}  // namespace ss
