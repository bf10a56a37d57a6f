// SPDX-License-Identifier: Apache-2.0
// A parameter-server rank of trellis-train: the model's parameters as the workers build them,
// this rank's shard of them, and the server loop (trainer/ps/server.hpp) until the workers end.
#pragma once

#include "trainer/comm/transport.hpp"
#include "trainer/comm/wireup.hpp"
#include "trainer/train/options.hpp"

namespace trellis::train {

// Runs this server rank until every worker has made its last push. Returns the exit status.
int serve_parameters(const TrainOptions& options, const comm::Wireup& wireup, comm::Transport& transport);

}  // namespace trellis::train
