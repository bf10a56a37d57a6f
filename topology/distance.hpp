// SPDX-License-Identifier: Apache-2.0
// Distance classes between two PCI devices, named as `nvidia-smi topo -m` names them.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "topology/pci.hpp"

namespace trellis::topology {

// Ordered nearest first, so that `<` means "closer".
enum class Distance {
    same,  // X: the device itself
    pix,   // same PCIe switch: at most one bridge each side of the common bridge
    pxb,   // a common PCI bridge with more bridges in between
    phb,   // only the host bridge in common
    node,  // different host bridges, same NUMA node
    sys,   // across NUMA nodes or sockets
};

Distance distance(const PciPlace& a, const PciPlace& b);
std::string distance_name(Distance d);  // "X", "PIX", "PXB", "PHB", "NODE", "SYS"
std::optional<Distance> parse_distance(std::string_view name);

// GPUDirect RDMA between a GPU and an HCA is worth using only below a PCIe switch.
inline bool gdr_eligible(Distance d) { return d == Distance::pix || d == Distance::pxb; }

}  // namespace trellis::topology
