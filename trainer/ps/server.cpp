// SPDX-License-Identifier: Apache-2.0
#include "trainer/ps/server.hpp"

#include <algorithm>
#include <cstdio>

namespace trellis::ps {

// This server's parameters: copies of the model's descriptions for its key range, with their
// own flat store, so that the optimizer runs on the range alone.
class Server::ShardStore {
public:
    ShardStore(nn::ParameterStore& full, const Shard& shard) {
        const auto& learned = full.learned();
        for (std::size_t p = shard.first_parameter; p < shard.end_parameter; ++p) {
            parameters_.push_back(*learned[p]);
            parameters_.back().value = parameters_.back().grad = nullptr;
        }
        for (auto& p : parameters_) store_.add(p);
        store_.allocate();
        std::copy_n(full.values().data() + shard.begin, shard.size(), store_.values().data());
    }
    nn::ParameterStore& store() { return store_; }

private:
    std::deque<nn::Parameter> parameters_;  // stable addresses for the store
    nn::ParameterStore store_;
};

Server::Server(const ServerConfig& config, comm::Transport& transport, const Layout& layout, int server,
               nn::ParameterStore& full, checkpoint::CheckpointInfo info)
    : config_(config),
      transport_(transport),
      layout_(layout),
      server_(server),
      shard_(std::make_unique<ShardStore>(full, layout.shard(server))),
      optimizer_(optim::make_optimizer(config.optimizer, shard_->store())),
      info_(std::move(info)),
      pushes_(std::size_t(layout.workers()),
              std::vector<std::byte>(layout.shard(server).size() * comm::wire_bytes(config.pushes))),
      headers_(std::size_t(layout.workers())) {
    if (!config.checkpoint_dir.empty()) open_checkpoints();
}

Server::~Server() = default;

Server::Outcome Server::run() { return config_.asynchronous ? run_asynchronous() : run_synchronous(); }

Server::Outcome Server::run_synchronous() {
    std::vector<int> workers;
    for (int w = 0; w < layout_.workers(); ++w) workers.push_back(w);
    auto grads = shard_->store().grads();
    while (true) {
        receive_pushes(workers);
        // The average of one push from every worker: the same step as the allreduce takes.
        std::fill(grads.begin(), grads.end(), 0.0f);
        double loss = 0;
        bool stop = false, last = false;
        for (std::size_t w = 0; w < workers.size(); ++w) {
            comm::decode_add(config_.pushes, pushes_[w].data(), grads);
            loss += headers_[w].loss;
            stop = stop || headers_[w].stop;
            last = last || headers_[w].last;
        }
        for (auto& g : grads) g /= float(workers.size());
        optimizer_->step(headers_.front().lr);
        ++info_.step;
        // Rank 0 saves after this step (periodically, at the end, or stopping on a signal):
        // this shard's weights and optimizer state go beside it, same step.
        if (checkpoints_ && (headers_.front().checkpoint || stop || last)) save_checkpoint();
        reply(workers, {float(loss / double(workers.size())), std::uint8_t(stop)});
        if (stop) return Outcome::stopped;
        if (last) return Outcome::finished;
    }
}

Server::Outcome Server::run_asynchronous() {
    std::vector<int> active;
    for (int w = 0; w < layout_.workers(); ++w) active.push_back(w);
    auto grads = shard_->store().grads();
    bool stop = false;
    while (!active.empty()) {
        // The gradients of whichever push starts arriving first, then its header.
        std::vector<comm::Transfer> slices;
        for (int w : active)
            slices.push_back(comm::Transfer::recv(w, pushes_[std::size_t(w)].data(), pushes_[std::size_t(w)].size()));
        auto index = transport_.exchange_first(slices);
        int worker = active[index];
        auto& header = headers_[std::size_t(worker)];
        auto header_receive = comm::Transfer::recv(worker, &header, sizeof header);
        transport_.exchange({&header_receive, 1});
        comm::decode(config_.pushes, pushes_[std::size_t(worker)].data(), grads);
        stop = stop || header.stop;
        // Each push is one worker's batch: a 1/workers share of the global batch the learning
        // rate was scaled for.
        optimizer_->step(header.lr / float(layout_.workers()));
        reply({worker}, {header.loss, std::uint8_t(stop)});
        // A worker leaves after its last push, or after the reply that told it to stop.
        if (header.last || stop) active.erase(active.begin() + long(index));
    }
    return stop ? Outcome::stopped : Outcome::finished;
}

void Server::receive_pushes(const std::vector<int>& workers) {
    std::vector<comm::Transfer> receives;
    for (int w : workers) {
        auto& slice = pushes_[std::size_t(w)];
        receives.push_back(comm::Transfer::recv(w, slice.data(), slice.size()));
        receives.push_back(comm::Transfer::recv(w, &headers_[std::size_t(w)], sizeof(PushHeader)));
    }
    transport_.exchange(receives);
}

void Server::reply(const std::vector<int>& workers, const PullHeader& header) {
    auto values = shard_->store().values();
    std::vector<comm::Transfer> sends;
    for (int w : workers) {
        sends.push_back(comm::Transfer::send(w, values.data(), values.size_bytes()));
        sends.push_back(comm::Transfer::send(w, &header, sizeof header));
    }
    transport_.exchange(sends);
}

// Its own folder beside rank 0's checkpoints; on --resume, the shard of the same step.
void Server::open_checkpoints() {
    checkpoints_.emplace(config_.checkpoint_dir + "/server-" + std::to_string(server_));
    if (!config_.resume || info_.step == 0) return;
    auto loaded = checkpoints_->load_latest(info_, shard_->store(), *optimizer_);
    if (!loaded || loaded->step != info_.step)
        throw checkpoint::CheckpointError(
            "parameter server " + std::to_string(server_) + ": rank 0 resumes at step " + std::to_string(info_.step) +
            " but " + checkpoints_->folder() + " holds " +
            (loaded ? "step " + std::to_string(loaded->step) : std::string("no checkpoint")));
    std::printf("[rank %d] parameter server %d: resumed its shard from step %lld\n", layout_.server_rank(server_),
                server_, static_cast<long long>(loaded->step));
}

void Server::save_checkpoint() {
    auto path = checkpoints_->save(info_, shard_->store(), *optimizer_);
    std::printf("[rank %d] parameter server %d: checkpoint saved: %s\n", layout_.server_rank(server_), server_,
                path.c_str());
    std::fflush(stdout);
}

}  // namespace trellis::ps
