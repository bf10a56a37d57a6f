// SPDX-License-Identifier: Apache-2.0
#include "topology/hca_choice.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <stdexcept>
#include <tuple>

#include "common/error.hpp"

namespace trellis::topology {
namespace {

bool matches_any(const std::string& name, const std::vector<std::string>& patterns) {
    return std::any_of(patterns.begin(), patterns.end(),
                       [&](const std::string& p) { return fnmatch(p.c_str(), name.c_str(), 0) == 0; });
}

// The port to use: the requested one, else the first ACTIVE one, else (when inactive ports
// are allowed) the first one. 0 when none qualifies.
int pick_port(const Hca& hca, int requested, bool require_active) {
    for (const auto& port : hca.ports)
        if ((requested == 0 || port.number == requested) && (port.active() || !require_active)) return port.number;
    if (!require_active && hca.ports.empty()) return requested ? requested : 1;
    return 0;
}

Distance distance_from_cpus(const Hca& hca, const std::vector<int>& task_numa) {
    for (int numa : hca.place.numa)
        if (std::find(task_numa.begin(), task_numa.end(), numa) != task_numa.end()) return Distance::node;
    return Distance::sys;
}

}  // namespace

std::vector<HcaCandidate> usable_hcas(const Node& node, const HcaSelection& selection) {
    std::vector<HcaCandidate> candidates;
    if (!selection.only.empty()) {
        for (const auto& request : selection.only) {
            auto it =
                std::find_if(node.hcas.begin(), node.hcas.end(), [&](const Hca& h) { return h.name == request.name; });
            if (it == node.hcas.end()) {
                std::string known;
                for (const auto& h : node.hcas) known += (known.empty() ? "" : ", ") + h.name;
                throw UsageError("HCA '" + request.name + "' is not on " + node.host +
                                 " (it has: " + (known.empty() ? "none" : known) + ")");
            }
            if (request.port != 0 && std::none_of(it->ports.begin(), it->ports.end(),
                                                  [&](const HcaPort& p) { return p.number == request.port; }))
                throw UsageError("HCA " + request.name + " has no port " + std::to_string(request.port));
            if (int port = pick_port(*it, request.port, selection.require_active)) candidates.push_back({&*it, port});
        }
        return candidates;
    }
    for (const auto& hca : node.hcas) {
        if (!selection.include.empty() && !matches_any(hca.name, selection.include)) continue;
        if (matches_any(hca.name, selection.exclude)) continue;
        if (int port = pick_port(hca, 0, selection.require_active)) candidates.push_back({&hca, port});
    }
    return candidates;
}

static HcaChoice choice_of(const HcaCandidate& candidate, Distance distance) {
    std::string netdev;
    for (const auto& port : candidate.hca->ports)
        if (port.number == candidate.port) netdev = port.netdev;
    return {candidate.hca->name, candidate.port, candidate.hca->place.address.to_string(), distance, netdev};
}

void choose_hcas(const Node&, const std::vector<HcaCandidate>& candidates, std::vector<TaskBinding>& tasks) {
    if (candidates.empty()) return;
    std::vector<int> uses(candidates.size(), 0);
    for (auto& task : tasks) {
        // One HCA per GPU (one for a CPU-only task), each the nearest to its GPU among those
        // the task does not have yet, while the node has enough.
        size_t wanted = std::max<size_t>(task.gpus.size(), 1);
        std::vector<bool> taken(candidates.size(), false);
        for (size_t k = 0; k < wanted; ++k) {
            if (std::find(taken.begin(), taken.end(), false) == taken.end()) break;
            size_t best = candidates.size();
            std::tuple<Distance, int, size_t> best_key{Distance::sys, 0, 0};
            for (size_t i = 0; i < candidates.size(); ++i) {
                if (taken[i]) continue;
                const Hca& hca = *candidates[i].hca;
                Distance d =
                    task.gpus.empty() ? distance_from_cpus(hca, task.numa) : distance(task.gpus[k].place, hca.place);
                std::tuple key{d, uses[i], i};
                if (best == candidates.size() || key < best_key) best = i, best_key = key;
            }
            ++uses[best];
            taken[best] = true;
            task.hcas.push_back(choice_of(candidates[best], std::get<0>(best_key)));
        }
    }
}

std::vector<HcaChoice> node_hcas(const std::vector<HcaCandidate>& candidates) {
    std::vector<HcaChoice> all;
    for (const auto& candidate : candidates) all.push_back(choice_of(candidate, Distance::sys));
    return all;
}

}  // namespace trellis::topology
