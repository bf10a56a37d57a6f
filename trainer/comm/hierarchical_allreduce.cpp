// SPDX-License-Identifier: Apache-2.0
#include "trainer/comm/hierarchical_allreduce.hpp"

#include "common/error.hpp"
#include "trainer/comm/ring_allreduce.hpp"

namespace trellis::comm {

namespace {

// "3 on n1, 1 on n2": what the refusal names.
std::string placement(const Transport& transport, const NodeGroups& groups) {
    std::string text;
    for (const auto& node : groups.nodes)
        text += (text.empty() ? "" : ", ") + std::to_string(node.size()) + " on " + transport.host_of(node.front());
    return text;
}

const NodeGroups& checked(const Transport& transport, const NodeGroups& groups) {
    if (!groups.uniform_and_hierarchical())
        throw UsageError(
            "hierarchical allreduce needs more than one node with the same number of ranks, more than "
            "one, on each; this job has " +
            placement(transport, groups) + " (use ring, halving-doubling or auto)");
    return groups;
}

}  // namespace

HierarchicalAllreduce::HierarchicalAllreduce(Transport& transport, std::size_t segment_bytes, WireFormat format)
    : Allreduce(transport, segment_bytes, format),
      groups_(transport),
      node_(transport, checked(transport, groups_).nodes[std::size_t(groups_.node)]),
      rail_(transport, groups_.rail()),
      in_node_(node_, segment_bytes, format),
      across_nodes_(make_allreduce(rail_, AllreduceAlgorithm::automatic, format, segment_bytes)) {}

void HierarchicalAllreduce::sum(std::span<float> data) {
    if (data.empty()) return;
    auto mine = ring_reduce_scatter(in_node_, node_.rank(), node_.size(), data);
    across_nodes_->sum(mine);
    in_node_.round_to_wire(mine);  // idempotent: across the nodes it was rounded already
    ring_allgather(in_node_, node_.rank(), node_.size(), data);
}

}  // namespace trellis::comm
