// SPDX-License-Identifier: Apache-2.0
// Slurm node lists, for the launchers that rendezvous at a step's first node (trellis-train's
// Slurm wireup, trellis-agent launch). In a library of its own, linked with libslurm, apart
// from libtrellis-topology, which the plugin takes in: slurmstepd has Slurm's symbols already.
#pragma once

#include <string>

#include "common/error.hpp"

namespace trellis::slurm {

// The first node of a node list ("n[1-4]"), expanded with libslurm's hostlist API, at the
// address slurmctld knows it by (NodeAddr), since node names need not resolve. Throws
// UsageError for a list that does not parse or is empty.
std::string first_node_address(const std::string& nodelist);

}  // namespace trellis::slurm
