// SPDX-License-Identifier: Apache-2.0
// Human-readable views: the device matrix of a node (`trellis-topo show`) and the binding
// table of a plan (`trellis-topo plan`, the plugin's verbose report).
#pragma once

#include <string>
#include <vector>

#include "topology/node.hpp"
#include "topology/plan.hpp"

namespace trellis::topology {

std::string format_node(const Node& node);
// global_ranks: each task's rank in its step, for a "rank" column (the plugin's report);
// empty: no such column (trellis-topo, which plans one node alone).
std::string format_plan(const Plan& plan, const std::vector<int>& global_ranks = {});

}  // namespace trellis::topology
