// SPDX-License-Identifier: Apache-2.0
// Which device file belongs to which GPU. Slurm names a node's GPUs by their device files
// (gres.conf File=/dev/nvidia[0-7]), the topology by their PCI addresses; the NVIDIA driver
// ties the two together in its own table, /proc/driver/nvidia/gpus/<PCI>/information
// ("Device Minor: N"). Minor numbers follow the driver's probe order, which need not be
// PCI order, so neither may be guessed from the other.
#pragma once

#include <string>

#include "topology/node.hpp"

namespace trellis::topology {

// Sets Gpu::minor for each NVIDIA GPU of the node that driver_dir (the driver's proc folder,
// normally /proc/driver/nvidia) lists. Returns how many it set: 0 when the folder is absent
// (no driver, or a topology from another machine without a copy of that folder).
// Throws TopologyError when an information file names no minor or two GPUs share one.
int read_nvidia_minors(Node& node, const std::string& driver_dir);

}  // namespace trellis::topology
