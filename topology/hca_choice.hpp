// SPDX-License-Identifier: Apache-2.0
// Choosing each task's HCAs: for each of its GPUs the nearest usable one (for a CPU-only task,
// the nearest to its CPUs), ties going to the least used so far and then to PCI order, so that
// tasks at equal distance spread over the HCAs instead of piling onto the first.
#pragma once

#include <vector>

#include "common/error.hpp"
#include "topology/plan.hpp"

namespace trellis::topology {

struct HcaCandidate {
    const Hca* hca;
    int port;
};

// The HCAs and ports the selection allows. Throws UsageError when an explicitly
// requested HCA or port does not exist on the node.
std::vector<HcaCandidate> usable_hcas(const Node& node, const HcaSelection& selection);

// Fills task.hcas for each task, in local rank order: as many HCAs as the task has GPUs (one
// for a CPU-only task), distinct while the node has enough.
void choose_hcas(const Node& node, const std::vector<HcaCandidate>& candidates, std::vector<TaskBinding>& tasks);

// Every usable HCA, in PCI order (the set NCCL is given).
std::vector<HcaChoice> node_hcas(const std::vector<HcaCandidate>& candidates);

}  // namespace trellis::topology
