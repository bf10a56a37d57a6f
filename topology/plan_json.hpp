// SPDX-License-Identifier: Apache-2.0
// The JSON of `trellis-topo plan --json` and `trellis-topo show --json`: a public interface
// that scripts depend on, so fields are only ever added.
#pragma once

#include <nlohmann/json.hpp>

#include "topology/node.hpp"
#include "topology/plan.hpp"

namespace trellis::topology {

nlohmann::json plan_to_json(const Plan& plan);
nlohmann::json node_to_json(const Node& node);

}  // namespace trellis::topology
