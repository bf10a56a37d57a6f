// SPDX-License-Identifier: Apache-2.0
#include "topology/node.hpp"

namespace trellis::topology {

const HcaPort* Hca::first_active_port() const {
    for (const auto& port : ports)
        if (port.active()) return &port;
    return nullptr;
}

int Node::package_of(int pu) const {
    for (const auto& package : packages)
        if (package.cpus.contains(pu)) return package.os_index;
    return -1;
}

std::vector<int> Node::numa_of(const CpuSet& set) const {
    std::vector<int> result;
    for (const auto& numa : numa_nodes)
        if (numa.cpus.intersects(set)) result.push_back(numa.os_index);
    return result;
}

std::string port_state_name(PortState state) {
    switch (state) {
    case PortState::down: return "DOWN";
    case PortState::init: return "INIT";
    case PortState::armed: return "ARMED";
    case PortState::active: return "ACTIVE";
    case PortState::active_defer: return "ACTIVE_DEFER";
    case PortState::unknown: break;
    }
    return "UNKNOWN";
}

const char* vendor_name(GpuVendor vendor) { return vendor == GpuVendor::nvidia ? "nvidia" : "amd"; }

}  // namespace trellis::topology
