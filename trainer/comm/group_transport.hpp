// SPDX-License-Identifier: Apache-2.0
// Some ranks of a transport seen as a job of their own: members[i] of the whole job is rank i
// of the group. The collectives run unchanged on a group; the hierarchical allreduce runs one
// inside each node and one across the nodes per local index (a rail).
#pragma once

#include <vector>

#include "trainer/comm/transport.hpp"

namespace trellis::comm {

class GroupTransport : public Transport {
public:
    // `members` in group order; this rank must be one of them.
    GroupTransport(Transport& whole, std::vector<int> members);

    std::string name() const override { return whole_.name(); }
    void exchange(std::span<const Transfer> transfers) override;
    std::size_t exchange_first(std::span<const Transfer> receives) override;
    void forget(const void* data, std::size_t bytes) override { whole_.forget(data, bytes); }

private:
    std::vector<Transfer> in_whole(std::span<const Transfer> transfers) const;

    Transport& whole_;
    std::vector<int> members_;
};

// The job's nodes as the transport names their hosts: each node's ranks in rank order, nodes in
// the order of their first rank.
struct NodeGroups {
    explicit NodeGroups(const Transport& transport);
    std::vector<std::vector<int>> nodes;
    int node = 0;         // this rank's
    int local_index = 0;  // this rank's place in its node
    // More than one node, each with the same number of ranks, more than one.
    bool uniform_and_hierarchical() const;
    // The ranks with this rank's local index, one per node (uniform placements only).
    std::vector<int> rail() const;
};

}  // namespace trellis::comm
