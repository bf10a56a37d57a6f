// The rule that spreads T tasks over N ordered items (GPUs, NUMA nodes, cores): with as many
// tasks as items, task i gets item i; with fewer tasks, each gets a contiguous group (sizes
// differ by at most one, larger groups first); with more tasks, task i gets item
// floor(i * N / T), so neighbouring ranks share an item.
#pragma once

#include <vector>

namespace trellis::topology {

// For each task, the positions (0..items-1) of the items it gets. Empty groups when items == 0.
std::vector<std::vector<int>> assign_items(int tasks, int items);

}  // namespace trellis::topology
