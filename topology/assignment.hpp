// SPDX-License-Identifier: Apache-2.0
// The rule that spreads T tasks over N ordered items (GPUs, NUMA nodes, cores): with as many
// tasks as items, task i gets item i; with fewer tasks, each gets a contiguous group (sizes
// differ by at most one, larger groups first); with more tasks, task i gets item
// floor(i * N / T), so neighbouring ranks share an item.
#pragma once

#include <vector>

namespace trellis::topology {

// For each task, the positions (0..items-1) of the items it gets. Empty groups when items == 0.
std::vector<std::vector<int>> assign_items(int tasks, int items);

// The same with fewer tasks than items, keeping groups within runs of items that belong
// together (GPUs of one socket: runs of equal `run_of` values, in order). Each run gets tasks
// in proportion to its items (at least one; the remainder to the larger runs, then the
// earlier), split by assign_items. With more runs than tasks, or as many tasks as items or
// more, it is assign_items: a group then may have to span runs.
std::vector<std::vector<int>> assign_items_in_runs(int tasks, const std::vector<int>& run_of);

}  // namespace trellis::topology
