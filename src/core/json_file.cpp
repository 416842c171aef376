#include "core/json_file.h"

#include <cstdio>
#include <fstream>

#include "core/check.h"

namespace ss {

void write_json_file(const std::string& path, const nlohmann::json& j) {
    const std::string tmp = path + ".tmp";
    {
        std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
        SS_CHECK(f.good(), "cannot write " << tmp << "; check that the folder exists and is writable");
        f << j.dump(2) << "\n";
        f.flush();
        SS_CHECK(f.good(), "writing " << tmp << " failed (disk full?)");
    }
    SS_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, "cannot rename " << tmp << " to " << path);
}

}  // namespace ss
