// SPDX-License-Identifier: Apache-2.0
#include "trainer/comm/group_transport.hpp"

#include <algorithm>
#include <map>

#include "common/error.hpp"

namespace trellis::comm {

GroupTransport::GroupTransport(Transport& whole, std::vector<int> members)
    : whole_(whole), members_(std::move(members)) {
    auto mine = std::find(members_.begin(), members_.end(), whole.rank());
    if (mine == members_.end())
        throw UsageError("a group of ranks without this rank (" + std::to_string(whole.rank()) + ")");
    rank_ = int(mine - members_.begin());
    size_ = int(members_.size());
    for (int member : members_) hosts_.push_back(whole.host_of(member));
}

std::vector<Transfer> GroupTransport::in_whole(std::span<const Transfer> transfers) const {
    std::vector<Transfer> mapped(transfers.begin(), transfers.end());
    for (auto& t : mapped) t.peer = members_.at(std::size_t(t.peer));
    return mapped;
}

void GroupTransport::exchange(std::span<const Transfer> transfers) { whole_.exchange(in_whole(transfers)); }

std::size_t GroupTransport::exchange_first(std::span<const Transfer> receives) {
    return whole_.exchange_first(in_whole(receives));
}

NodeGroups::NodeGroups(const Transport& transport) {
    std::map<std::string, std::size_t> index;
    for (int r = 0; r < transport.size(); ++r) {
        auto [at, added] = index.emplace(transport.host_of(r), nodes.size());
        if (added) nodes.emplace_back();
        nodes[at->second].push_back(r);
        if (r == transport.rank()) {
            node = int(at->second);
            local_index = int(nodes[at->second].size()) - 1;
        }
    }
}

bool NodeGroups::uniform_and_hierarchical() const {
    if (nodes.size() < 2 || nodes[0].size() < 2) return false;
    return std::all_of(nodes.begin(), nodes.end(), [&](const auto& n) { return n.size() == nodes[0].size(); });
}

std::vector<int> NodeGroups::rail() const {
    std::vector<int> ranks;
    for (const auto& n : nodes) ranks.push_back(n.at(std::size_t(local_index)));
    return ranks;
}

}  // namespace trellis::comm
