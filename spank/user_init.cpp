// SPDX-License-Identifier: Apache-2.0
// Once per node per step (slurmstepd, user_init): the step's plan on this node (the shared
// core, agent/binding/step_plan.hpp, with what Slurm gave the step) and its layout for the
// frameworks' variables. A failure here is the user's to see, so it is held and reported
// from task_init rather than lost in slurmd's log.
#include <cstdlib>
#include <stdexcept>

#include <slurm/slurm.h>

#include "agent/binding/step_plan.hpp"
#include "common/environment.hpp"
#include "common/error.hpp"
#include "common/host.hpp"
#include "spank/contexts.hpp"
#include "spank/state.hpp"
#include "slurm/gpu_binding.hpp"
#include "slurm/slurm_config.hpp"

namespace trellis::spank {
namespace {

uint32_t item(spank_t sp, spank_item_t which, const char* what) {
    uint32_t value = 0;
    if (spank_get_item(sp, which, &value) != ESPANK_SUCCESS)
        throw std::runtime_error(std::string("cannot get the step's ") + what + " from Slurm");
    return value;
}

// Where this step's ranks run and which port they meet at, for the frameworks' variables.
agent::StepLayout step_layout(spank_t sp, const agent::WireupChoice& wireup) {
    const Config& config = state().config;
    agent::StepLayout layout;
    layout.world_size = static_cast<int>(item(sp, S_JOB_TOTAL_TASK_COUNT, "task count"));
    layout.local_size = static_cast<int>(item(sp, S_JOB_LOCAL_TASK_COUNT, "local task count"));
    layout.node_rank = static_cast<int>(item(sp, S_JOB_NODEID, "node index"));
    layout.nnodes = static_cast<int>(item(sp, S_JOB_NNODES, "node count"));
    layout.port = step_port(item(sp, S_JOB_ID, "job id"), item(sp, S_JOB_STEPID, "step id"), config.wireup.port_first,
                            config.wireup.port_last);
    auto nodes = slurm::expand_hostlist(job_env(sp, "SLURM_STEP_NODELIST"));
    if (nodes.empty()) throw std::runtime_error("SLURM_STEP_NODELIST is empty");
    // Rank 0 runs on the first node under block and cyclic distributions (and plane).
    std::string distribution = job_env(sp, "SLURM_DISTRIBUTION");
    std::vector<int> ranks;
    try {
        ranks = agent::rank_nodes(job_env(sp, "SLURM_STEP_TASKS_PER_NODE"), distribution);
    } catch (const UsageError&) {
        // TF_CONFIG needs every rank's node; PyTorch only rank 0's, the first node under
        // every distribution but an arbitrary one.
        if (wireup.tf || distribution.rfind("arbitrary", 0) == 0) throw;
    }
    int master = ranks.empty() ? 0 : ranks.front();
    if (master < 0 || master >= static_cast<int>(nodes.size()))
        throw std::runtime_error("SLURM_STEP_TASKS_PER_NODE names more nodes than SLURM_STEP_NODELIST");
    if (wireup.tf) {
        auto addresses = slurm::node_addresses(slurm::slurm_conf_from_environment(), nodes);
        layout.master_addr = addresses[static_cast<size_t>(master)];
        layout.rank_addresses = agent::rank_addresses(addresses, ranks, layout.port);
    } else {
        layout.master_addr =
            slurm::node_address(slurm::slurm_conf_from_environment(), nodes[static_cast<size_t>(master)]);
    }
    return layout;
}

// Slurm's GPU binding of this step, in --gpu-bind's terms. Since 23.11 srun exports the
// binding it sent with the step, its implicit per-task binding included, as SLURM_TRES_BIND
// (24.11 src/srun/srun.c, _setup_one_job_env, through src/common/env.c set_env_from_opts);
// before, only srun's hand-on (option_callbacks.cpp) has it. The hand-on, where the step has
// no GPU part in SLURM_TRES_BIND: --ntasks-per-gpu's single:N is added later, in the launch.
std::string step_gpu_binding(spank_t sp) {
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0)
    if (std::string gpu = slurm::gpu_part_of_tres_bind(job_env(sp, "SLURM_TRES_BIND")); !gpu.empty()) return gpu;
#endif
    return job_env(sp, env::slurm_gpu_bind.name);
}

}  // namespace

