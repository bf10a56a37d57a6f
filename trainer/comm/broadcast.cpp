// SPDX-License-Identifier: Apache-2.0
#include "trainer/comm/broadcast.hpp"

#include <vector>

#include "trainer/comm/binomial_tree.hpp"
#include "trainer/comm/group_transport.hpp"

namespace trellis::comm {

namespace {

// Rank 0 of `transport` to the others down the binomial tree: each rank receives the data once
// and passes it to its children, so that no rank talks to more than log2 n others.
void down_the_tree(Transport& transport, std::span<std::byte> data) {
    BinomialTree tree{transport.rank(), transport.size()};
    if (tree.rank != 0) {
        auto receive = Transfer::recv(tree.parent(), data.data(), data.size_bytes());
        transport.exchange({&receive, 1});
    }
    std::vector<Transfer> sends;
    for (int child : tree.children()) sends.push_back(Transfer::send(child, data.data(), data.size_bytes()));
    if (!sends.empty()) transport.exchange(sends);
}

}  // namespace

void broadcast_from_root(Transport& transport, std::span<std::byte> data) {
    if (transport.size() == 1 || data.empty()) return;
    // Through the hierarchy: rank 0 sends once to each other node's first rank, which passes
    // it on inside its node. The network then carries the data once per node, not once per rank.
    NodeGroups groups(transport);
    if (groups.nodes.size() < 2 || groups.nodes.size() == std::size_t(transport.size())) {
        down_the_tree(transport, data);
        return;
    }
    // Nodes are in the order of their first rank, so rank 0 leads the first node.
    const auto& node = groups.nodes[std::size_t(groups.node)];
    if (groups.local_index == 0) {
        std::vector<int> leaders;
        for (const auto& n : groups.nodes) leaders.push_back(n.front());
        GroupTransport across(transport, leaders);
        down_the_tree(across, data);
    }
    if (node.size() > 1) {
        GroupTransport inside(transport, node);
        down_the_tree(inside, data);
    }
}

}  // namespace trellis::comm
