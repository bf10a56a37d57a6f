// The training loop of one process: data, model, optimizer and schedule, progress output,
// metrics, evaluation and checkpoints. Rank and world size come from the wireup (0 and 1 for
// a single process).
#pragma once

#include "trainer/comm/transport.hpp"
#include "trainer/comm/wireup.hpp"
#include "trainer/train/options.hpp"

namespace trellis::train {

// Trains as the options say and returns the process exit status: 0 when training finished or
// stopped on SIGTERM/SIGUSR1 after saving, 1 on a runtime failure (reported on stderr).
// Throws std::invalid_argument and data::DataError for bad input found before training, and
// comm::PeerFailure when another rank fails. `transport` is null for a single process.
int train(const TrainOptions& options, const comm::Wireup& wireup, comm::Transport* transport);

}  // namespace trellis::train
