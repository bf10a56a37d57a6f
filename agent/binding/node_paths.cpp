// SPDX-License-Identifier: Apache-2.0
#include "agent/binding/node_paths.hpp"

#include <filesystem>

namespace trellis::agent {

std::string path_for_node(const std::string& pattern, const std::string& node_name) {
    size_t at = pattern.find("%n");
    if (at == std::string::npos) return pattern;
    std::string path = pattern;
    for (; at != std::string::npos; at = path.find("%n", at + node_name.size())) path.replace(at, 2, node_name);
    std::error_code ec;
    return std::filesystem::exists(path, ec) ? path : "";
}

}  // namespace trellis::agent
