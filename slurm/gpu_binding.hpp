// SPDX-License-Identifier: Apache-2.0
// How Slurm binds a step's GPUs to its tasks, read the way srun reads its options and its
// environment. The rules moved between Slurm versions, so each takes the version of the Slurm
// that reads them (SLURM_VERSION_NUMBER of the Slurm the plugin was built for):
// - 22.05: --gpu-bind (SLURM_GPU_BIND); else --ntasks-per-gpu N binds single:N, else a plain
//   --gpus-per-task N binds per_task:N (a typed count binds nothing).
// - 23.11: --gpu-bind becomes --tres-bind=gres/gpu:... (SLURM_TRES_BIND), which sbatch and
//   salloc hand on instead of SLURM_GPU_BIND; every GPU count per task (--tres-per-task
//   gres/gpu, typed --gpus-per-task too) binds per_task:N; --ntasks-per-gpu single:N only
//   without them. 23.11.4 adds --gres-flags=allow-task-sharing.
// Each rule cites, where it is written, the Slurm source that defines it.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace trellis::slurm {

// A Slurm version as SLURM_VERSION_NUMBER writes it (slurm/slurm_version.h).
constexpr long slurm_version(int major, int minor, int micro) {
    return (static_cast<long>(major) << 16) | (minor << 8) | micro;
}

// srun's command line and environment.
struct SrunInput {
    std::vector<std::string> args;                // args[0] is srun itself
    std::function<std::string(const char*)> env;  // "" for unset

    // OPTION's value: its last use on the command line ("--opt V" or "--opt=V"), else
    // VARIABLE's, as srun lets the command line override its input variables; "" for neither.
    std::string given(const char* option, const char* variable) const;
};

// What srun asks of Slurm's GPU binding.
struct SrunGpuBinding {
    // In --gpu-bind's terms: per_task:N, single:N, map_gpu:L, map:L, mask_gpu:L, mask:L,
    // closest, none (any of them after "verbose,"); "" when Slurm binds no GPU per task.
    std::string bind;
    // --gres-flags=allow-task-sharing: each task may open all of the step's GPUs while its
    // environment is bound per task.
    bool task_sharing = false;
};

SrunGpuBinding srun_gpu_binding(const SrunInput& srun, long version);

// The gres/gpu binding of a --tres-bind value (SLURM_TRES_BIND) in --gpu-bind's terms:
// "gres/gpu:per_task:1+gres/nic:closest" gives "per_task:1"; "" when it binds no GPU.
std::string gpu_part_of_tres_bind(const std::string& tres_bind);

// N of a per_task:N binding ("verbose," allowed before it); 0 for any other binding.
int per_task_gpus(const std::string& gpu_bind);

// Whether the binding is a map or a mask (map_gpu:, map:, mask_gpu:, mask:), which names each
// task's GPUs whatever the CPUs it runs on.
bool is_map_or_mask(const std::string& gpu_bind);
// The GPUs a map or mask names for the task with local id TASK, as bit positions: a map's one
// value, a mask's set bits. The list repeats over the tasks and "V*N" stands for N tasks.
// Under constrained devices the positions count the step's GPUs in Slurm's order, otherwise
// the node's (gres indices). Empty for any other binding. Throws UsageError on a bad list.
std::vector<int> map_or_mask_positions(const std::string& gpu_bind, int task);

}  // namespace trellis::slurm
