// SPDX-License-Identifier: Apache-2.0
// Per-node paths in the configuration: "%n" stands for the Slurm node name, so that one
// pattern can give some nodes a file of their own (the topology XML, the NVIDIA driver's
// proc folder), as admins of VMs and the tests do.
#pragma once

#include <string>

namespace trellis::agent {

// The pattern with %n replaced by the node name (trellis::node_name(): SLURMD_NODENAME, which
// slurmd sets for itself, slurmstepd and every task; outside Slurm, the host name). "" stays "". With %n in the pattern, a path
// that does not exist gives "" (the node has no file of its own: discover it live); without
// %n the path is returned as it is, and whoever reads it reports it if it is missing.
std::string path_for_node(const std::string& pattern, const std::string& node_name);

}  // namespace trellis::agent
