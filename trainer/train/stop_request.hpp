// SPDX-License-Identifier: Apache-2.0
// SIGTERM (Slurm's preemption and time limit), SIGUSR1 (srun/sbatch --signal) and SIGINT
// (Ctrl-C, scancel -s INT) ask the trainer to save a checkpoint at the end of the current step
// and exit cleanly. A second SIGINT is a user who will not wait for the save: the process
// exits 130 at once (as a shell reports a Ctrl-C), leaving the previous checkpoint, which a
// save never overwrites until it is whole, as it was.
//
// The handler runs only on a thread of its own ("trellis-signals"): install_stop_handlers
// blocks the three signals in the calling thread, and so in every thread started after it.
// oneDNN 2.6's generated GEMM kernels (fully connected layers, GEMM convolutions) point the
// stack pointer into a heap buffer while they run, and a signal handled on such a thread wrote
// its frame over the heap: about one run in eight stopped by SIGTERM aborted with "corrupted
// size vs. prev_size" (oneDNN issue 4845, fixed upstream in March 2026). Call it before the first parallel
// region, so that OpenMP's workers inherit the mask.
#pragma once

#include <string>

namespace trellis::train {

void install_stop_handlers();
// The signal received, or 0.
int stop_requested();
// "SIGTERM", "SIGUSR1", "SIGINT", or "signal N".
std::string signal_name(int signal);

}  // namespace trellis::train
