// Human-readable views: the device matrix of a node (`trellis-topo show`) and the binding
// table of a plan (`trellis-topo plan`, the plugin's verbose report).
#pragma once

#include <string>

#include "topology/node.hpp"
#include "topology/plan.hpp"

namespace trellis::topology {

std::string format_node(const Node& node);
std::string format_plan(const Plan& plan);

}  // namespace trellis::topology
