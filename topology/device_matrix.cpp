// SPDX-License-Identifier: Apache-2.0
#include "topology/device_matrix.hpp"

namespace trellis::topology {

DeviceMatrix device_matrix(const Node& node) {
    DeviceMatrix m;
    for (const auto& gpu : node.gpus) {
        m.labels.push_back("GPU" + std::to_string(gpu.index));
        m.places.push_back(&gpu.place);
    }
    for (const auto& hca : node.hcas) {
        m.labels.push_back(hca.name);
        m.places.push_back(&hca.place);
    }
    for (const auto* a : m.places) {
        std::vector<Distance> row;
        for (const auto* b : m.places) row.push_back(a == b ? Distance::same : distance(*a, *b));
        m.distances.push_back(row);
    }
    return m;
}

}  // namespace trellis::topology
