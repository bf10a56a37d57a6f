// SIGTERM (Slurm's preemption and time limit), SIGUSR1 (srun/sbatch --signal) and SIGINT
// (Ctrl-C, scancel -s INT) ask the trainer to save a checkpoint at the end of the current step
// and exit cleanly. A second SIGINT is a user who will not wait for the save: the process
// exits 130 at once (as a shell reports a Ctrl-C), leaving the previous checkpoint, which a
// save never overwrites until it is whole, as it was.
#pragma once

#include <string>

namespace trellis::train {

void install_stop_handlers();
// The signal received, or 0.
int stop_requested();
// "SIGTERM", "SIGUSR1", "SIGINT", or "signal N".
std::string signal_name(int signal);

}  // namespace trellis::train
