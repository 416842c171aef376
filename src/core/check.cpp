#include "core/check.h"

namespace ss {

void fail(const char* file, int line, const std::string& msg) {
    (void)file;
    (void)line;
    // The message is for the user; file and line would only distract them.
    // A debugger still stops here (break on ss::fail) with the full stack.
    throw Error(msg);
}

}  // namespace ss
