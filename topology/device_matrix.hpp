// SPDX-License-Identifier: Apache-2.0
// The GPU/HCA distance matrix of a node, in the order `nvidia-smi topo -m` shows it: GPUs
// first, then HCAs.
#pragma once

#include <string>
#include <vector>

#include "topology/distance.hpp"
#include "topology/node.hpp"

namespace trellis::topology {

struct DeviceMatrix {
    std::vector<std::string> labels;  // GPU0 ... mlx5_0 ...
    std::vector<const PciPlace*> places;
    std::vector<std::vector<Distance>> distances;
};

DeviceMatrix device_matrix(const Node& node);

}  // namespace trellis::topology
