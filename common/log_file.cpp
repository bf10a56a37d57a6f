// SPDX-License-Identifier: Apache-2.0
#include "common/log_file.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace trellis {

std::ofstream open_log_file(const std::string& folder, const std::string& name) {
    std::error_code error;
    std::filesystem::create_directories(folder, error);
    if (error) throw std::runtime_error("--log-dir: cannot create " + folder + ": " + error.message());
    auto path = (std::filesystem::path(folder) / name).string();
    bool cut_line = false;
    if (std::ifstream existing(path, std::ios::binary | std::ios::ate); existing && existing.tellg() > 0) {
        existing.seekg(-1, std::ios::end);
        cut_line = existing.get() != '\n';
    }
    errno = 0;
    std::ofstream log(path, std::ios::app);
    if (!log)
        throw std::runtime_error("--log-dir: cannot write " + path +
                                 (errno ? ": " + std::string(std::strerror(errno)) : ""));
    if (cut_line) log << '\n';
    return log;
}

}  // namespace trellis
