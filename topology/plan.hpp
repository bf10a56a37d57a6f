// A binding plan: for each local task of a step, its GPUs, HCA, CPUs, memory and the
// environment that tells frameworks about them. Plain data, rendered to JSON by plan_json
// and applied by the SPANK plugin and the agent.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "topology/cpu_set.hpp"
#include "topology/distance.hpp"
#include "topology/node.hpp"

namespace trellis::topology {

enum class Policy { closest, none };

std::string policy_name(Policy policy);
// Throws std::invalid_argument naming the accepted policies.
Policy parse_policy(const std::string& name);

// An HCA the user asked for by name, optionally with its port: "mlx5_0" or "mlx5_0:1".
struct HcaRequest {
    std::string name;
    int port = 0;  // 0: the first ACTIVE port
    // Throws std::invalid_argument for a malformed item.
    static HcaRequest parse(const std::string& item);
};

struct HcaSelection {
    std::vector<HcaRequest> only;      // explicit list (--trellis-hca=LIST); empty means auto
    std::vector<std::string> include;  // glob patterns of names; empty means all
    std::vector<std::string> exclude;
    bool require_active = true;
};

struct PlanRequest {
    int tasks = 1;
    Policy policy = Policy::closest;
    std::optional<CpuSet> allowed_cpus;           // default: the node's allowed CPUs
    std::optional<std::vector<int>> allowed_gpus; // GPU indices (PCI order); default: all
    HcaSelection hcas;
    bool smt = false;  // bind every hardware thread of a core, not only the first
};

struct HcaChoice {
    std::string name;
    int port = 1;
    std::string pci;
    Distance distance = Distance::sys;  // from the task's first GPU, or from its CPUs
    std::string netdev;
};

struct TaskBinding {
    int local_rank = 0;
    std::vector<Gpu> gpus;
    std::vector<HcaChoice> hcas;
    CpuSet cpus;
    std::vector<int> numa;
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
    std::vector<TaskBinding> tasks;
    std::vector<std::string> warnings;  // about the node or step as a whole
};

// Throws std::invalid_argument for requests that cannot be planned (no tasks, an empty
// allowed set, a GPU index the node does not have), naming the value.
Plan make_plan(const Node& node, const PlanRequest& request);

}  // namespace trellis::topology
