// SPDX-License-Identifier: Apache-2.0
// NVLink between a node's GPUs, from hwloc's "NVLinkBandwidth" distances (its NVML backend
// fills them on a node with the NVIDIA driver, and an XML file saved there keeps them). The
// matrix holds bandwidths between GPUs and, on NVSwitch systems, between GPUs and switches;
// nvidia-smi topo -m counts links instead (NV#), which is what trellis-topo shows.
#pragma once

#include <hwloc.h>

#include "topology/node.hpp"

namespace trellis::topology {

// Fills node.nvlinks (node.gpus must be final: indices in PCI order). Leaves it empty when the
// topology has no NVLink bandwidths.
void read_nvlinks(hwloc_topology_t topology, Node& node);

}  // namespace trellis::topology
