// output_path.cpp — outputs tried before the work, paths compared canonically (see output_path.h).
#include "core/output_path.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/check.h"

namespace ss {

namespace fs = std::filesystem;

namespace {

// Creates and removes a file called @p probe; returns "" or why it failed.
std::string try_create(const std::string& probe) {
    std::ofstream f(probe, std::ios::binary | std::ios::trunc);
    if (!f) return std::strerror(errno);
    f.close();
    std::remove(probe.c_str());
    return "";
}

// A name no other process uses at the same moment (several ranks may check one folder).
std::string probe_suffix() { return ".shardscope-probe-" + std::to_string(::getpid()); }

}  // namespace

void check_writable_file(const std::string& flag, const std::string& path) {
    SS_CHECK(!path.empty(), flag << " needs a file name");
    std::error_code ec;
    SS_CHECK(!fs::is_directory(path, ec), flag << " " << path << " is a folder; give a file name inside it");
    const fs::path parent = fs::path(path).parent_path();
    if (!parent.empty()) {
        fs::create_directories(parent, ec);
        SS_CHECK(!ec, flag << " " << path << ": cannot create its folder " << parent.string() << " (" << ec.message()
                           << "); choose a path in a folder you can write");
    }
    const std::string why = try_create(path + probe_suffix());
    SS_CHECK(why.empty(), flag << " " << path << " cannot be written (" << why << ", creating a file beside it); "
                               << "choose a path in a folder you can write. Nothing has run yet");
}

void check_writable_dir(const std::string& flag, const std::string& dir) {
    SS_CHECK(!dir.empty(), flag << " needs a folder name");
    std::error_code ec;
    fs::create_directories(dir, ec);
    SS_CHECK(!ec && fs::is_directory(dir), flag << " " << dir << ": cannot create the folder ("
                                                 << (ec ? ec.message() : "a file of that name exists")
                                                 << "); choose a folder you can write");
    const std::string why = try_create((fs::path(dir) / ("writable" + probe_suffix())).string());
    SS_CHECK(why.empty(), flag << " " << dir << ": cannot create files in it (" << why
                               << "); choose a folder you can write. Nothing has run yet");
}

std::string canonical_path(const std::string& path) {
    std::error_code ec;
    fs::path p = fs::weakly_canonical(fs::absolute(path), ec);
    if (ec) p = fs::absolute(path).lexically_normal();
    std::string s = p.string();
    while (s.size() > 1 && s.back() == '/') s.pop_back();  // "out/" and "out" are one folder
    return s;
}

bool same_path(const std::string& a, const std::string& b) { return canonical_path(a) == canonical_path(b); }

bool path_within(const std::string& path, const std::string& dir) {
    const std::string p = canonical_path(path), d = canonical_path(dir);
    return p == d || (p.size() > d.size() && p.compare(0, d.size(), d) == 0 && (d == "/" || p[d.size()] == '/'));
}

}  // namespace ss
