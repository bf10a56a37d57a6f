// SPDX-License-Identifier: Apache-2.0
// The step's secret (common/step_secret.hpp), made by srun for every step it launches and
// given to the step's tasks, which alone (and root) can read it from their environment. srun
// passes only SLURM_* variables when the user's are not exported (--export=NONE, or an sbatch
// with --export=NONE), so the secret travels in the launch request as SLURM_TRELLIS_SECRET,
// which slurmstepd takes out and gives to the tasks as TRELLIS_SECRET. sbatch and salloc make
// none: their shell would hand one secret to every step.
#include <cstdlib>

#include "common/environment.hpp"
#include "common/step_secret.hpp"
#include "spank/contexts.hpp"
#include "spank/state.hpp"

namespace trellis::spank {

void make_secret_for_step() { ::setenv(env::slurm_secret.name, make_step_secret().c_str(), 1); }

void give_secret_to_tasks(spank_t sp) {
    std::string secret = job_env(sp, env::slurm_secret.name);
    spank_unsetenv(sp, env::slurm_secret.name);
    // Without one from srun (a batch step, an srun without trellis), a TRELLIS_SECRET that the
    // step inherited is another step's: its tasks must not share it.
    if (secret.empty())
        spank_unsetenv(sp, env::secret.name);
    else if (spank_setenv(sp, env::secret.name, secret.c_str(), 1) != ESPANK_SUCCESS)
        log_error("cannot give the tasks the step's secret (TRELLIS_SECRET)");
}

}  // namespace trellis::spank
