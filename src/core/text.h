// text.h — small pieces of message text shared by the error reports.
#pragma once

#include <cstdarg>
#include <cstdio>
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

/// printf into a std::string as long as the text: no fixed buffer to cut a long
/// path or a 300-digit number short (and drop the newline after it).
__attribute__((format(printf, 1, 2))) inline std::string strprintf(const char* fmt, ...) {
    va_list args, again;
    va_start(args, fmt);
    va_copy(again, args);
    const int n = std::vsnprintf(nullptr, 0, fmt, args);
    va_end(args);
    std::string out(n > 0 ? size_t(n) : 0, '\0');
    if (n > 0) std::vsnprintf(out.data(), size_t(n) + 1, fmt, again);  // + 1: the '\0' the string keeps anyway
    va_end(again);
    return out;
}

/// @p text with every byte that is not printable ASCII (a control character, DEL,
/// or a byte >= 0x80) written as \\xNN, for a message that quotes a damaged file:
/// "last read: '\\x9d'" rather than a raw byte that garbles the terminal.
inline std::string printable(const std::string& text) {
    std::string out;
    out.reserve(text.size());
    for (unsigned char c : text) {
        if (c >= 0x20 && c < 0x7f) {
            out += char(c);
        } else {
            char hex[5];
            std::snprintf(hex, sizeof hex, "\\x%02x", c);
            out += hex;
        }
    }
    return out;
}

}  // namespace ss
