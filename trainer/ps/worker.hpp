// SPDX-License-Identifier: Apache-2.0
// The worker's side of the parameter server: push this step's gradients to every server and
// pull the updated parameters back.
#pragma once

#include <vector>

#include "trainer/comm/transport.hpp"
#include "trainer/comm/wire_format.hpp"
#include "trainer/nn/parameter_store.hpp"
#include "trainer/ps/layout.hpp"
#include "trainer/ps/messages.hpp"

namespace trellis::ps {

class Worker {
public:
    // Pushes travel in `pushes` (f32, or compressed); pulls are f32.
    Worker(comm::Transport& transport, const Layout& layout, nn::ParameterStore& store,
           comm::WireFormat pushes = comm::WireFormat::f32);

    // Sends `push` with the gradients to every server; returns the first server's reply.
    PullHeader push_pull(const PushHeader& push);
    double bytes_per_step() const;  // pushed and pulled

private:
    comm::Transport& transport_;
    const Layout& layout_;
    nn::ParameterStore& store_;
    comm::WireFormat format_;
    std::vector<std::vector<std::byte>> wire_;  // each server's compressed slice
    std::vector<PullHeader> replies_;
};

}  // namespace trellis::ps
