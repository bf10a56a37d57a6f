// SPDX-License-Identifier: Apache-2.0
#include "trainer/ps/worker.hpp"

namespace trellis::ps {

Worker::Worker(comm::Transport& transport, const Layout& layout, nn::ParameterStore& store, comm::WireFormat pushes)
    : transport_(transport), layout_(layout), store_(store), format_(pushes), replies_(std::size_t(layout.servers())) {
    if (format_ != comm::WireFormat::f32)
        for (int s = 0; s < layout_.servers(); ++s)
            wire_.emplace_back(layout_.shard(s).size() * comm::wire_bytes(format_));
}

double Worker::bytes_per_step() const {
    return double(store_.learned_elements()) * double(comm::wire_bytes(format_) + sizeof(float));
}

PullHeader Worker::push_pull(const PushHeader& push) {
    std::vector<comm::Transfer> pushes, pulls;
    for (int s = 0; s < layout_.servers(); ++s) {
        const auto& shard = layout_.shard(s);
        int server = layout_.server_rank(s);
        auto grads = store_.grads().subspan(shard.begin, shard.size());
        if (format_ == comm::WireFormat::f32) {
            pushes.push_back(comm::Transfer::send(server, grads.data(), grads.size_bytes()));
        } else {
            auto& wire = wire_[std::size_t(s)];
            comm::encode(format_, grads, wire.data());
            pushes.push_back(comm::Transfer::send(server, wire.data(), wire.size()));
        }
        pushes.push_back(comm::Transfer::send(server, &push, sizeof push));
        pulls.push_back(
            comm::Transfer::recv(server, store_.values().data() + shard.begin, shard.size() * sizeof(float)));
        pulls.push_back(comm::Transfer::recv(server, &replies_[std::size_t(s)], sizeof(PullHeader)));
    }
    transport_.exchange(pushes);
    transport_.exchange(pulls);
    return replies_.front();
}

}  // namespace trellis::ps
