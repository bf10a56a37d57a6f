// SPDX-License-Identifier: Apache-2.0
#include "topology/cpu_division.hpp"

#include <algorithm>
#include <map>

#include "topology/assignment.hpp"

namespace trellis::topology {
namespace {

// A core as the step may use it: only its allowed hardware threads.
struct UsableCore {
    std::vector<int> pus;
};

std::vector<UsableCore> usable_cores(const Node& node, const CpuSet& allowed) {
    std::vector<UsableCore> cores;
    for (const auto& core : node.cores) {
        UsableCore usable;
        for (int pu : core.pus)
            if (allowed.contains(pu)) usable.pus.push_back(pu);
        if (!usable.pus.empty()) cores.push_back(usable);
    }
    return cores;
}

// Splits the cores (or, with fewer cores than tasks, the hardware threads) of one region
// among the tasks that run there.
void split_region(const std::vector<const UsableCore*>& cores, bool smt, const std::vector<TaskBinding*>& members) {
    int tasks = static_cast<int>(members.size());
    if (static_cast<int>(cores.size()) >= tasks) {
        auto groups = assign_items(tasks, static_cast<int>(cores.size()));
        for (int t = 0; t < tasks; ++t)
            for (int c : groups[t]) {
                const auto& pus = cores[c]->pus;
                if (smt)
                    for (int pu : pus) members[t]->cpus.add(pu);
                else
                    members[t]->cpus.add(pus.front());
            }
        return;
    }
    std::vector<int> pus;
    for (const auto* core : cores) pus.insert(pus.end(), core->pus.begin(), core->pus.end());
    if (pus.empty()) return;
    int share = static_cast<int>(pus.size()) >= tasks ? 0 : 1;
    auto groups = assign_items(tasks, static_cast<int>(pus.size()));
    for (int t = 0; t < tasks; ++t) {
        for (int p : groups[t]) members[t]->cpus.add(pus[p]);
        if (share)
            members[t]->warnings.push_back(std::to_string(tasks) + " tasks share " + std::to_string(pus.size()) +
                                           " CPUs");
    }
}

}  // namespace

void divide_cpus(const Node& node, const CpuSet& allowed, const std::vector<CpuSet>& local, bool smt,
                 std::vector<TaskBinding>& tasks) {
    // Tasks that want the same region share it; regions are served smallest first so that a
    // narrow region (one NUMA node) is not eaten by a wide one (a whole machine) that could
    // have used other cores.
    std::map<CpuSet, std::vector<TaskBinding*>> regions;
    for (size_t i = 0; i < tasks.size(); ++i) regions[local[i]].push_back(&tasks[i]);
    std::vector<const CpuSet*> order;
    for (const auto& [region, members] : regions) order.push_back(&region);
    std::stable_sort(order.begin(), order.end(),
                     [](const CpuSet* a, const CpuSet* b) { return a->size() < b->size(); });

    std::vector<UsableCore> cores = usable_cores(node, allowed);
    std::vector<bool> taken(cores.size(), false);
    for (const CpuSet* region : order) {
        std::vector<const UsableCore*> mine, free_anywhere, any;
        for (size_t c = 0; c < cores.size(); ++c) {
            any.push_back(&cores[c]);
            if (taken[c]) continue;
            free_anywhere.push_back(&cores[c]);
            if (region->contains(cores[c].pus.front())) mine.push_back(&cores[c]);
        }
        const auto& members = regions[*region];
        const auto& use = !mine.empty() ? mine : !free_anywhere.empty() ? free_anywhere : any;
        if (mine.empty())
            for (auto* task : members)
                task->warnings.push_back("no free allowed CPUs local to its GPU or NUMA node (" + region->to_string() +
                                         "); bound to other CPUs");
        split_region(use, smt, members);
        for (size_t c = 0; c < cores.size(); ++c)
            if (std::find(use.begin(), use.end(), &cores[c]) != use.end()) taken[c] = true;
    }
}

}  // namespace trellis::topology
