// SPDX-License-Identifier: Apache-2.0
// Dividing CPUs among tasks: tasks whose GPUs (or NUMA nodes) are local to the same CPUs
// share those CPUs' cores, disjointly and as evenly as possible.
#pragma once

#include <vector>

#include "topology/plan.hpp"

namespace trellis::topology {

// `local[i]` is the CPU region task i should run in (already limited to the allowed CPUs).
// Fills tasks[i].cpus; adds a task warning where tasks had to share CPUs.
void divide_cpus(const Node& node, const CpuSet& allowed, const std::vector<CpuSet>& local, bool smt,
                 std::vector<TaskBinding>& tasks);

}  // namespace trellis::topology
