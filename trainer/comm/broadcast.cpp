#include "trainer/comm/broadcast.hpp"

#include <vector>

#include "trainer/comm/group_transport.hpp"

namespace trellis::comm {

namespace {

// Rank 0 of `transport` sends to each of the others.
void send_to_each(Transport& transport, std::span<std::byte> data) {
    if (transport.rank() != 0) {
        auto receive = Transfer::recv(0, data.data(), data.size_bytes());
        transport.exchange({&receive, 1});
        return;
    }
    std::vector<Transfer> sends;
    for (int r = 1; r < transport.size(); ++r) sends.push_back(Transfer::send(r, data.data(), data.size_bytes()));
    transport.exchange(sends);
}

}  // namespace

void broadcast_from_root(Transport& transport, std::span<std::byte> data) {
    if (transport.size() == 1 || data.empty()) return;
    // Through the hierarchy: rank 0 sends once to each other node's first rank, which passes
    // it on inside its node. The network then carries the data once per node, not once per rank.
    NodeGroups groups(transport);
    if (groups.nodes.size() < 2 || groups.nodes.size() == std::size_t(transport.size())) {
        send_to_each(transport, data);
        return;
    }
    // Nodes are in the order of their first rank, so rank 0 leads the first node.
    const auto& node = groups.nodes[std::size_t(groups.node)];
    if (groups.local_index == 0) {
        std::vector<int> leaders;
        for (const auto& n : groups.nodes) leaders.push_back(n.front());
        GroupTransport across(transport, leaders);
        send_to_each(across, data);
    }
    if (node.size() > 1) {
        GroupTransport inside(transport, node);
        send_to_each(inside, data);
    }
}

}  // namespace trellis::comm
