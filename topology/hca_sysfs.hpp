// SPDX-License-Identifier: Apache-2.0
// Port details that hwloc does not record (link layer, rate), and the current port state,
// read from /sys/class/infiniband on a live machine.
#pragma once

#include <string>

#include "topology/node.hpp"

namespace trellis::topology {

void read_hca_sysfs(Hca& hca, const std::string& sysfs_root = "/sys/class/infiniband");

}  // namespace trellis::topology
