// atomic_file.h — write a file so that nothing is ever half-written.
//
// Every file ShardScope writes (checkpoints, token files, traces, JSON
// summaries) goes through here: the bytes go to `path + ".tmp"`, and only a
// complete, flushed file is renamed to `path`. A crash or a full disk leaves
// the previous file intact. Missing parent folders are created.
#pragma once

#include <functional>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

namespace ss {

/// Creates @p path's parent folders, then writes through @p write into a
/// temporary file and renames it to @p path. Throws ss::Error naming the path
/// (and leaves any old @p path untouched) if any step fails.
void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& write);

/// Writes @p j (indented) with write_file_atomically().
void write_json_file(const std::string& path, const nlohmann::json& j);

}  // namespace ss
