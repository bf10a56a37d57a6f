// SPDX-License-Identifier: Apache-2.0
// A step's binding on this node, computed one way for the plugin (once per node per step, in
// slurmstepd) and for trellis-agent launch: the configuration, the user's choices, the node's
// topology and what Slurm gave the step. Applying it (CPU affinity, memory policy) is here
// too, so that neither front end has its own copy.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "common/error.hpp"
#include "topology/plan.hpp"

namespace trellis::agent {

struct StepRequest {
    std::string node_name;  // Slurm's name for this node (the host name outside Slurm)
    int tasks = 1;
    // The user's choices; unset: the configuration's.
    std::optional<topology::Policy> policy;
    std::optional<std::vector<topology::HcaRequest>> hcas;
    std::optional<bool> share_gpus;
    // Under Slurm: the step's SLURM_STEP_GPUS ("" when it has no GPU here) and the path of
    // slurm.conf that slurmd exported as SLURM_CONF ("" for Slurm's default).
    bool under_slurm = false;
    std::string step_gpus, slurm_conf;
    std::string slurm_visible_devices;  // the CUDA_VISIBLE_DEVICES Slurm set ("MIG-..." for MIG)
    // The tasks run in a container, which holds only the step's device files: they are
    // numbered within the step whatever Slurm's cgroups do.
    bool in_container = false;
    // Slurm binds GPUs to tasks itself (per_task:N, slurm/gpu_binding.hpp): each task gets
    // the step's GPUs N at a time, in Slurm's order, and under constrained devices sees only
    // those. 0: Slurm does not.
    int slurm_gpus_per_task = 0;
    // srun --gres-flags=allow-task-sharing (Slurm 23.11.4): the tasks' environment is bound
    // per task, but each task may open all of the step's GPUs, so they keep the step's numbers.
    bool slurm_task_sharing = false;
    // Slurm binds GPUs to tasks by a map or mask (map_gpu:1,0, mask:0x3...,
    // slurm/gpu_binding.hpp): each task gets the GPUs it names. "": none.
    std::string slurm_gpu_map;
    // The cores Slurm allocated the step on this node (spank's S_STEP_ALLOC_CORES, Slurm's
    // core numbers: "0-3,8"); empty: none known. The plan's CPUs stay within them whatever
    // the task plugin: without cpuset cgroups hwloc sees the whole node.
    std::string slurm_step_cores;
    // The step (or launch) has this node alone.
    bool single_node = false;
};

// Throws UsageError or topology::TopologyError naming what could not be planned.
topology::Plan plan_step(const config::Config& config, const StepRequest& request);

// The plan's variables that the configuration exports, and every TRELLIS_* one. GPU
// visibility is left out when the plan leaves it to Slurm, or when slurm_binds_gpus (the
// user's --gpu-bind decides it).
std::map<std::string, std::string> exported_env(const topology::Plan& plan, const topology::TaskBinding& task,
                                                const config::BindingConfig& config, bool slurm_binds_gpus = false);

// This process's CPU affinity. Throws std::runtime_error naming the CPUs and the reason.
void apply_cpu_affinity(const topology::CpuSet& cpus);
// This process's memory policy over the NUMA nodes. Throws std::runtime_error likewise.
void apply_memory_policy(config::MemoryPolicy policy, const std::vector<int>& numa);

}  // namespace trellis::agent
