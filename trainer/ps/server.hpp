// SPDX-License-Identifier: Apache-2.0
// A parameter server (ps-lite's model): each server rank holds one key range of the
// parameters with its optimizer state, receives the workers' gradients for that range,
// applies the optimizer and sends the range back. Synchronous mode averages one push from
// every worker per step; asynchronous mode applies each push as it comes.
#pragma once

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trainer/checkpoint/checkpoint.hpp"
#include "trainer/comm/transport.hpp"
#include "trainer/comm/wire_format.hpp"
#include "trainer/optim/optimizer.hpp"
#include "trainer/ps/layout.hpp"
#include "trainer/ps/messages.hpp"

namespace trellis::ps {

struct ServerConfig {
    optim::OptimizerConfig optimizer;
    bool asynchronous = false;
    std::string checkpoint_dir;  // rank 0's folder ("": no checkpoints); the shard goes beside it
    bool resume = false;
    comm::WireFormat pushes = comm::WireFormat::f32;  // the workers' gradients on the wire
};

class Server {
public:
    // info: the run as rank 0 describes it in checkpoints, at the step every rank starts from.
    Server(const ServerConfig& config, comm::Transport& transport, const Layout& layout, int server,
           nn::ParameterStore& full, checkpoint::CheckpointInfo info);
    ~Server();

    enum class Outcome { finished, stopped };
    // Serves until every worker has made its last push, or a worker was told to stop.
    Outcome run();

private:
    Outcome run_synchronous();
    Outcome run_asynchronous();
    void open_checkpoints();
    void save_checkpoint();
    void receive_pushes(const std::vector<int>& workers);
    void reply(const std::vector<int>& workers, const PullHeader& header);

    class ShardStore;
    ServerConfig config_;
    comm::Transport& transport_;
    const Layout& layout_;
    int server_;
    std::unique_ptr<ShardStore> shard_;
    std::unique_ptr<optim::Optimizer> optimizer_;
    checkpoint::CheckpointInfo info_;
    std::optional<checkpoint::CheckpointStore> checkpoints_;
    std::vector<std::vector<std::byte>> pushes_;  // one slice per worker, as it came
    std::vector<PushHeader> headers_;             // and its header
};

}  // namespace trellis::ps