int plan_node(spank_t sp) {
    PluginState& s = state();
    if (!s.held_error.empty()) return 0;
    try {
        // The batch script, the external container and salloc's interactive shell are not
        // tasks of a step to bind (Slurm leaves their devices alone too).
        uint32_t step = 0;
        if (spank_get_item(sp, S_JOB_STEPID, &step) == ESPANK_SUCCESS &&
            (step == SLURM_BATCH_SCRIPT || step == SLURM_EXTERN_CONT || step == SLURM_INTERACTIVE_STEP))
            return 0;
        uint32_t tasks = item(sp, S_JOB_LOCAL_TASK_COUNT, "local task count");
        if (tasks == 0) throw std::runtime_error("Slurm reports no local task for this step");
        s.local_tasks = tasks;
        // Set by srun when the user gave --cpu-bind, and for Slurm's GPU binding
        // (option_callbacks.cpp). Slurm's own per-task, map and mask GPU bindings are followed
        // exactly; the others (single, closest: Slurm's CPU placement decides; none) leave GPU
        // visibility to Slurm.
        s.user_cpu_bind = !job_env(sp, env::slurm_cpu_bind.name).empty();
        std::string gpu_bind = step_gpu_binding(sp);
        int per_task = slurm::per_task_gpus(gpu_bind);
        bool mapped = slurm::is_map_or_mask(gpu_bind);
        s.user_gpu_bind = !gpu_bind.empty() && per_task <= 0 && !mapped;

        agent::StepRequest request;
        request.node_name = node_name();
        request.tasks = static_cast<int>(tasks);
        request.policy = s.choices.policy;
        request.hcas = s.choices.hcas;
        request.share_gpus = s.choices.share_gpus;
        request.under_slurm = true;
        request.step_gpus = job_env(sp, "SLURM_STEP_GPUS");
        request.slurm_conf = slurm::slurm_conf_from_environment();
        request.slurm_gpus_per_task = per_task;
        request.slurm_task_sharing = !job_env(sp, env::slurm_gpu_sharing.name).empty();
        if (mapped) request.slurm_gpu_map = gpu_bind;
        request.slurm_visible_devices = job_env(sp, "CUDA_VISIBLE_DEVICES");
        request.in_container = !s.choices.image.empty();
        request.single_node = item(sp, S_JOB_NNODES, "node count") == 1;
        char* cores = nullptr;
        if (spank_get_item(sp, S_STEP_ALLOC_CORES, &cores) == ESPANK_SUCCESS && cores) request.slurm_step_cores = cores;
        topology::Plan plan = agent::plan_step(s.config, request);
        if (s.user_cpu_bind && plan.bind_cpus) {
            plan.bind_cpus = false;
            plan.warnings.push_back("srun --cpu-bind was given: Slurm's CPU binding is used instead");
        }
        if (s.user_gpu_bind)
            plan.warnings.push_back(
                "Slurm binds GPUs to tasks itself (" + gpu_bind +
                ", from --gpu-bind, --tres-bind or --ntasks-per-gpu): GPU visibility is left to Slurm");
        s.plan = std::move(plan);

        s.wireup =
            s.choices.wireup.value_or(s.config.wireup.frameworks ? agent::WireupChoice{} : agent::parse_wireup("none"));
        try {
            if (s.wireup.torch || s.wireup.tf) s.layout = step_layout(sp, s.wireup);
        } catch (const std::exception& e) {
            // Asked for by the user: the step fails; by default: the step runs without them.
            if (s.choices.wireup) throw;
            s.plan->warnings.push_back(std::string("no framework variables (MASTER_ADDR...): ") + e.what());
        }
    } catch (const std::exception& e) {
        s.held_error = std::string("cannot plan the binding: ") + e.what();
    }
    return 0;
}

}  // namespace trellis::spank
