// SPDX-License-Identifier: Apache-2.0
#include "topology/nvlink.hpp"

#include <algorithm>
#include <cmath>

namespace trellis::topology {
namespace {

// The node GPU index of an hwloc object of the matrix (a GPU's OS device or its PCI device),
// -1 for anything else (an NVSwitch).
int gpu_index(const Node& node, hwloc_obj_t obj) {
    if (obj->type == HWLOC_OBJ_OS_DEVICE) obj = obj->parent;
    if (!obj || obj->type != HWLOC_OBJ_PCI_DEVICE) return -1;
    PciAddress address{obj->attr->pcidev.domain, obj->attr->pcidev.bus, obj->attr->pcidev.dev, obj->attr->pcidev.func};
    for (const auto& gpu : node.gpus)
        if (gpu.place.address == address) return gpu.index;
    return -1;
}

}  // namespace

void read_nvlinks(hwloc_topology_t topology, Node& node) {
    hwloc_distances_s* matrix = nullptr;
    unsigned count = 1;
    if (node.gpus.empty() || hwloc_distances_get_by_name(topology, "NVLinkBandwidth", &count, &matrix, 0) != 0 ||
        count == 0)
        return;
    const unsigned n = matrix->nbobjs;
    // One link's bandwidth: the smallest non-zero entry (links of one node run at one speed).
    hwloc_uint64_t link = 0;
    for (unsigned i = 0; i < n * n; ++i)
        if (matrix->values[i] && (!link || matrix->values[i] < link)) link = matrix->values[i];
    const size_t gpus = node.gpus.size();
    std::vector<std::vector<int>> direct(gpus, std::vector<int>(gpus, 0));
    std::vector<int> to_switches(gpus, 0);
    for (unsigned i = 0; link && i < n; ++i) {
        int a = gpu_index(node, matrix->objs[i]);
        if (a < 0) continue;
        for (unsigned j = 0; j < n; ++j) {
            int links = static_cast<int>(std::llround(double(matrix->values[i * n + j]) / double(link)));
            if (i == j || links == 0) continue;
            int b = gpu_index(node, matrix->objs[j]);
            if (b >= 0)
                direct[size_t(a)][size_t(b)] = links;
            else
                to_switches[size_t(a)] += links;
        }
    }
    hwloc_distances_release(topology, matrix);
    // Through NVSwitches a pair has the links of the GPU with fewer of them.
    node.nvlinks.assign(gpus, std::vector<int>(gpus, 0));
    for (size_t a = 0; a < gpus; ++a)
        for (size_t b = 0; b < gpus; ++b)
            if (a != b) node.nvlinks[a][b] = direct[a][b] ? direct[a][b] : std::min(to_switches[a], to_switches[b]);
}

}  // namespace trellis::topology
