#include "core/atomic_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/check.h"

namespace ss {

void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& write) {
    std::filesystem::path parent = std::filesystem::path(path).parent_path();
    if (!parent.empty()) {
        std::error_code ec;
        std::filesystem::create_directories(parent, ec);
        SS_CHECK(!ec, "cannot create the folder '" << parent.string() << "' for '" << path << "': " << ec.message());
    }
    const std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        SS_CHECK(out, "cannot create '" << tmp << "': " << std::strerror(errno)
                                        << "; check that the folder is writable");
        write(out);
        out.flush();
        if (!out) {
            std::remove(tmp.c_str());
            SS_FAIL("writing '" << tmp << "' failed (disk full?); '" << path << "' was left as it was");
        }
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        int err = errno;
        std::remove(tmp.c_str());
        SS_FAIL("cannot rename '" << tmp << "' to '" << path << "': " << std::strerror(err));
    }
}

void write_json_file(const std::string& path, const nlohmann::json& j) {
    write_file_atomically(path, [&](std::ostream& out) { out << j.dump(2) << "\n"; });
}

}  // namespace ss
