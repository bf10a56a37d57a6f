// SPDX-License-Identifier: Apache-2.0
#include "trainer/train/run_facts.hpp"

#include <sys/resource.h>

#include <algorithm>

#include "common/task_binding.hpp"
#include "trainer/comm/group_transport.hpp"

namespace trellis::train {

void describe_placement(const Placement& placement, nlohmann::json& run) {
    const auto& options = placement.options;
    std::size_t nodes = 1, ranks_per_node = 1;
    if (placement.transport) {
        // Ranks on one host are one node, as the hierarchical allreduce and shared memory see it.
        comm::NodeGroups groups(*placement.transport);
        nodes = groups.nodes.size();
        for (const auto& node : groups.nodes) ranks_per_node = std::max(ranks_per_node, node.size());
    }
    run["binding"] = task_binding();
    run["hostname"] = placement.host;
    run["nodes"] = nodes;
    run["ranks_per_node"] = ranks_per_node;
    run["batch_size"] = options.batch_size;
    run["precision"] = placement.on_gpu ? gpu::precisions().name(options.precision) : "fp32";
    run["ps_servers"] = options.strategy == Strategy::ps && placement.transport ? options.ps_servers : 0;
}

std::int64_t peak_rss_bytes() {
    rusage usage{};
    if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
    return std::int64_t(usage.ru_maxrss) * 1024;  // Linux counts it in KiB
}

}  // namespace trellis::train
