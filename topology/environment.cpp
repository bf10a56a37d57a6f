// SPDX-License-Identifier: Apache-2.0
#include "topology/environment.hpp"

#include <algorithm>

#include "common/environment.hpp"

namespace trellis::topology {
namespace {

template <typename T, typename F>
std::string join(const std::vector<T>& items, F&& format) {
    std::string out;
    for (const auto& item : items) out += (out.empty() ? "" : ",") + format(item);
    return out;
}

std::string device_port(const HcaChoice& hca) { return hca.name + ":" + std::to_string(hca.port); }

}  // namespace

std::map<std::string, std::string> render_environment(const TaskBinding& task, const Plan& plan) {
    std::map<std::string, std::string> env;
    std::vector<VisibleGpu> nvidia, amd;
    for (const auto& v : task.visible) (v.gpu.vendor == GpuVendor::nvidia ? nvidia : amd).push_back(v);
    auto device = [](const VisibleGpu& v) { return std::to_string(v.device); };
    if (!nvidia.empty()) {
        // The device numbers are in PCI order; CUDA numbers fastest-first unless told.
        env[env::cuda_device_order.name] = "PCI_BUS_ID";
        env[env::cuda_visible_devices.name] = join(nvidia, device);
    }
    if (!amd.empty()) env[env::rocr_visible_devices.name] = join(amd, device);
    if (!task.gpus.empty()) env[env::gpu.name] = join(task.gpus, [](const Gpu& g) { return std::to_string(g.index); });

    // Libraries that take a NIC per process get the task's own.
    if (!task.hcas.empty()) {
        std::string hcas = join(task.hcas, device_port);
        env[env::ucx_net_devices.name] = hcas;
        env[env::ompi_openib_if_include.name] = hcas;
        env[env::hca.name] = hcas;
        env[env::distance.name] = distance_name(task.distance);
    }
    // NCCL gets the node's set, the same on every rank, and only when something narrows it.
    if (plan.hcas_restricted && !plan.node_hcas.empty()) {
        env[env::nccl_ib_hca.name] = "=" + join(plan.node_hcas, device_port);  // '=': exact names, not prefixes
        std::vector<std::string> netdevs;
        for (const auto& hca : plan.node_hcas)
            if (!hca.netdev.empty() && std::find(netdevs.begin(), netdevs.end(), hca.netdev) == netdevs.end())
                netdevs.push_back(hca.netdev);
        if (!netdevs.empty())
            env[env::nccl_socket_ifname.name] = "=" + join(netdevs, [](const std::string& n) { return n; });
    }
    if (!task.numa.empty()) env[env::numa.name] = join(task.numa, [](int n) { return std::to_string(n); });
    if (!task.cpus.empty()) {
        env[env::cpus.name] = task.cpus.to_string();
        env[env::omp_num_threads.name] = std::to_string(task.cpus.size());
    }
    return env;
}

}  // namespace trellis::topology
