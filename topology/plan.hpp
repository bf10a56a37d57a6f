// SPDX-License-Identifier: Apache-2.0
// A binding plan: for each local task of a step, its GPUs, HCA, CPUs, memory and the
// environment that tells frameworks about them. Plain data, rendered to JSON by plan_json
// and applied by the SPANK plugin and the agent.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "topology/cpu_set.hpp"
#include "topology/distance.hpp"
#include "topology/node.hpp"

namespace trellis::topology {

enum class Policy { closest, none };

std::string policy_name(Policy policy);
// Throws UsageError naming the accepted policies.
Policy parse_policy(const std::string& name);

// An HCA the user asked for by name, optionally with its port: "mlx5_0" or "mlx5_0:1".
struct HcaRequest {
    std::string name;
    int port = 0;  // 0: the first ACTIVE port
    // Throws UsageError for a malformed item.
    static HcaRequest parse(const std::string& item);
};

struct HcaSelection {
    std::vector<HcaRequest> only;      // explicit list (--trellis-hca=LIST); empty means auto
    std::vector<std::string> include;  // glob patterns of names; empty means all
    std::vector<std::string> exclude;
    bool require_active = true;
};

// How a task's CUDA or ROCm numbers the GPUs it can see. Slurm decides it, and trellis follows
// (gres_use_local_device_index in Slurm's gres.c): when task/cgroup constrains devices, a task
// sees only the step's GPUs and its runtime numbers them from 0 (step), or only its own when
// Slurm binds GPUs per task (task); otherwise it sees every GPU of the node (node). Either
// way the numbers are in PCI order, which trellis asks for with CUDA_DEVICE_ORDER=PCI_BUS_ID.
enum class GpuNumbering { node, step, task };
std::string gpu_numbering_name(GpuNumbering numbering);

struct PlanRequest {
    int tasks = 1;
    Policy policy = Policy::closest;
    std::optional<CpuSet> allowed_cpus;            // default: the node's allowed CPUs
    std::optional<std::vector<int>> allowed_gpus;  // GPU indices (PCI order); default: all
    // Each task's GPUs when Slurm binds them per task (--gpus-per-task); default: the planner's.
    std::optional<std::vector<std::vector<int>>> task_gpus;
    HcaSelection hcas;
    bool smt = false;  // bind every hardware thread of a core, not only the first
    GpuNumbering gpu_numbering = GpuNumbering::node;
    // Every task sees all of the step's GPUs on the node, its own first (CUDA IPC and NVLink
    // peer access between tasks, as Slurm's --gres-flags=allow-task-sharing).
    bool share_gpus = false;
    // The tasks run on this node alone: nothing they send crosses the network, so a node
    // without a usable HCA is no warning (trellis-topo, which cannot know, warns).
    bool single_node = false;
};

struct HcaChoice {
    std::string name;
    int port = 1;
    std::string pci;
    Distance distance = Distance::sys;  // from the task's first GPU, or from its CPUs
    std::string netdev;
};

// A GPU as a task is told of it: `device` is its number in CUDA_VISIBLE_DEVICES or
// ROCR_VISIBLE_DEVICES (inside the task, CUDA calls it by its place in that list).
struct VisibleGpu {
    Gpu gpu;
    int device = 0;
};

struct TaskBinding {
    int local_rank = 0;
    std::vector<Gpu> gpus;
    std::vector<VisibleGpu> visible;  // its own GPUs first, then (share_gpus) the step's others
    std::vector<HcaChoice> hcas;
    CpuSet cpus;
    std::vector<int> numa;
    // The farthest of the task's GPUs from its nearest HCA (for a CPU-only task, its HCA from
    // its CPUs): what GPUDirect RDMA depends on.
    Distance distance = Distance::sys;
    bool gdr = false;
    std::map<std::string, std::string> env;
    std::vector<std::string> warnings;
};

struct Plan {
    std::string host;
    Policy policy = Policy::closest;
    // Whether CPU affinity and memory policy may be applied: not for policy none, and not
    // when the topology describes another machine.
    bool bind_cpus = true;
    GpuNumbering gpu_numbering = GpuNumbering::node;
    // The node's usable HCAs, the same for every task: what NCCL is given. NCCL pairs GPUs
    // with NICs itself and builds rings across rails; per-rank or single-NIC lists break it
    // (NVIDIA/nccl#1478, #1591). Only exported when something restricts the choice
    // (hcas_restricted: --trellis-hca, hca_include, hca_exclude); otherwise NCCL sees all.
    std::vector<HcaChoice> node_hcas;
    bool hcas_restricted = false;
    // Slurm's GPUs could not be tied to the topology's (MIG instances, a device file the
    // topology lacks): the plan has no GPUs and GPU visibility stays Slurm's, with a warning.
    bool gpus_left_to_slurm = false;
    std::vector<TaskBinding> tasks;
    std::vector<std::string> warnings;  // about the node or step as a whole
    // Of those, the ones shown even without a verbose report: the job runs, but most likely
    // not as its user meant (tasks given unequal numbers of GPUs).
    std::vector<std::string> urgent_warnings;
};

// Throws UsageError for requests that cannot be planned (no tasks, an empty
// allowed set, a GPU index the node does not have), naming the value.
Plan make_plan(const Node& node, const PlanRequest& request);

}  // namespace trellis::topology
