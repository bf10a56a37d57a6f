// SPDX-License-Identifier: Apache-2.0
// Slurm's GPUs for a step, on the topology's terms. Slurm 22.05 hands a step its GPUs as
// gres indices (SLURM_STEP_GPUS): positions in the node's gres.conf device list, not
// CUDA numbers and not PCI positions. Each index names a device file, the file's trailing
// digits are its minor number (Slurm's own rule), and the NVIDIA driver's table ties the
// minor to a PCI address (gpu_minors.hpp).
#pragma once

#include <string>
#include <vector>

#include "common/error.hpp"
#include "topology/node.hpp"
#include "slurm/slurm_config.hpp"

namespace trellis::slurm {

struct StepGpus {
    std::vector<int> indices;        // the node's GPU indices (PCI order) the step may use
    std::vector<int> in_gres_order;  // the same GPUs in Slurm's order (its per-task binding's)
    std::vector<std::string> warnings;
};

// gres_indices: SLURM_STEP_GPUS parsed (empty when the step has no GPU on this node).
// Throws UsageError when an index or its device file matches no GPU of the node,
// naming both.
StepGpus map_step_gpus(const topology::Node& node, const GresGpus& gres, const std::vector<int>& gres_indices);

}  // namespace trellis::slurm
