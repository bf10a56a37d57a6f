// SPDX-License-Identifier: Apache-2.0
#include "agent/container/devices.hpp"

#include <filesystem>

namespace trellis::agent {

std::vector<std::string> device_files(const std::vector<int>& gpus, const std::vector<std::string>& hcas,
                                      const std::string& dev, const std::string& infiniband_sys) {
    namespace fs = std::filesystem;
    std::vector<std::string> candidates;
    if (!gpus.empty())
        for (const char* shared : {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset"})
            candidates.push_back(dev + "/" + shared);
    for (int gpu : gpus) candidates.push_back(dev + "/nvidia" + std::to_string(gpu));
    if (!hcas.empty()) candidates.push_back(dev + "/infiniband/rdma_cm");
    std::error_code error;
    for (const auto& hca : hcas)
        // /sys/class/infiniband/mlx5_0/device/infiniband_verbs/uverbs0
        for (const auto& entry :
             fs::directory_iterator(fs::path(infiniband_sys) / hca / "device" / "infiniband_verbs", error))
            candidates.push_back(dev + "/infiniband/" + entry.path().filename().string());
    std::vector<std::string> present;
    for (const auto& path : candidates)
        if (fs::exists(path, error)) present.push_back(path);
    return present;
}

std::vector<std::string> plan_device_files(const topology::Plan& plan) {
    std::vector<int> gpus;
    std::vector<std::string> hcas;
    for (const auto& task : plan.tasks) {
        for (const auto& v : task.visible) gpus.push_back(v.gpu.minor >= 0 ? v.gpu.minor : v.gpu.vendor_index);
        for (const auto& hca : task.hcas) hcas.push_back(hca.name);
    }
    return device_files(gpus, hcas);
}

std::vector<cdi::BindMount> container_device_nodes(const std::vector<std::string>& files, cdi::ResolvedEdits* edits) {
    std::vector<cdi::BindMount> nodes;
    for (const auto& file : files) {
        cdi::BindMount node;
        node.host_path = node.container_path = file;
        node.device = node.nosuid = node.noexec = true;
        node.origin = "the step's plan";
        nodes.push_back(node);
    }
    if (!edits) return nodes;
    for (auto& node : edits->device_nodes) {
        std::erase_if(nodes,
                      [&](const cdi::BindMount& planned) { return planned.container_path == node.container_path; });
        node.nosuid = true;
        nodes.push_back(std::move(node));
    }
    edits->device_nodes.clear();
    return nodes;
}

}  // namespace trellis::agent
