// json_file.h — write a JSON document without ever leaving half a file.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace ss {

/// Writes @p j (indented) to `path + ".tmp"`, then renames it to @p path.
/// Throws ss::Error naming the path if it cannot be written.
void write_json_file(const std::string& path, const nlohmann::json& j);

}  // namespace ss
