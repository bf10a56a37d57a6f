// SPDX-License-Identifier: Apache-2.0
// `trellis-agent launch`: the node's ranks, bound and optionally in a container.
#pragma once

#include <string>
#include <vector>

namespace trellis::agent {

int launch_command(const std::vector<std::string>& args);
std::string launch_help();

}  // namespace trellis::agent
