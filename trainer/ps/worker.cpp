#include "trainer/ps/worker.hpp"

namespace trellis::ps {

Worker::Worker(comm::Transport& transport, const Layout& layout, nn::ParameterStore& store)
    : transport_(transport), layout_(layout), store_(store), replies_(std::size_t(layout.servers())) {}

double Worker::bytes_per_step() const { return double(store_.learned_elements()) * sizeof(float) * 2; }

PullHeader Worker::push_pull(const PushHeader& push) {
    std::vector<comm::Transfer> pushes, pulls;
    for (int s = 0; s < layout_.servers(); ++s) {
        const auto& shard = layout_.shard(s);
        int server = layout_.server_rank(s);
        pushes.push_back(comm::Transfer::send(server, store_.grads().data() + shard.begin, shard.size() * sizeof(float)));
        pushes.push_back(comm::Transfer::send(server, &push, sizeof push));
        pulls.push_back(comm::Transfer::recv(server, store_.values().data() + shard.begin, shard.size() * sizeof(float)));
        pulls.push_back(comm::Transfer::recv(server, &replies_[std::size_t(s)], sizeof(PullHeader)));
    }
    transport_.exchange(pushes);
    transport_.exchange(pulls);
    return replies_.front();
}

}  // namespace trellis::ps
