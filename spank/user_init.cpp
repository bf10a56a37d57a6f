// Once per node per step (slurmstepd, user_init): find the topology, the step's tasks, GPUs
// and CPUs, and compute the plan. A failure here is the user's to see, so it is held and
// reported from task_init rather than lost in slurmd's log.
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

#include <slurm/slurm.h>

#include "spank/contexts.hpp"
#include "spank/node_topology.hpp"
#include "spank/state.hpp"
#include "topology/discovery.hpp"

namespace trellis::spank {
namespace {

// Slurm's GPU allocation for the step, when gres/gpu manages the node: indices in the
// node's GPU order.
std::optional<std::vector<int>> step_gpus(spank_t sp) {
    for (const char* name : {"SLURM_STEP_GPUS", "SLURM_JOB_GPUS"}) {
        std::string list = job_env(sp, name);
        if (list.empty()) continue;
        topology::CpuSet indices = topology::CpuSet::parse(list);  // same list syntax
        return std::vector<int>(indices.begin(), indices.end());
    }
    return std::nullopt;
}


}  // namespace

int plan_node(spank_t sp) {
    PluginState& s = state();
    if (!s.held_error.empty()) return 0;
    try {
        // The batch script and the external container are not tasks to bind.
        uint32_t step = 0;
        if (spank_get_item(sp, S_JOB_STEPID, &step) == ESPANK_SUCCESS &&
            (step == SLURM_BATCH_SCRIPT || step == SLURM_EXTERN_CONT))
            return 0;
        uint32_t tasks = 0;
        if (spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &tasks) != ESPANK_SUCCESS || tasks == 0)
            throw std::runtime_error("cannot get the step's local task count from Slurm");
        s.local_tasks = tasks;
        // Set by srun when the user gave --cpu-bind or --gpu-bind (option_callbacks.cpp).
        s.user_cpu_bind = !job_env(sp, "TRELLIS_SLURM_CPU_BIND").empty();
        s.user_gpu_bind = !job_env(sp, "TRELLIS_SLURM_GPU_BIND").empty();

        const BindingConfig& config = s.config.binding;
        topology::PlanRequest request;
        request.tasks = static_cast<int>(tasks);
        request.policy = s.choices.policy.value_or(config.policy);
        request.smt = config.smt;
        request.hcas.include = config.hca_include;
        request.hcas.exclude = config.hca_exclude;
        request.hcas.require_active = config.require_active;
        if (s.choices.hcas) request.hcas.only = *s.choices.hcas;
        request.allowed_gpus = step_gpus(sp);

        std::string name = node_name();
        topology::Node node = topology::load_node(topology_xml_for(config.topology_xml, name));
        node.host = name;
        topology::Plan plan = topology::make_plan(node, request);
        if (s.user_cpu_bind && plan.bind_cpus) {
            plan.bind_cpus = false;
            plan.warnings.push_back("srun --cpu-bind was given: Slurm's CPU binding is used instead");
        }
        if (s.user_gpu_bind)
            plan.warnings.push_back("srun --gpu-bind was given: GPU visibility is left to Slurm");
        s.plan = std::move(plan);
    } catch (const std::exception& e) {
        s.held_error = std::string("cannot plan the binding: ") + e.what();
    }
    return 0;
}

}  // namespace trellis::spank
