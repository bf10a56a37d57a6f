// Choosing each task's HCA: the nearest usable one to the task's first GPU (or to its CPUs
// for CPU-only tasks), ties going to the least used so far and then to PCI order, so that
// tasks at equal distance spread over the HCAs instead of piling onto the first.
#pragma once

#include <vector>

#include "topology/plan.hpp"

namespace trellis::topology {

struct HcaCandidate {
    const Hca* hca;
    int port;
};

// The HCAs and ports the selection allows. Throws std::invalid_argument when an explicitly
// requested HCA or port does not exist on the node.
std::vector<HcaCandidate> usable_hcas(const Node& node, const HcaSelection& selection);

// Fills task.hcas for each task, in local rank order.
void choose_hcas(const Node& node, const std::vector<HcaCandidate>& candidates,
                 std::vector<TaskBinding>& tasks);

}  // namespace trellis::topology
