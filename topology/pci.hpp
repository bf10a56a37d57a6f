// SPDX-License-Identifier: Apache-2.0
// Where a PCI device sits: its address, the chain of bridges above it and the CPUs and NUMA
// nodes it is local to. Distances between devices are computed from this alone.
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "topology/cpu_set.hpp"

namespace trellis::topology {

struct PciAddress {
    unsigned domain = 0, bus = 0, device = 0, function = 0;

    // Accepts "0000:03:00.0" and the short "03:00.0". Throws UsageError.
    static PciAddress parse(std::string_view text);
    std::string to_string() const;  // "0000:03:00.0"
    auto operator<=>(const PciAddress&) const = default;
};

struct PciBridge {
    std::uint64_t id = 0;  // unique within the node (hwloc's gp_index)
    bool host = false;     // a host bridge (root complex) rather than a PCI-to-PCI bridge
    bool operator==(const PciBridge&) const = default;
};

struct PciPlace {
    PciAddress address;
    unsigned class_id = 0;   // 0x0302
    unsigned vendor_id = 0;  // 0x10de
    unsigned device_id = 0;
    std::vector<PciBridge> bridges;  // from the host bridge down to the device's parent bridge
    CpuSet local_cpus;               // CPUs of the nearest non-I/O ancestor
    std::vector<int> numa;           // NUMA nodes (os indices) of the nearest non-I/O ancestor

    int first_numa() const { return numa.empty() ? -1 : numa.front(); }
};

}  // namespace trellis::topology
