#include "common/log_file.hpp"

#include <filesystem>
#include <stdexcept>

namespace trellis {

std::ofstream open_log_file(const std::string& folder, const std::string& name) {
    std::error_code error;
    // A failure here shows as the open's below, which names the file.
    std::filesystem::create_directories(folder, error);
    auto path = (std::filesystem::path(folder) / name).string();
    bool cut_line = false;
    if (std::ifstream existing(path, std::ios::binary | std::ios::ate); existing && existing.tellg() > 0) {
        existing.seekg(-1, std::ios::end);
        cut_line = existing.get() != '\n';
    }
    std::ofstream log(path, std::ios::app);
    if (!log) throw std::runtime_error("--log-dir: cannot write " + path);
    if (cut_line) log << '\n';
    return log;
}

}  // namespace trellis
