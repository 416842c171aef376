// output_path.h — an output checked before the work that fills it, and
// compared with the inputs by what it names, not how it is spelt.
//
// A run that trains for an hour and then cannot write its --save file has
// lost the hour. So every output is tried first, the way it will be written
// (core/atomic_file.h: a temporary file beside it, then a rename): its
// folders are created, a probe file beside it is created and removed. And
// "out/../out/x.json" is the same file as "out/x.json": paths are compared
// after std::filesystem::weakly_canonical, which resolves "..", "." and
// symbolic links of the part that exists.
#pragma once

#include <string>

namespace ss {

/// Checks that @p path can be written as write_file_atomically() writes it: creates
/// its parent folders, then creates and removes a probe file beside it. Throws
/// ss::Error naming @p flag ("--save") and the path, and saying what to change.
void check_writable_file(const std::string& flag, const std::string& path);

/// Checks that @p dir (created if missing) is a folder files can be created in, by
/// creating and removing a probe file in it. Throws ss::Error naming @p flag.
void check_writable_dir(const std::string& flag, const std::string& dir);

/// @p path made absolute, with ".", ".." and the symbolic links of its existing part resolved.
std::string canonical_path(const std::string& path);

/// True when @p a and @p b name the same file or folder (compared canonically).
bool same_path(const std::string& a, const std::string& b);

/// True when @p path is @p dir or lies inside it (canonically, by whole path components).
bool path_within(const std::string& path, const std::string& dir);

}  // namespace ss
