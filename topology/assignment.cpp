// SPDX-License-Identifier: Apache-2.0
#include "topology/assignment.hpp"

#include <algorithm>
#include <cstddef>

namespace trellis::topology {

std::vector<std::vector<int>> assign_items(int tasks, int items) {
    std::vector<std::vector<int>> groups(static_cast<std::size_t>(tasks));
    if (items <= 0) return groups;
    if (tasks > items) {
        for (int t = 0; t < tasks; ++t) groups[t].push_back(static_cast<int>(static_cast<long>(t) * items / tasks));
        return groups;
    }
    int base = items / tasks, larger = items % tasks, next = 0;
    for (int t = 0; t < tasks; ++t) {
        int size = base + (t < larger ? 1 : 0);
        for (int k = 0; k < size; ++k) groups[t].push_back(next++);
    }
    return groups;
}

std::vector<std::vector<int>> assign_items_in_runs(int tasks, const std::vector<int>& run_of) {
    const int items = static_cast<int>(run_of.size());
    // Runs: [start, size) of equal neighbours.
    std::vector<std::pair<int, int>> runs;
    for (int i = 0; i < items; ++i)
        if (i == 0 || run_of[i] != run_of[i - 1])
            runs.push_back({i, 1});
        else
            ++runs.back().second;
    if (tasks >= items || runs.size() <= 1 || static_cast<int>(runs.size()) > tasks) return assign_items(tasks, items);

    // One task per run, then the rest by largest remainder of tasks * size / items.
    std::vector<int> share(runs.size(), 1);
    int left = tasks - static_cast<int>(runs.size());
    std::vector<std::pair<double, size_t>> wants;
    for (size_t r = 0; r < runs.size(); ++r) {
        double exact = double(tasks) * runs[r].second / items - 1;
        int whole = std::max(0, std::min(static_cast<int>(exact), runs[r].second - share[r]));
        whole = std::min(whole, left);
        share[r] += whole, left -= whole;
        wants.push_back({exact - whole, r});
    }
    std::stable_sort(wants.begin(), wants.end(), [&](const auto& a, const auto& b) {
        if (a.first != b.first) return a.first > b.first;
        return runs[a.second].second > runs[b.second].second;
    });
    for (size_t k = 0; left > 0; k = (k + 1) % wants.size()) {
        size_t r = wants[k].second;
        if (share[r] < runs[r].second) ++share[r], --left;
    }
    std::vector<std::vector<int>> groups;
    for (size_t r = 0; r < runs.size(); ++r)
        for (auto& group : assign_items(share[r], runs[r].second)) {
            for (int& item : group) item += runs[r].first;
            groups.push_back(group);
        }
    return groups;
}

}  // namespace trellis::topology
