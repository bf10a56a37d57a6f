#include "topology/environment.hpp"

namespace trellis::topology {
namespace {

template <typename T, typename F>
std::string join(const std::vector<T>& items, F&& format) {
    std::string out;
    for (const auto& item : items) out += (out.empty() ? "" : ",") + format(item);
    return out;
}

}  // namespace

std::map<std::string, std::string> render_environment(const TaskBinding& task) {
    std::map<std::string, std::string> env;
    std::vector<Gpu> nvidia, amd;
    for (const auto& gpu : task.gpus) (gpu.vendor == GpuVendor::nvidia ? nvidia : amd).push_back(gpu);
    auto vendor_index = [](const Gpu& g) { return std::to_string(g.vendor_index); };
    if (!nvidia.empty()) {
        // The device numbers above are in PCI order; CUDA numbers fastest-first unless told.
        env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID";
        env["CUDA_VISIBLE_DEVICES"] = join(nvidia, vendor_index);
    }
    if (!amd.empty()) env["ROCR_VISIBLE_DEVICES"] = join(amd, vendor_index);
    if (!task.gpus.empty())
        env["TRELLIS_GPU"] = join(task.gpus, [](const Gpu& g) { return std::to_string(g.index); });

    if (!task.hcas.empty()) {
        auto device_port = [](const HcaChoice& h) { return h.name + ":" + std::to_string(h.port); };
        std::string hcas = join(task.hcas, device_port);
        env["NCCL_IB_HCA"] = "=" + hcas;  // '=': exact names, not prefixes
        env["UCX_NET_DEVICES"] = hcas;
        env["OMPI_MCA_btl_openib_if_include"] = hcas;
        env["TRELLIS_HCA"] = hcas;
        env["TRELLIS_DISTANCE"] = distance_name(task.hcas.front().distance);
        if (!task.hcas.front().netdev.empty())
            env["NCCL_SOCKET_IFNAME"] = task.hcas.front().netdev;
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
