// SPDX-License-Identifier: Apache-2.0
#include "topology/gpu_minors.hpp"

#include <filesystem>
#include <fstream>
#include <set>

#include "common/error.hpp"
#include "topology/discovery.hpp"

namespace trellis::topology {
namespace {

// The "Device Minor:" line of one GPU's information file, -1 when it has none.
int minor_in(const std::filesystem::path& information) {
    std::ifstream in(information);
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("Device Minor:", 0) != 0) continue;
        try {
            return std::stoi(line.substr(line.find(':') + 1));
        } catch (const std::exception&) {
            return -1;
        }
    }
    return -1;
}

}  // namespace

int read_nvidia_minors(Node& node, const std::string& driver_dir) {
    namespace fs = std::filesystem;
    std::error_code error;
    fs::path gpus = fs::path(driver_dir) / "gpus";
    if (driver_dir.empty() || !fs::is_directory(gpus, error)) return 0;
    int found = 0;
    std::set<int> seen;
    for (const auto& entry : fs::directory_iterator(gpus, error)) {
        PciAddress address;
        try {
            address = PciAddress::parse(entry.path().filename().string());
        } catch (const UsageError&) {
            continue;  // not a GPU's folder
        }
        fs::path information = entry.path() / "information";
        int minor = minor_in(information);
        if (minor < 0) throw TopologyError(information.string() + " has no 'Device Minor: N' line");
        if (!seen.insert(minor).second)
            throw TopologyError(gpus.string() + " gives minor number " + std::to_string(minor) + " to two GPUs");
        for (auto& gpu : node.gpus)
            if (gpu.vendor == GpuVendor::nvidia && gpu.place.address == address) {
                gpu.minor = minor;
                ++found;
            }
    }
    return found;
}

}  // namespace trellis::topology
