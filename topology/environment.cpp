#include "topology/environment.hpp"

#include <algorithm>

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
        env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID";
        env["CUDA_VISIBLE_DEVICES"] = join(nvidia, device);
    }
    if (!amd.empty()) env["ROCR_VISIBLE_DEVICES"] = join(amd, device);
    if (!task.gpus.empty())
        env["TRELLIS_GPU"] = join(task.gpus, [](const Gpu& g) { return std::to_string(g.index); });

    // Libraries that take a NIC per process get the task's own.
    if (!task.hcas.empty()) {
        std::string hcas = join(task.hcas, device_port);
        env["UCX_NET_DEVICES"] = hcas;
        env["OMPI_MCA_btl_openib_if_include"] = hcas;
        env["TRELLIS_HCA"] = hcas;
        env["TRELLIS_DISTANCE"] = distance_name(task.distance);
    }
    // NCCL gets the node's set, the same on every rank, and only when something narrows it.
    if (plan.hcas_restricted && !plan.node_hcas.empty()) {
        env["NCCL_IB_HCA"] = "=" + join(plan.node_hcas, device_port);  // '=': exact names, not prefixes
        std::vector<std::string> netdevs;
        for (const auto& hca : plan.node_hcas)
            if (!hca.netdev.empty() && std::find(netdevs.begin(), netdevs.end(), hca.netdev) == netdevs.end())
                netdevs.push_back(hca.netdev);
        if (!netdevs.empty()) env["NCCL_SOCKET_IFNAME"] = "=" + join(netdevs, [](const std::string& n) { return n; });
    }
    if (!task.numa.empty())
        env["TRELLIS_NUMA"] = join(task.numa, [](int n) { return std::to_string(n); });
    if (!task.cpus.empty()) {
        env["TRELLIS_CPUS"] = task.cpus.to_string();
        env["OMP_NUM_THREADS"] = std::to_string(task.cpus.size());
    }
    return env;
}

}  // namespace trellis::topology
