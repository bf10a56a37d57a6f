// SPDX-License-Identifier: Apache-2.0
#include "agent/binding/step_plan.hpp"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "agent/binding/node_paths.hpp"
#include "common/error.hpp"
#include "topology/discovery.hpp"
#include "topology/gpu_minors.hpp"
#include "slurm/gpu_binding.hpp"
#include "slurm/step_gpus.hpp"

namespace trellis::agent {
namespace {

// The numeric memory policies of <linux/mempolicy.h>.
constexpr int mpol_preferred = 1, mpol_bind = 2;

// Each task's GPUs under Slurm's map or mask binding (slurm/gpu_binding.hpp). The positions
// count the step's GPUs in Slurm's order where Slurm numbers devices within the step
// (constrained devices; allow-task-sharing, 24.11 src/interfaces/gres.c, _get_usable_gres,
// which consolidates the step's GPUs), else the node's gres indices, of which only the step's
// count. A task left without GPU gets the step's first, as Slurm does ("Binding to the first
// device in the allocation instead").
std::vector<std::vector<int>> map_or_mask_groups(const StepRequest& step, const slurm::StepGpus& gpus,
                                                 const std::vector<int>& gres_indices, bool constrained,
                                                 std::vector<std::string>& warnings) {
    std::vector<std::vector<int>> groups(static_cast<size_t>(step.tasks));
    if (gpus.in_gres_order.empty()) return groups;
    bool within_step = constrained || step.slurm_task_sharing;
    for (int t = 0; t < step.tasks; ++t) {
        auto& group = groups[static_cast<size_t>(t)];
        for (int position : slurm::map_or_mask_positions(step.slurm_gpu_map, t)) {
            size_t k = static_cast<size_t>(position);
            if (!within_step) {
                auto found = std::find(gres_indices.begin(), gres_indices.end(), position);
                k = found == gres_indices.end() ? gpus.in_gres_order.size()
                                                : static_cast<size_t>(found - gres_indices.begin());
            }
            if (k < gpus.in_gres_order.size()) group.push_back(gpus.in_gres_order[k]);
        }
        if (group.empty()) {
            group.push_back(gpus.in_gres_order.front());
            warnings.push_back("Slurm's GPU binding " + step.slurm_gpu_map + " names no GPU of the step for task " +
                               std::to_string(t) + ": Slurm gives it the step's first");
        }
    }
    return groups;
}

// Which GPUs the step may use and how its tasks number them, as Slurm decided. Returns false
// when they cannot be tied to the topology's GPUs: the plan then leaves GPUs to Slurm.
bool take_slurm_gpus(const topology::Node& node, const StepRequest& step, topology::PlanRequest& request,
                     std::vector<std::string>& warnings) {
    auto files = slurm::SlurmConfigFiles::beside(step.slurm_conf);
    auto gres = slurm::read_gres_gpus(files.gres_conf, step.node_name);
    if (!gres.configured) return true;  // Slurm does not manage this node's GPUs: all of them
    request.allowed_gpus = std::vector<int>{};
    slurm::StepGpus gpus;
    try {
        if (step.slurm_visible_devices.find("MIG-") != std::string::npos)
            throw UsageError("the step has MIG instances (" + step.slurm_visible_devices + ")");
        auto indices = topology::CpuSet::parse(step.step_gpus);  // the same list syntax
        gpus = slurm::map_step_gpus(node, gres, std::vector<int>(indices.begin(), indices.end()));
    } catch (const UsageError& e) {
        warnings.push_back(std::string("Slurm's GPUs are left as Slurm set them: ") + e.what());
        return false;
    }
    request.allowed_gpus = gpus.indices;
    warnings.insert(warnings.end(), gpus.warnings.begin(), gpus.warnings.end());
    bool constrained = slurm::devices_constrained(files) || step.in_container;
    if (constrained) request.gpu_numbering = topology::GpuNumbering::step;
    if (!step.slurm_gpu_map.empty()) {
        std::vector<int> gres_indices;
        for (int index : topology::CpuSet::parse(step.step_gpus)) gres_indices.push_back(index);
        request.task_gpus = map_or_mask_groups(step, gpus, gres_indices, constrained, warnings);
        if (constrained && !step.slurm_task_sharing) request.gpu_numbering = topology::GpuNumbering::task;
    } else if (int n = step.slurm_gpus_per_task; n > 0) {
        // Slurm's per_task binding (gres.c, _filter_gres_per_task): task t gets the GPUs at
        // positions t*n .. t*n+n-1 of the step's, in Slurm's order.
        std::vector<std::vector<int>> groups(static_cast<size_t>(step.tasks));
        for (size_t i = 0; i < gpus.in_gres_order.size(); ++i)
            if (i / static_cast<size_t>(n) < groups.size())
                groups[i / static_cast<size_t>(n)].push_back(gpus.in_gres_order[i]);
        request.task_gpus = groups;
        // Each task's device cgroup holds its own GPUs only (Slurm's task_cgroup_devices.c,
        // task_cgroup_devices_constrain, from the same per_task binding), so CUDA numbers them
        // from 0. Not with allow-task-sharing: every task's cgroup holds the step's GPUs and
        // Slurm numbers them within the step (24.11 src/interfaces/gres.c, _get_usable_gres:
        // use_local_index = false and the step's GPUs consolidated).
        bool own_cgroup = constrained && !step.slurm_task_sharing;
        if (own_cgroup) request.gpu_numbering = topology::GpuNumbering::task;
        if (request.share_gpus && own_cgroup) {
            request.share_gpus = false;
            warnings.push_back(
                "Slurm binds GPUs per task and confines each task to its own, so they cannot be shared "
                "(srun --gres-flags=allow-task-sharing lets every task open the step's)");
        }
    }
    return true;
}

// The CPUs of Slurm's cores: Slurm numbers a node's cores socket by socket, as hwloc's
// logical order does, and a core brings all its hardware threads.
void take_slurm_cores(const topology::Node& node, const std::string& cores, topology::PlanRequest& request,
                      std::vector<std::string>& warnings) {
    if (cores.empty() || !node.this_machine) return;
    topology::CpuSet cpus;
    for (int core : topology::CpuSet::parse(cores)) {
        if (core < 0 || core >= static_cast<int>(node.cores.size())) {
            warnings.push_back("Slurm allocated core " + std::to_string(core) + ", which " + node.host +
                               "'s topology does not have (" + std::to_string(node.cores.size()) +
                               " cores): the step's CPUs are the process's allowed CPUs");
            return;
        }
        for (int pu : node.cores[static_cast<size_t>(core)].pus) cpus.add(pu);
    }
    if (topology::CpuSet allowed = cpus & node.allowed_cpus; !allowed.empty())
        request.allowed_cpus = allowed;
    else
        warnings.push_back("Slurm's cores " + cores + " are none of this process's CPUs (" +
                           node.allowed_cpus.to_string() + "): the step's CPUs are the latter");
}

}  // namespace

topology::Plan plan_step(const config::Config& config, const StepRequest& step) {
    const config::BindingConfig& binding = config.binding;
    topology::PlanRequest request;
    request.tasks = step.tasks;
    request.policy = step.policy.value_or(binding.policy);
    request.smt = binding.smt;
    request.single_node = step.single_node;
    request.share_gpus = step.share_gpus.value_or(binding.share_gpus);
    request.hcas.include = binding.hca_include;
    request.hcas.exclude = binding.hca_exclude;
    request.hcas.require_active = binding.require_active;
    if (step.hcas) request.hcas.only = *step.hcas;

    topology::Node node = topology::load_node(path_for_node(binding.topology_xml, step.node_name));
    if (!step.node_name.empty()) node.host = step.node_name;
    topology::read_nvidia_minors(node, path_for_node(binding.nvidia_proc, step.node_name));
    std::vector<std::string> warnings;
    bool gpus_mapped = !step.under_slurm || take_slurm_gpus(node, step, request, warnings);
    if (step.in_container && request.gpu_numbering == topology::GpuNumbering::node)
        request.gpu_numbering = topology::GpuNumbering::step;
    take_slurm_cores(node, step.slurm_step_cores, request, warnings);
    topology::Plan plan = topology::make_plan(node, request);
    plan.gpus_left_to_slurm = !gpus_mapped;
    plan.warnings.insert(plan.warnings.end(), warnings.begin(), warnings.end());
    return plan;
}

std::map<std::string, std::string> exported_env(const topology::Plan& plan, const topology::TaskBinding& task,
                                                const config::BindingConfig& config, bool slurm_binds_gpus) {
    const bool gpu_visibility = !slurm_binds_gpus && !plan.gpus_left_to_slurm;
    std::map<std::string, std::string> env;
    for (const auto& [name, value] : task.env) {
        bool visibility =
            name == "CUDA_VISIBLE_DEVICES" || name == "ROCR_VISIBLE_DEVICES" || name == "CUDA_DEVICE_ORDER";
        if (visibility && !gpu_visibility) continue;
        // CUDA_DEVICE_ORDER travels with CUDA_VISIBLE_DEVICES: the numbers assume PCI order.
        std::string key = name == "CUDA_DEVICE_ORDER" ? "CUDA_VISIBLE_DEVICES" : name;
        if (name.starts_with("TRELLIS_") ||
            std::find(config.exported.begin(), config.exported.end(), key) != config.exported.end())
            env[name] = value;
    }
    return env;
}

void apply_cpu_affinity(const topology::CpuSet& cpus) {
    cpu_set_t mask;
    CPU_ZERO(&mask);
    for (int cpu : cpus)
        if (cpu < CPU_SETSIZE) CPU_SET(cpu, &mask);
    if (sched_setaffinity(0, sizeof mask, &mask) != 0)
        throw std::runtime_error("cannot bind to CPUs " + cpus.to_string() + ": " + std::strerror(errno));
}

void apply_memory_policy(config::MemoryPolicy policy, const std::vector<int>& numa) {
    if (policy == config::MemoryPolicy::none || numa.empty()) return;
    unsigned long mask[16] = {};
    constexpr int bits = 8 * sizeof(long);
    // MPOL_PREFERRED takes one node: the task's first (its GPU's).
    auto nodes = policy == config::MemoryPolicy::preferred ? std::vector<int>{numa.front()} : numa;
    for (int n : nodes)
        if (n >= 0 && n < static_cast<int>(sizeof mask * 8)) mask[n / bits] |= 1UL << (n % bits);
    int mode = policy == config::MemoryPolicy::bind ? mpol_bind : mpol_preferred;
    if (syscall(SYS_set_mempolicy, mode, mask, sizeof mask * 8 + 1) != 0)
        throw std::runtime_error("cannot " + std::string(policy == config::MemoryPolicy::bind ? "bind" : "prefer") +
                                 " memory on NUMA " + std::to_string(nodes.front()) + ": " + std::strerror(errno));
}

}  // namespace trellis::agent
