// SPDX-License-Identifier: Apache-2.0
// make_plan: GPUs to tasks, then HCAs, then CPUs and memory, then the environment.
#include <algorithm>
#include <set>
#include <stdexcept>

#include "common/error.hpp"
#include "topology/assignment.hpp"
#include "topology/cpu_division.hpp"
#include "topology/environment.hpp"
#include "topology/hca_choice.hpp"
#include "topology/plan.hpp"

namespace trellis::topology {
namespace {

CpuSet allowed_cpus_for(const Node& node, const PlanRequest& request) {
    if (!request.allowed_cpus) {
        if (node.allowed_cpus.empty()) throw UsageError("no CPU of " + node.host + " is allowed to this process");
        return node.allowed_cpus;
    }
    CpuSet allowed = *request.allowed_cpus & node.cpus;
    if (allowed.empty())
        throw UsageError("allowed CPUs '" + request.allowed_cpus->to_string() + "' contain none of " + node.host +
                         "'s CPUs (" + node.cpus.to_string() + ")");
    return allowed;
}

std::vector<Gpu> allowed_gpus_for(const Node& node, const PlanRequest& request) {
    if (!request.allowed_gpus) return node.gpus;
    std::set<int> wanted;
    for (int index : *request.allowed_gpus) {
        if (index < 0 || index >= static_cast<int>(node.gpus.size()))
            throw UsageError("GPU " + std::to_string(index) + " is not on " + node.host + " (it has " +
                             std::to_string(node.gpus.size()) + " GPUs" +
                             (node.gpus.empty() ? "" : ": 0-" + std::to_string(node.gpus.size() - 1)) + ")");
        wanted.insert(index);
    }
    std::vector<Gpu> gpus;
    for (int index : wanted) gpus.push_back(node.gpus[index]);
    return gpus;
}

// CPU-only tasks are spread over the NUMA nodes that have allowed CPUs.
std::vector<CpuSet> numa_regions(const Node& node, const CpuSet& allowed, int tasks) {
    std::vector<CpuSet> numa_cpus;
    for (const auto& numa : node.numa_nodes)
        if (CpuSet usable = numa.cpus & allowed; !usable.empty()) numa_cpus.push_back(usable);
    if (numa_cpus.empty()) numa_cpus.push_back(allowed);
    std::vector<CpuSet> regions;
    for (const auto& group : assign_items(tasks, static_cast<int>(numa_cpus.size()))) {
        CpuSet region;
        for (int n : group) region = region | numa_cpus[n];
        regions.push_back(region);
    }
    return regions;
}

// How far a GPU is from the nearest of the task's HCAs, and which one that is.
std::pair<Distance, std::string> nearest_hca(const Node& node, const Gpu& gpu, const TaskBinding& task) {
    std::pair<Distance, std::string> best{Distance::sys, task.hcas.front().name};
    bool first = true;
    for (const auto& choice : task.hcas)
        for (const auto& hca : node.hcas)
            if (hca.name == choice.name) {
                Distance d = distance(gpu.place, hca.place);
                if (first || d < best.first) best = {d, hca.name}, first = false;
            }
    return best;
}

// The task's farthest GPU from its HCAs; a CPU-only task's HCA from its CPUs.
Distance farthest_gpu(const Node& node, const TaskBinding& task) {
    if (task.hcas.empty()) return Distance::sys;
    if (task.gpus.empty()) return task.hcas.front().distance;
    Distance worst = Distance::pix;
    for (const auto& gpu : task.gpus) worst = std::max(worst, nearest_hca(node, gpu, task).first);
    return worst;
}

// "GPU 5 to mlx5_0 is SYS": the farthest GPU and its nearest HCA.
std::string farthest_pair(const Node& node, const TaskBinding& task) {
    const Gpu* far = &task.gpus.front();
    for (const auto& gpu : task.gpus)
        if (nearest_hca(node, gpu, task).first > nearest_hca(node, *far, task).first) far = &gpu;
    auto [d, name] = nearest_hca(node, *far, task);
    return "GPU " + std::to_string(far->index) + " to " + name + " is " + distance_name(d);
}

// Groups of GPUs stay on one socket, so Slurm's 0,5,6,7 (one GPU on socket 0, three on
// socket 1) gives 2 tasks 1 and 3 where a DDP user expects 2 and 2: the job runs, with two
// GPUs idle, so it is said even without a verbose report.
void warn_uneven_gpus(Plan& plan) {
    std::set<size_t> sizes;
    for (const auto& task : plan.tasks) sizes.insert(task.gpus.size());
    if (sizes.empty() || *sizes.rbegin() - *sizes.begin() < 2) return;
    std::vector<size_t> ordered(sizes.begin(), sizes.end());
    std::string list;
    for (size_t k = 0; k < ordered.size(); ++k)
        list += (k == 0 ? "" : k + 1 == ordered.size() ? " and " : ", ") + std::to_string(ordered[k]);
    std::string warning = "tasks get " + list +
                          " GPUs: a task's GPUs stay on one socket, and the step's GPUs on each socket do not "
                          "divide evenly among its tasks (--gpus-per-task gives every task as many)";
    plan.warnings.push_back(warning);
    plan.urgent_warnings.push_back(warning);
}

// The socket (package os index) a GPU hangs off, -1 when the topology does not say.
int socket_of(const Node& node, const Gpu& gpu) {
    for (const auto& numa : node.numa_nodes)
        if (numa.os_index == gpu.place.first_numa()) return numa.package;
    return gpu.place.local_cpus.empty() ? -1 : node.package_of(*gpu.place.local_cpus.begin());
}

void add_task_warnings(const Node& node, TaskBinding& task) {
    std::set<int> packages, gpu_packages;
    for (int cpu : task.cpus) packages.insert(node.package_of(cpu));
    if (packages.size() > 1) task.warnings.push_back("CPUs span " + std::to_string(packages.size()) + " sockets");
    for (const auto& gpu : task.gpus) gpu_packages.insert(socket_of(node, gpu));
    if (gpu_packages.size() > 1)
        task.warnings.push_back("GPUs span " + std::to_string(gpu_packages.size()) +
                                " sockets: CPUs and memory follow GPU " + std::to_string(task.gpus.front().index));
    if (!task.gpus.empty() && !task.hcas.empty() && !task.gdr)
        task.warnings.push_back("GPUDirect RDMA not eligible: " + farthest_pair(node, task));
}

// The GPUs Slurm bound task t to (node indices), in PCI order.
std::vector<Gpu> slurm_bound_gpus(const Node& node, const std::vector<std::vector<int>>& task_gpus, int t) {
    std::vector<Gpu> gpus;
    if (t < static_cast<int>(task_gpus.size()))
        for (int index : task_gpus[static_cast<size_t>(t)])
            if (index >= 0 && index < static_cast<int>(node.gpus.size()))
                gpus.push_back(node.gpus[static_cast<size_t>(index)]);
    std::sort(gpus.begin(), gpus.end(), [](const Gpu& a, const Gpu& b) { return a.index < b.index; });
    return gpus;
}

// The GPUs each task is shown and the numbers it knows them by: the task's own first, then
// (share_gpus) the step's others, numbered among the node's GPUs of the vendor or, when
// Slurm constrains devices, among the step's.
void number_visible_gpus(const std::vector<Gpu>& step_gpus, const PlanRequest& request, TaskBinding& task) {
    auto device_of = [&](const Gpu& gpu) {
        if (request.gpu_numbering == GpuNumbering::node) return gpu.vendor_index;
        const auto& seen = request.gpu_numbering == GpuNumbering::task ? task.gpus : step_gpus;
        int position = 0;
        for (const auto& other : seen)
            if (other.vendor == gpu.vendor && other.index < gpu.index) ++position;
        return position;
    };
    for (const auto& gpu : task.gpus) task.visible.push_back({gpu, device_of(gpu)});
    if (!request.share_gpus) return;
    for (const auto& gpu : step_gpus)
        if (std::none_of(task.gpus.begin(), task.gpus.end(), [&](const Gpu& own) { return own.index == gpu.index; }))
            task.visible.push_back({gpu, device_of(gpu)});
}

}  // namespace

Plan make_plan(const Node& node, const PlanRequest& request) {
    if (request.tasks < 1) throw UsageError("number of tasks must be at least 1, not " + std::to_string(request.tasks));
    const CpuSet allowed = allowed_cpus_for(node, request);
    const std::vector<Gpu> gpus = allowed_gpus_for(node, request);
    const std::vector<HcaCandidate> hcas = usable_hcas(node, request.hcas);

    Plan plan;
    plan.host = node.host;
    plan.policy = request.policy;
    plan.gpu_numbering = request.gpu_numbering;
    plan.node_hcas = node_hcas(hcas);
    plan.hcas_restricted = !request.hcas.only.empty() || !request.hcas.include.empty() || !request.hcas.exclude.empty();
    plan.tasks.resize(static_cast<size_t>(request.tasks));

    std::vector<CpuSet> regions;
    if (gpus.empty()) {
        regions = numa_regions(node, allowed, request.tasks);
        for (int t = 0; t < request.tasks; ++t) plan.tasks[t].numa = node.numa_of(regions[t]);
    } else {
        // Groups stay within a socket where the task count allows.
        std::vector<int> sockets;
        for (const auto& gpu : gpus) sockets.push_back(socket_of(node, gpu));
        auto groups = assign_items_in_runs(request.tasks, sockets);
        for (int t = 0; t < request.tasks; ++t) {
            auto& task = plan.tasks[t];
            if (request.task_gpus)
                task.gpus = slurm_bound_gpus(node, *request.task_gpus, t);
            else
                for (int g : groups[t]) task.gpus.push_back(gpus[g]);
            if (task.gpus.empty()) {
                regions.push_back(allowed);
                continue;
            }
            const PciPlace& first = task.gpus.front().place;
            if (first.first_numa() >= 0) task.numa = {first.first_numa()};
            CpuSet local = first.local_cpus & allowed;
            if (local.empty())
                task.warnings.push_back("no allowed CPU local to GPU " + std::to_string(task.gpus.front().index) +
                                        "; bound to other allowed CPUs");
            regions.push_back(local.empty() ? allowed : local);
        }
        if (request.tasks > static_cast<int>(gpus.size()))
            plan.warnings.push_back(std::to_string(request.tasks) + " tasks for " + std::to_string(gpus.size()) +
                                    " GPUs: tasks share GPUs");
        if (!request.task_gpus) warn_uneven_gpus(plan);
    }
    for (int t = 0; t < request.tasks; ++t) plan.tasks[t].local_rank = t;

    choose_hcas(node, hcas, plan.tasks);
    if (hcas.empty() && !request.single_node)
        plan.warnings.push_back(node.hcas.empty()
                                    ? "no HCA on " + node.host + ": inter-node traffic uses TCP"
                                    : "no usable ACTIVE HCA on " + node.host + " (" + std::to_string(node.hcas.size()) +
                                          " HCAs): inter-node traffic uses TCP");

    divide_cpus(node, allowed, regions, request.smt, plan.tasks);
    for (auto& task : plan.tasks) {
        if (task.numa.empty()) task.numa = node.numa_of(task.cpus);
        task.distance = farthest_gpu(node, task);
        // GPUDirect RDMA only when every GPU of the task has an eligible HCA.
        task.gdr = !task.gpus.empty() && !task.hcas.empty() && gdr_eligible(task.distance);
        number_visible_gpus(gpus, request, task);
        if (request.policy == Policy::closest) {
            add_task_warnings(node, task);
            task.env = render_environment(task, plan);
        }
    }

    if (request.policy == Policy::none) {
        plan.bind_cpus = false;
        plan.warnings.push_back("policy none: nothing is bound; the plan shows what closest would do");
    } else if (!node.this_machine) {
        plan.bind_cpus = false;
        plan.warnings.push_back("topology " + node.source +
                                " describes another machine: CPUs and memory are left unbound");
    }
    return plan;
}

std::string gpu_numbering_name(GpuNumbering numbering) {
    return numbering == GpuNumbering::node ? "node" : numbering == GpuNumbering::step ? "step" : "task";
}

std::string policy_name(Policy policy) { return policy == Policy::closest ? "closest" : "none"; }

Policy parse_policy(const std::string& name) {
    if (name == "closest") return Policy::closest;
    if (name == "none") return Policy::none;
    throw UsageError("unknown binding policy '" + name + "' (accepted: closest, none)");
}

HcaRequest HcaRequest::parse(const std::string& item) {
    HcaRequest request;
    size_t colon = item.find(':');
    request.name = item.substr(0, colon);
    bool bad_name = request.name.empty() || request.name.find_first_of(" \t,=*?[") != std::string::npos;
    if (!bad_name && colon != std::string::npos) {
        std::string port = item.substr(colon + 1);
        bool digits = !port.empty() && port.size() <= 3 && std::all_of(port.begin(), port.end(), ::isdigit);
        request.port = digits ? std::stoi(port) : 0;
        bad_name = request.port < 1;
    }
    if (bad_name) throw UsageError("bad HCA '" + item + "' (accepted: NAME or NAME:PORT, e.g. mlx5_0:1)");
    return request;
}

}  // namespace trellis::topology
