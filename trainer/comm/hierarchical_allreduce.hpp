// SPDX-License-Identifier: Apache-2.0
// Allreduce along the node/rail hierarchy (Horovod's hierarchical allreduce; NCCL's rings
// across rails): a ring reduce-scatter inside each node leaves local rank i with its node's sum
// of one L-th of the buffer (L ranks per node); the ranks with local index i, one per node,
// allreduce that L-th among themselves (halving-doubling for a power-of-two number of nodes,
// else ring), so that each rail, and the HCA it is bound to, carries 1/L of the traffic
// between nodes; a ring allgather inside each node finishes. Between nodes each rank sends
// 2 (N - 1) / (N L) of the buffer instead of the flat schedules' 2 (n - 1) / n.
// For jobs of more than one node with the same number of ranks, more than one, on each.
#pragma once

#include <memory>

#include "trainer/comm/allreduce.hpp"
#include "trainer/comm/group_transport.hpp"

namespace trellis::comm {

class HierarchicalAllreduce : public Allreduce {
public:
    static bool applies(const Transport& transport) { return NodeGroups(transport).uniform_and_hierarchical(); }

    // Throws UsageError naming the placement where it does not apply.
    HierarchicalAllreduce(Transport& transport, std::size_t segment_bytes = 1 << 20,
                          WireFormat format = WireFormat::f32);
    void sum(std::span<float> data) override;
    AllreduceAlgorithm algorithm() const override { return AllreduceAlgorithm::hierarchical; }

private:
    NodeGroups groups_;
    GroupTransport node_, rail_;
    SegmentedExchange in_node_;
    std::unique_ptr<Allreduce> across_nodes_;
};

}  // namespace trellis::comm
