// SPDX-License-Identifier: Apache-2.0
#include "agent/container/cdi/step_edits.hpp"

#include <algorithm>

#include "agent/container/cdi/spec_folders.hpp"

namespace trellis::agent::cdi {

std::vector<StepGpu> plan_step_gpus(const topology::Plan& plan) {
    std::vector<StepGpu> gpus;
    for (const auto& task : plan.tasks)
        for (const auto& visible : task.visible) {
            if (visible.gpu.vendor != topology::GpuVendor::nvidia) continue;
            int index = visible.gpu.vendor_index;
            if (std::none_of(gpus.begin(), gpus.end(), [&](const StepGpu& g) { return g.index == index; }))
                gpus.push_back({index, ""});
        }
    std::sort(gpus.begin(), gpus.end(), [](const StepGpu& a, const StepGpu& b) { return a.index < b.index; });
    return gpus;
}

StepCdi step_cdi_edits(const config::ContainerConfig& config, const std::vector<StepGpu>& gpus) {
    StepCdi out;
    if (gpus.empty()) return out;
    auto specs = load_specs(config.cdi_dirs);
    out.notes = specs.notes;
    auto devices = step_gpu_devices(specs, gpus);
    if (devices.empty()) {
        out.warning = no_driver_libraries_warning(config.cdi_dirs);
        return out;
    }
    out.edits = resolve_edits(specs, devices, config.allowed_cdi_hooks);
    out.notes.insert(out.notes.end(), out.edits->notes.begin(), out.edits->notes.end());
    return out;
}

}  // namespace trellis::agent::cdi
