// SPDX-License-Identifier: Apache-2.0
#include "trainer/gpu/speedups.hpp"

#include <cstdlib>
#include <utility>
#include <vector>

#include "common/cli.hpp"
#include "common/environment.hpp"
#include "common/error.hpp"

namespace trellis::gpu {

namespace {

// Every speed item by name: the list's order is the one `describe` writes.
const std::vector<std::pair<const char*, bool Speedups::*>>& named() {
    static const std::vector<std::pair<const char*, bool Speedups::*>> items{
        {"synthetic-on-device", &Speedups::synthetic_on_device}, {"workspace-cache", &Speedups::workspace_cache},
        {"vector-kernels", &Speedups::vector_kernels},           {"fused-norm-join", &Speedups::fused_norm_join},
        {"overflow-on-device", &Speedups::overflow_on_device},
    };
    return items;
}

}  // namespace

Speedups parse_speedups(const std::string& list) {
    Speedups chosen;
    if (list.empty() || list == "none") return chosen;
    for (const auto& name : cli::split(list, ',')) {
        bool known = false;
        for (const auto& [item, member] : named())
            if (name == item || name == "all") {
                chosen.*member = true;
                known = true;
            }
        if (!known) {
            std::string accepted = "none, all";
            for (const auto& item : named()) accepted += std::string(", ") + item.first;
            throw UsageError(std::string(env::cuda_speedups.name) + ": unknown speed item '" + name +
                             "' (accepted: " + accepted + ")");
        }
    }
    return chosen;
}

Speedups speedups_from_environment() {
    const char* list = std::getenv(env::cuda_speedups.name);
    return parse_speedups(list ? list : "");
}

std::string describe(const Speedups& speedups) {
    std::string names;
    for (const auto& [item, member] : named())
        if (speedups.*member) names += (names.empty() ? "" : ",") + std::string(item);
    return names.empty() ? "none" : names;
}

}  // namespace trellis::gpu
