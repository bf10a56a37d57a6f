// The parameter server (ps-lite's model in a few hundred lines): each server rank holds one
// key range of the parameters with its optimizer state, receives the workers' gradients for
// that range, applies the optimizer and sends the range back. Synchronous mode averages one
// push from every worker per step; asynchronous mode applies each push as it comes.
#pragma once

#include "trainer/comm/ps_layout.hpp"
#include "trainer/comm/transport.hpp"
#include "trainer/comm/wireup.hpp"
#include "trainer/optim/optimizer.hpp"
#include "trainer/train/options.hpp"

namespace trellis::train {

// Runs this server rank until every worker has made its last push. Returns the exit status.
int serve_parameters(const TrainOptions& options, const comm::Wireup& wireup, comm::Transport& transport);

// The worker's side: push this step's gradients to every server and pull the parameters back.
class PsWorker {
public:
    PsWorker(comm::Transport& transport, const comm::PsLayout& layout, nn::ParameterStore& store);

    struct Reply {
        bool stop = false;
        double mean_loss = 0;
    };
    // checkpoint: rank 0 saves a checkpoint after this step, and so do the servers.
    Reply push_pull(double lr, double loss, bool stop, bool last, bool checkpoint);
    double bytes_per_step() const;

private:
    comm::Transport& transport_;
    const comm::PsLayout& layout_;
    nn::ParameterStore& store_;
    std::vector<std::vector<float>> push_trailers_, pull_trailers_;
};

}  // namespace trellis::train
