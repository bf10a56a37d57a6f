// SPDX-License-Identifier: Apache-2.0
// Building a Node from hwloc: from the live machine, or from an hwloc XML file (an admin's
// replacement for discovery on VMs, and the tests' fixtures).
#pragma once

#include <stdexcept>
#include <string>

#include "common/error.hpp"
#include "topology/node.hpp"

namespace trellis::topology {

// hwloc or the driver's files could not describe the node. A topology XML file that cannot be
// read is a UsageError instead (it is the caller's input).
struct TopologyError : Error {
    using Error::Error;
};

Node discover_live();
// Throws TopologyError naming the file when it is missing, unreadable or not hwloc XML.
Node load_xml(const std::string& path);
// load_xml when path is not empty, else discover_live.
Node load_node(const std::string& xml_path);

}  // namespace trellis::topology
