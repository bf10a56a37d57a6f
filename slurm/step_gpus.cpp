// SPDX-License-Identifier: Apache-2.0
#include "slurm/step_gpus.hpp"

#include <algorithm>
#include <stdexcept>

#include "common/error.hpp"

namespace trellis::slurm {
namespace {

std::string gpu_list(const topology::Node& node) {
    std::string out;
    for (const auto& gpu : node.gpus)
        out += (out.empty() ? "" : ", ") + gpu.place.address.to_string() +
               (gpu.minor >= 0 ? " (minor " + std::to_string(gpu.minor) + ")" : "");
    return out.empty() ? "none" : out;
}

// The GPU behind a gres.conf device file.
int gpu_of_file(const topology::Node& node, const std::string& file, bool minors_known) {
    int minor = device_number_of(file);
    bool amd = file.find("/dri/") != std::string::npos;
    // Render nodes count from 128 (/dev/dri/renderD128), card nodes from 0.
    int amd_index = file.find("renderD") != std::string::npos ? minor - 128 : minor;
    for (const auto& gpu : node.gpus) {
        if (minors_known ? gpu.minor == minor
                         // Without the driver's table: the N-th GPU of the vendor in PCI order.
                         : (gpu.vendor == (amd ? topology::GpuVendor::amd : topology::GpuVendor::nvidia) &&
                            gpu.vendor_index == (amd ? amd_index : minor)))
            return gpu.index;
    }
    throw UsageError("gres.conf's GPU " + file + " is none of " + node.host + "'s GPUs (" + gpu_list(node) + ")");
}

}  // namespace

StepGpus map_step_gpus(const topology::Node& node, const GresGpus& gres, const std::vector<int>& gres_indices) {
    StepGpus step;
    bool minors_known =
        std::any_of(node.gpus.begin(), node.gpus.end(), [](const topology::Gpu& g) { return g.minor >= 0; });
    if (!minors_known && !gres.files.empty() && !gres_indices.empty())
        step.warnings.push_back(
            "the NVIDIA driver's table of device minors is not available: /dev/nvidiaN "
            "is taken to be the N-th GPU in PCI order");
    // Slurm's GPUs in its index order. AutoDetect sorts the GPUs it found (those of File=,
    // when given) by PCI bus id (gres_gpu.c sorts them by their links); otherwise gres.conf's
    // order stands.
    std::vector<int> order;
    for (const auto& file : gres.files) order.push_back(gpu_of_file(node, file, minors_known));
    if (gres.autodetect) {
        if (order.empty())
            for (const auto& gpu : node.gpus) order.push_back(gpu.index);
        std::sort(order.begin(), order.end());
    }
    for (int index : gres_indices) {
        if (index < 0 || index >= static_cast<int>(order.size()))
            throw UsageError("Slurm gave the step GPU " + std::to_string(index) + ", but gres.conf lists " +
                             std::to_string(order.size()) + " GPUs for " + node.host);
        int gpu = order[static_cast<size_t>(index)];
        if (std::find(step.indices.begin(), step.indices.end(), gpu) == step.indices.end()) step.indices.push_back(gpu);
    }
    step.in_gres_order = step.indices;
    std::sort(step.indices.begin(), step.indices.end());
    return step;
}

}  // namespace trellis::slurm
