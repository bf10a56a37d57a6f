// SPDX-License-Identifier: Apache-2.0
// The training loop of one process: data, model, optimizer and schedule, progress output,
// metrics, evaluation and checkpoints. Rank and world size come from the wireup (0 and 1 for
// a single process).
#pragma once

#include "common/error.hpp"
#include "trainer/comm/transport.hpp"
#include "trainer/comm/wireup.hpp"
#include "trainer/train/options.hpp"

namespace trellis::train {

// The exit status of a run stopped before its end by SIGTERM or SIGUSR1 (Slurm's preemption,
// time limit, --signal): EX_TEMPFAIL of sysexits.h, "try again", so that a batch script can
// requeue itself and sacct does not show an unfinished run as COMPLETED.
constexpr int exit_stopped_early = 75;

// Trains as the options say and returns the process exit status: 0 when training finished,
// exit_stopped_early when it stopped on SIGTERM/SIGUSR1 (after saving a checkpoint when it
// has a folder for them), 1 on a runtime failure (reported on stderr).
// Throws UsageError and data::DataError for bad input found before training, and
// comm::PeerFailure when another rank fails. `transport` is null for a single process.
int train(const TrainOptions& options, const comm::Wireup& wireup, comm::Transport* transport);

}  // namespace trellis::train
