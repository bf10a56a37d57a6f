// SIGTERM (Slurm's preemption and time limit) and SIGUSR1 (srun/sbatch --signal) ask the
// trainer to save a checkpoint at the end of the current step and exit cleanly.
#pragma once

namespace trellis::train {

void install_stop_handlers();
// The signal received, or 0.
int stop_requested();

}  // namespace trellis::train
