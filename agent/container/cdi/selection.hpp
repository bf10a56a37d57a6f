// SPDX-License-Identifier: Apache-2.0
// Which CDI devices a step's container gets, and what they add up to. On a node, the step's
// container gets the device of each of the step's GPUs there, named as `nvidia-ctk cdi
// generate` names them: by index (nvidia.com/gpu=0, NVML's index, which is the node's NVIDIA
// GPUs in PCI bus order: topology::Gpu::vendor_index) or by UUID (nvidia.com/gpu=GPU-...),
// plus the common edits of each spec one of whose devices is selected.
#pragma once

#include <string>
#include <vector>

#include "agent/container/cdi/resolved_edits.hpp"
#include "agent/container/cdi/spec_folders.hpp"

namespace trellis::agent::cdi {

inline constexpr const char* nvidia_gpu_kind = "nvidia.com/gpu";

struct StepGpu {
    int index = 0;     // the GPU's index among the node's NVIDIA GPUs in PCI order (NVML's, CUDA's with PCI_BUS_ID)
    std::string uuid;  // "GPU-8e4f...", when known; "" otherwise
};

// The qualified device names ("nvidia.com/gpu=0") of the step's GPUs. Empty when no spec of
// `kind` is installed (then the caller warns with no_driver_libraries_warning()). Throws
// UsageError naming the GPU and the devices the specs have when one GPU has no device.
std::vector<std::string> step_gpu_devices(const SpecSet& specs, const std::vector<StepGpu>& gpus,
                                          const std::string& kind = nvidia_gpu_kind);

// The merged edits of the named devices ("vendor.com/class=name"). Throws UsageError for an
// unknown kind or device (naming what the specs offer), Refused for what a user-namespace
// container cannot do (a mount that is not a bind, a hook unknown to trellis and not in
// allowed_hooks, intelRdt, netDevices). Device nodes are checked against the host when they
// are bound (check_host_device_node, apply.hpp).
ResolvedEdits resolve_edits(const SpecSet& specs, const std::vector<std::string>& devices,
                            const std::vector<std::string>& allowed_hooks);

// The one line a GPU step in a container prints when no CDI spec gives its GPUs' drivers.
std::string no_driver_libraries_warning(const std::vector<std::string>& cdi_dirs);

}  // namespace trellis::agent::cdi
