// SPDX-License-Identifier: Apache-2.0
#include "topology/hca_sysfs.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace trellis::topology {
namespace {

std::string read_line(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::string line;
    if (in) std::getline(in, line);
    return line;
}

}  // namespace

void read_hca_sysfs(Hca& hca, const std::string& sysfs_root) {
    namespace fs = std::filesystem;
    fs::path ports_dir = fs::path(sysfs_root) / hca.name / "ports";
    std::error_code ec;
    if (!fs::is_directory(ports_dir, ec)) return;
    for (const auto& entry : fs::directory_iterator(ports_dir, ec)) {
        int number = std::atoi(entry.path().filename().c_str());
        if (number <= 0) continue;
        HcaPort* port = nullptr;
        for (auto& p : hca.ports)
            if (p.number == number) port = &p;
        if (!port) {
            hca.ports.push_back({number, PortState::unknown, "", "", ""});
            port = &hca.ports.back();
        }
        // "4: ACTIVE": the number is the verbs state.
        std::string state = read_line(entry.path() / "state");
        if (!state.empty()) port->state = static_cast<PortState>(std::atoi(state.c_str()));
        port->link_layer = read_line(entry.path() / "link_layer");
        port->rate = read_line(entry.path() / "rate");
    }
    std::sort(hca.ports.begin(), hca.ports.end(),
              [](const HcaPort& a, const HcaPort& b) { return a.number < b.number; });
}

}  // namespace trellis::topology
