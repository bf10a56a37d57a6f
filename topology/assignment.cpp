#include "topology/assignment.hpp"

#include <cstddef>

namespace trellis::topology {

std::vector<std::vector<int>> assign_items(int tasks, int items) {
    std::vector<std::vector<int>> groups(static_cast<std::size_t>(tasks));
    if (items <= 0) return groups;
    if (tasks > items) {
        for (int t = 0; t < tasks; ++t)
            groups[t].push_back(static_cast<int>(static_cast<long>(t) * items / tasks));
        return groups;
    }
    int base = items / tasks, larger = items % tasks, next = 0;
    for (int t = 0; t < tasks; ++t) {
        int size = base + (t < larger ? 1 : 0);
        for (int k = 0; k < size; ++k) groups[t].push_back(next++);
    }
    return groups;
}

}  // namespace trellis::topology
